// Baseline kernels: compiled with the project's baseline flags (x86-64-v3 by default).
#define CHRONO_KNS v3
#include "kernels_impl.hpp"
namespace chrono {
extern const Kernels kKernelsV3 = {"x86-64-v3", v3::dot, v3::dot_many, v3::dot_i8, v3::dot_many_i8, v3::dot_i8_some, v3::l2sq, v3::decay_batch, v3::score, v3::bound_rows, v3::dot_qt_i8, nullptr};
}

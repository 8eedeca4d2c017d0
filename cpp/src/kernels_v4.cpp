// AVX-512 kernels (x86-64-v4), used only when the CPU reports AVX-512F/BW/DQ/VL.
#define CHRONO_KNS v4
#include "kernels_impl.hpp"
namespace chrono {
extern const Kernels kKernelsV4 = {"x86-64-v4", v4::dot, v4::dot_many, v4::dot_i8, v4::dot_many_i8, v4::dot_i8_some, v4::l2sq, v4::decay_batch, v4::score, v4::bound_rows, v4::dot_qt_i8};
}

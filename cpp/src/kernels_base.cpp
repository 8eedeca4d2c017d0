// Baseline kernels: compiled with the project's baseline flags (x86-64-v3 by default).
#define CHRONO_KNS v3
#include "kernels_impl.hpp"
namespace chrono {
extern const Kernels kKernelsV3 = v3::make_kernels("x86-64-v3");
}

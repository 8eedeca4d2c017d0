// AVX2 + FMA kernels (x86-64-v3), compiled with -march=x86-64-v3 where the baseline is
// older (CMakeLists.txt) and used only when the CPU reports the whole v3 level (dispatch.cpp).
// Nothing here runs before that choice: the module's other code is baseline code.
#define CHRONO_KNS v3
#include "kernels_impl.hpp"
namespace chrono {
extern const Kernels kKernelsV3 = v3::make_kernels("x86-64-v3");
}

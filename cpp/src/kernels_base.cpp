// Baseline kernels: compiled with the project's baseline flags (CHRONO_ARCH: x86-64-v2 by
// default on x86-64), named after that baseline. The v3 (AVX2 + FMA) and v4 (AVX-512)
// variants are compiled from the same source with their own -march in files of their own
// (kernels_v3.cpp, kernels_v4.cpp) and chosen at run time (dispatch.cpp).
#define CHRONO_KNS base
#include "kernels_impl.hpp"
namespace chrono {
extern const Kernels kKernelsBase = base::make_kernels(CHRONO_BASELINE);
}

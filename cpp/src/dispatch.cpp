// Run-time choice among the kernel variants compiled into this build: the baseline's
// (kernels_base.cpp, CHRONO_ARCH), then, on x86-64, AVX2 + FMA (x86-64-v3) where the
// baseline is older and the CPU has them, AVX-512 (x86-64-v4) and AVX-512 VNNI. This file
// is baseline code: it only asks the CPU (cpuid), never runs a wider instruction.
#include "chrono/kernels.hpp"
#include <cstdlib>
#include <cstring>

namespace chrono {
extern const Kernels kKernelsBase;
#ifdef CHRONO_HAVE_V3
extern const Kernels kKernelsV3;
#endif
#ifdef CHRONO_HAVE_V4
extern const Kernels kKernelsV4;
extern const Kernels kKernelsV4Vnni;
#endif

#if defined(__x86_64__) || defined(_M_X64)
// The x86-64-v3 level: AVX, AVX2, BMI1, BMI2, F16C, FMA, LZCNT, MOVBE (and OS support for
// the ymm state, which __builtin_cpu_supports("avx") includes). GCC 12 names the level.
[[maybe_unused]] static bool cpu_has_v3() {
  __builtin_cpu_init();
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
  return __builtin_cpu_supports("x86-64-v3");
#else
  return __builtin_cpu_supports("avx") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
         __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2");
#endif
}

[[maybe_unused]] static bool cpu_has_v4() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

[[maybe_unused]] static bool cpu_has_vnni() { return cpu_has_v4() && __builtin_cpu_supports("avx512vnni"); }
#endif

int kernel_variants(const Kernels** out, int max) {
  int n = 0;
  if (n < max) out[n++] = &kKernelsBase;
#ifdef CHRONO_HAVE_V3
  if (n < max && cpu_has_v3()) out[n++] = &kKernelsV3;
#endif
#ifdef CHRONO_HAVE_V4
  if (n < max && cpu_has_v4()) out[n++] = &kKernelsV4;
  if (n < max && cpu_has_vnni()) out[n++] = &kKernelsV4Vnni;
#endif
  return n;
}

const Kernels& kernels() {
  static const Kernels* chosen = [] {
    const Kernels* v[4];
    int n = kernel_variants(v, 4);
    // CHRONO_SIMD=<a variant's name> pins it (e.g. the baseline, x86-64-v2: for comparisons,
    // bug hunts and the pinned-baseline test run); an unknown or unavailable name is ignored
    const char* want = std::getenv("CHRONO_SIMD");
    if (want) for (int i = 0; i < n; ++i) if (std::strcmp(v[i]->name, want) == 0) return v[i];
    return v[n - 1];
  }();
  return *chosen;
}

}  // namespace chrono

// Run-time choice among the kernel variants compiled into this build.
#include "chrono/kernels.hpp"
#include <cstdlib>
#include <cstring>

namespace chrono {
extern const Kernels kKernelsV3;
#ifdef CHRONO_HAVE_V4
extern const Kernels kKernelsV4;
extern const Kernels kKernelsV4Vnni;
#endif

static bool cpu_has_v4() {
#if defined(CHRONO_HAVE_V4) && (defined(__x86_64__) || defined(_M_X64))
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
#else
  return false;
#endif
}

static bool cpu_has_vnni() {
#if defined(CHRONO_HAVE_V4) && (defined(__x86_64__) || defined(_M_X64))
  return cpu_has_v4() && __builtin_cpu_supports("avx512vnni");
#else
  return false;
#endif
}

int kernel_variants(const Kernels** out, int max) {
  int n = 0;
  if (n < max) out[n++] = &kKernelsV3;
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
    // CHRONO_SIMD=x86-64-v3 pins the baseline (for comparisons and bug hunts).
    const char* want = std::getenv("CHRONO_SIMD");
    if (want) for (int i = 0; i < n; ++i) if (std::strcmp(v[i]->name, want) == 0) return v[i];
    return v[n - 1];
  }();
  return *chosen;
}

}  // namespace chrono

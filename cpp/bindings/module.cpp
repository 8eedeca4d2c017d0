// chrono_engine._core: the private compiled module. Each part is registered from its own
// register_*.cpp (register.hpp); every binding is thin: it converts types, releases the
// GIL and maps errors. The core lives in include/chrono and includes no pybind11.
//
// Errors: standard exceptions, mapped by pybind11 to the built-in a caller catches
// (std::invalid_argument, std::length_error: ValueError; std::out_of_range: IndexError;
// any other std::exception: RuntimeError).
#include <pybind11/pybind11.h>
#include <string>
#include <thread>
#include "chrono/ann_index.hpp"  // hnswlib's headers, whose SIMD level (USE_AVX ...) build_info reports
#include "chrono/kernels.hpp"
#include "register.hpp"

namespace {

// What was built and what runs: the compiler, flags, baseline instruction set, the kernel
// variant chosen at run time and those available, hnswlib's version and SIMD level.
py::dict build_info() {
  py::dict d;
#if defined(__clang__)
  d["compiler"] = std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  d["compiler"] = std::string("gcc ") + __VERSION__;
#else
  d["compiler"] = "unknown";
#endif
  d["flags"] = CHRONO_BUILD_FLAGS;
  d["baseline"] = CHRONO_BASELINE;
  d["simd"] = chrono::kernels().name;
  const chrono::Kernels* v[4];
  const int n = chrono::kernel_variants(v, 4);
  py::list names;
  for (int i = 0; i < n; ++i) names.append(v[i]->name);
  d["simd_available"] = names;
  d["hnswlib_version"] = CHRONO_HNSWLIB_VERSION;
  d["hnswlib_simd"] =
#if defined(USE_AVX512)
      "avx512";
#elif defined(USE_AVX)
      "avx";
#elif defined(USE_SSE)
      "sse";
#else
      "none";
#endif
  d["hardware_threads"] = std::thread::hardware_concurrency();
  return d;
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "chrono_engine's private compiled core (do not import directly)";
  m.def("build_info", &build_info);
  register_kernels(m);
  register_query_vectors(m);
  // the types Store's methods take are registered before it (their names in its signatures)
  register_names(m);
  register_strings(m);
  register_filter(m);
  register_search_params(m);
  register_store(m);
  register_score(m);
  register_ppr(m);
  register_arrow(m);
  register_testing(m);
}

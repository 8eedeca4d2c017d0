// chrono_engine._core: module definition, build information and the stateless kernels.
// Thin: converts types, releases the GIL, maps errors. The core lives in include/chrono.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <algorithm>
#include <cmath>
#include <limits>
#include <cstring>
#include <thread>
#include <vector>
#include "chrono/ann_index.hpp"
#include "chrono/kernels.hpp"
#include "common.hpp"
#include "string_columns.hpp"

namespace py = pybind11;
using namespace chrono;

void register_search_params(py::module_& m);
void bind_store(py::module_& m);
void bind_ppr(py::module_& m);
void bind_arrow(py::module_& m);

namespace {

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
  d["simd"] = kernels().name;
  const Kernels* v[4];
  int n = kernel_variants(v, 4);
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

py::array_t<double> decay_eval(py::array_t<double, py::array::c_style | py::array::forcecast> ages,
                               py::array_t<double, py::array::c_style | py::array::forcecast> spec,
                               const std::string& which) {
  if (spec.size() != 5) throw std::invalid_argument("spec must have 5 numbers");
  const double* sp = spec.data();
  DecaySpec s = make_spec(sp[0], sp[1], sp[2], sp[3], sp[4]);
  const Kernels& k = variant(which);
  py::array_t<double> out(ages.request().shape);
  const double* a = ages.data();
  double* o = out.mutable_data();
  std::size_t n = static_cast<std::size_t>(ages.size());
  {
    py::gil_scoped_release nogil;
    k.decay(s, a, o, n);
  }
  return out;
}

// _core.take_strings: the strings of `rows` from string columns split in parts
// (string_columns.hpp), viewed for this one call.
py::list take_strings(const py::sequence& columns, carray<std::int64_t> starts, carray<std::int64_t> rows) {
  return chrono_bind::StringColumns(columns, starts, "take_strings").take(rows);
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "chrono_engine's private compiled core (do not import directly)";
  m.def("build_info", &build_info);
  m.def("take_strings", &take_strings, py::arg("columns"), py::arg("starts"), py::arg("rows"));
  m.def("decay_eval", &decay_eval, py::arg("ages"), py::arg("spec"), py::arg("variant") = "");
  m.def("dot", [](py::array_t<float, py::array::c_style | py::array::forcecast> a,
                  py::array_t<float, py::array::c_style | py::array::forcecast> b, const std::string& which) {
    if (a.size() != b.size()) throw std::invalid_argument("length mismatch");
    return variant(which).dot(a.data(), b.data(), static_cast<std::size_t>(a.size()));
  }, py::arg("a"), py::arg("b"), py::arg("variant") = "");
  // the compact-copy kernels, for tests against NumPy
  m.def("dot_i8_some", [](py::array_t<std::int8_t, py::array::c_style | py::array::forcecast> c, carray<float> Q,
                          carray<std::uint32_t> which, const std::string& which_variant) {
    if (Q.ndim() != 2 || Q.shape(1) != c.size()) throw std::invalid_argument("Q must be (G, len(c))");
    const std::size_t n = static_cast<std::size_t>(which.size());
    for (std::size_t j = 0; j < n; ++j)
      if (which.data()[j] >= static_cast<std::uint32_t>(Q.shape(0))) throw std::out_of_range("which: query out of range");
    py::array_t<float> out(static_cast<py::ssize_t>(n));
    variant(which_variant).dot_i8_some(c.data(), Q.data(), which.data(), n, static_cast<std::size_t>(c.size()),
                                       out.mutable_data());
    return out;
  }, py::arg("c"), py::arg("Q"), py::arg("which"), py::arg("variant") = "");
  m.def("dot_qt_i8", [](py::array_t<std::int8_t, py::array::c_style | py::array::forcecast> C, carray<float> Q,
                        const std::string& which) {
    if (C.ndim() != 2 || Q.ndim() != 2 || Q.shape(1) != C.shape(1)) throw std::invalid_argument("C must be (R, d), Q (G, d)");
    const std::size_t G = static_cast<std::size_t>(Q.shape(0)), d = static_cast<std::size_t>(C.shape(1));
    const std::size_t R = static_cast<std::size_t>(C.shape(0));
    if (G == 0 || G > 64) throw std::invalid_argument("G must be in [1, 64]");
    const std::size_t Gp = (G + 7) / 8 * 8;
    std::vector<float> QT(d * Gp), out(R * Gp);
    transpose_queries(Q.data(), G, d, Gp, QT.data());
    std::vector<const std::int8_t*> xs(R);
    for (std::size_t r = 0; r < R; ++r) xs[r] = C.data() + r * d;
    variant(which).dot_qt_i8(xs.data(), R, QT.data(), Gp, d, out.data());
    py::array_t<float> res({static_cast<py::ssize_t>(R), static_cast<py::ssize_t>(G)});
    for (std::size_t r = 0; r < R; ++r)
      for (std::size_t g = 0; g < G; ++g) res.mutable_data()[r * G + g] = out[r * Gp + g];
    return res;
  }, py::arg("C"), py::arg("Q"), py::arg("variant") = "");
  m.def("quantise_queries", [](carray<float> Q) {
    // (q8, sq, rn) of the planner's int8 query quantisation (tests)
    if (Q.ndim() != 2) throw std::invalid_argument("Q must be (G, d)");
    const std::size_t G = static_cast<std::size_t>(Q.shape(0)), d = static_cast<std::size_t>(Q.shape(1));
    py::array_t<std::int8_t> q8({static_cast<py::ssize_t>(G), static_cast<py::ssize_t>(d)});
    py::array_t<double> sq(static_cast<py::ssize_t>(G)), rn(static_cast<py::ssize_t>(G));
    quantise_queries(Q.data(), G, d, q8.mutable_data(), sq.mutable_data(), rn.mutable_data());
    return py::make_tuple(q8, sq, rn);
  }, py::arg("Q"));
  m.def("dot_qt_s8", [](py::array_t<std::int8_t, py::array::c_style | py::array::forcecast> C,
                        py::array_t<std::int8_t, py::array::c_style | py::array::forcecast> Q8, const std::string& which) {
    // exact int32 dots of int8 rows C (R, d) with int8 queries Q8 (G, d), G <= 64
    if (C.ndim() != 2 || Q8.ndim() != 2 || Q8.shape(1) != C.shape(1)) throw std::invalid_argument("C must be (R, d), Q8 (G, d)");
    const std::size_t G = static_cast<std::size_t>(Q8.shape(0)), d = static_cast<std::size_t>(C.shape(1));
    const std::size_t R = static_cast<std::size_t>(C.shape(0));
    if (G == 0 || G > 64) throw std::invalid_argument("G must be in [1, 64]");
    if (d > 65536) throw std::invalid_argument("d must be at most 65536");
    const Kernels& k = variant(which);
    if (!k.dot_qt_s8) throw std::invalid_argument(std::string("kernel variant ") + k.name + " has no dot_qt_s8 (needs AVX512-VNNI)");
    const std::size_t Gp = (G + 7) / 8 * 8;
    std::vector<std::uint8_t> QU((d + 3) / 4 * Gp * 4);
    std::vector<std::int32_t> out(R * Gp);
    transpose_queries_s8(Q8.data(), G, d, Gp, QU.data());
    std::vector<const std::int8_t*> xs(R);
    for (std::size_t r = 0; r < R; ++r) xs[r] = C.data() + r * d;
    k.dot_qt_s8(xs.data(), R, QU.data(), Gp, d, out.data());
    py::array_t<std::int32_t> res({static_cast<py::ssize_t>(R), static_cast<py::ssize_t>(G)});
    for (std::size_t r = 0; r < R; ++r)
      for (std::size_t g = 0; g < G; ++g) res.mutable_data()[r * G + g] = out[r * Gp + g];
    return res;
  }, py::arg("C"), py::arg("Q8"), py::arg("variant") = "");
  m.def("dot_s8_1", [](py::array_t<std::int8_t, py::array::c_style | py::array::forcecast> C,
                       py::array_t<std::int8_t, py::array::c_style | py::array::forcecast> q8, const std::string& which) {
    // exact int32 dots of int8 rows C (R, d) with one int8 query q8 (d,): a lone query's kernel
    if (C.ndim() != 2 || q8.ndim() != 1 || q8.shape(0) != C.shape(1)) throw std::invalid_argument("C must be (R, d), q8 (d,)");
    const std::size_t d = static_cast<std::size_t>(C.shape(1)), R = static_cast<std::size_t>(C.shape(0));
    if (d > 65536) throw std::invalid_argument("d must be at most 65536");
    const Kernels& k = variant(which);
    if (!k.dot_s8_1) throw std::invalid_argument(std::string("kernel variant ") + k.name + " has no dot_s8_1 (needs AVX2)");
    for (py::ssize_t i = 0; i < q8.shape(0); ++i)
      if (q8.data()[i] == -128) throw std::invalid_argument("q8 must hold codes in [-127, 127] (quantise_queries' range)");
    std::vector<const std::int8_t*> xs(R);
    for (std::size_t r = 0; r < R; ++r) xs[r] = C.data() + r * d;
    std::int32_t q8_sum = 0;
    for (std::size_t i = 0; i < d; ++i) q8_sum += q8.data()[i];
    py::array_t<std::int32_t> res(static_cast<py::ssize_t>(R));
    k.dot_s8_1(xs.data(), R, q8.data(), q8_sum, d, 1, res.mutable_data());
    return res;
  }, py::arg("C"), py::arg("q8"), py::arg("variant") = "");
  m.def("unit_rows", [](py::array_t<float, py::array::c_style> m, bool cosine) -> py::tuple {
    // Query vectors as the search takes them (search.query_vectors, query_vector_one: both
    // call this, so a lone search() and search_batch() ask with the same bits): (out, row,
    // why): `out` a new (n, d) float32 array, under cosine each row scaled to unit length —
    // its sum of squares in double (exact enough, and no float32 row over- or underflows
    // it), each component times 1/sqrt of it in double, rounded to float32 — else a copy;
    // `row` the first bad row (-1: none) and `why` 1 for a non-finite component, 2 for a
    // zero row under cosine (out then unspecified).
    if (m.ndim() != 2) throw std::invalid_argument("unit_rows: expected a 2-d array");
    const auto n = static_cast<std::size_t>(m.shape(0)), d = static_cast<std::size_t>(m.shape(1));
    py::array_t<float> out({m.shape(0), m.shape(1)});
    const float* in = m.data();
    float* o = out.mutable_data();
    std::int64_t bad = -1;
    int why = 0;
    {
      py::gil_scoped_release nogil;
      for (std::size_t i = 0; i < n && bad < 0; ++i) {
        const float* x = in + i * d;
        double sq = 0.0;
        for (std::size_t j = 0; j < d; ++j) sq += static_cast<double>(x[j]) * static_cast<double>(x[j]);
        if (!std::isfinite(sq)) { bad = static_cast<std::int64_t>(i); why = 1; break; }
        if (cosine && sq == 0.0) { bad = static_cast<std::int64_t>(i); why = 2; break; }
        float* y = o + i * d;
        if (!cosine) { std::copy(x, x + d, y); continue; }
        const double inv = 1.0 / std::sqrt(sq);
        for (std::size_t j = 0; j < d; ++j) y[j] = static_cast<float>(static_cast<double>(x[j]) * inv);
      }
    }
    return py::make_tuple(out, bad, why);
  }, py::arg("m"), py::arg("cosine"));
  m.def("list_f32", [](py::handle values) -> py::object {
    // a list of Python floats (and ints of magnitude at most 2^24) as float32, as NumPy's
    // asarray(...).astype(float32) gives it (a double rounded to nearest; beyond float32's
    // range: inf); None for anything else (the caller takes NumPy's general path). A JSON
    // body's vector costs ~1 us here instead of ~20.
    if (!PyList_CheckExact(values.ptr())) return py::none();
    constexpr double kTop = static_cast<double>(std::numeric_limits<float>::max());
    const double kEdge = kTop + std::ldexp(1.0, std::numeric_limits<float>::max_exponent -
                                                    std::numeric_limits<float>::digits - 1);
    PyObject* l = values.ptr();
    const Py_ssize_t n = PyList_GET_SIZE(l);
    py::array_t<float> out(n);
    float* o = out.mutable_data();
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* x = PyList_GET_ITEM(l, i);
      double d;
      if (PyFloat_CheckExact(x)) {
        d = PyFloat_AS_DOUBLE(x);
      } else if (PyLong_CheckExact(x)) {
        int overflow = 0;
        const long long v = PyLong_AsLongLongAndOverflow(x, &overflow);
        if (overflow != 0 || v > (1LL << 24) || v < -(1LL << 24)) return py::none();
        d = static_cast<double>(v);
      } else {
        return py::none();
      }
      // past float32's largest value (a conversion C++ leaves undefined): below half an ulp
      // beyond it a double rounds to it, from there on NumPy gives inf (inf included)
      o[i] = std::fabs(d) <= kTop ? static_cast<float>(d)
                                  : std::copysign(std::fabs(d) < kEdge ? std::numeric_limits<float>::max()
                                                                       : std::numeric_limits<float>::infinity(), d);
    }
    return std::move(out);
  }, py::arg("values"));
  bind_score(m);
  register_search_params(m);
  bind_store(m);
  bind_ppr(m);
  bind_arrow(m);
}

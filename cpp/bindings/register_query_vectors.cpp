// Query vectors as the search takes them: unit_rows (every query, lone or in a batch) and
// list_f32 (a JSON body's vector).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include "register.hpp"

namespace {

// Query vectors as the search takes them (search.query_vectors, query_vector_one: both
// call this, so a lone search() and search_batch() ask with the same bits): (out, row,
// why): `out` a new (n, d) float32 array, under cosine each row scaled to unit length —
// its sum of squares in double (exact enough, and no float32 row over- or underflows
// it), each component times 1/sqrt of it in double, rounded to float32 — else a copy;
// `row` the first bad row (-1: none) and `why` 1 for a non-finite component, 2 for a
// zero row under cosine (out then unspecified).
py::tuple unit_rows(py::array_t<float, py::array::c_style> m, bool cosine) {
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
}

// a list of Python floats (and ints of magnitude at most 2^24) as float32, as NumPy's
// asarray(...).astype(float32) gives it (a double rounded to nearest; beyond float32's
// range: inf); None for anything else (the caller takes NumPy's general path). A JSON
// body's vector costs ~1 us here instead of ~20.
py::object list_f32(py::handle values) {
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
}

}  // namespace

void register_query_vectors(py::module_& m) {
  m.def("unit_rows", &unit_rows, py::arg("m"), py::arg("cosine"));
  m.def("list_f32", &list_f32, py::arg("values"));
}

// Pieces of the planner exposed for tests against their NumPy and Python references
// (tests/test_compact.py, test_build.py, test_probe.py, test_search.py): the int8 kernels
// of the compact copy and the query quantisation, the probe's choice rule, the citation
// search_one writes. The engine never calls these.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>
#include "chrono/kernels.hpp"
#include "chrono/probe.hpp"
#include "common.hpp"
#include "register.hpp"
#include "result_text.hpp"

using namespace chrono;

namespace {

using i8array = py::array_t<std::int8_t, py::array::c_style | py::array::forcecast>;

// Per query `which[j]` of Q (G, d): its dot with the int8 row c, as the scan's
// one-row-several-queries kernel computes it.
py::array_t<float> dot_i8_some(i8array c, carray<float> Q, carray<std::uint32_t> which, const std::string& kernel) {
  if (Q.ndim() != 2 || Q.shape(1) != c.size()) throw std::invalid_argument("Q must be (G, len(c))");
  const std::size_t n = static_cast<std::size_t>(which.size());
  for (std::size_t j = 0; j < n; ++j)
    if (which.data()[j] >= static_cast<std::uint32_t>(Q.shape(0))) throw std::out_of_range("which: query out of range");
  py::array_t<float> out(static_cast<py::ssize_t>(n));
  variant(kernel).dot_i8_some(c.data(), Q.data(), which.data(), n, static_cast<std::size_t>(c.size()),
                              out.mutable_data());
  return out;
}

// Dots (R, G) of int8 rows C (R, d) with float queries Q (G, d), G <= 64.
py::array_t<float> dot_qt_i8(i8array C, carray<float> Q, const std::string& kernel) {
  if (C.ndim() != 2 || Q.ndim() != 2 || Q.shape(1) != C.shape(1)) throw std::invalid_argument("C must be (R, d), Q (G, d)");
  const std::size_t G = static_cast<std::size_t>(Q.shape(0)), d = static_cast<std::size_t>(C.shape(1));
  const std::size_t R = static_cast<std::size_t>(C.shape(0));
  if (G == 0 || G > 64) throw std::invalid_argument("G must be in [1, 64]");
  const std::size_t Gp = (G + 7) / 8 * 8;
  std::vector<float> QT(d * Gp), out(R * Gp);
  transpose_queries(Q.data(), G, d, Gp, QT.data());
  std::vector<const std::int8_t*> xs(R);
  for (std::size_t r = 0; r < R; ++r) xs[r] = C.data() + r * d;
  variant(kernel).dot_qt_i8(xs.data(), R, QT.data(), Gp, d, out.data());
  py::array_t<float> res({static_cast<py::ssize_t>(R), static_cast<py::ssize_t>(G)});
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t g = 0; g < G; ++g) res.mutable_data()[r * G + g] = out[r * Gp + g];
  return res;
}

// (q8, sq, rn) of the planner's int8 query quantisation.
py::tuple quantised(carray<float> Q) {
  if (Q.ndim() != 2) throw std::invalid_argument("Q must be (G, d)");
  const std::size_t G = static_cast<std::size_t>(Q.shape(0)), d = static_cast<std::size_t>(Q.shape(1));
  py::array_t<std::int8_t> q8({static_cast<py::ssize_t>(G), static_cast<py::ssize_t>(d)});
  py::array_t<double> sq(static_cast<py::ssize_t>(G)), rn(static_cast<py::ssize_t>(G));
  chrono::quantise_queries(Q.data(), G, d, q8.mutable_data(), sq.mutable_data(), rn.mutable_data());
  return py::make_tuple(q8, sq, rn);
}

// Exact int32 dots of int8 rows C (R, d) with int8 queries Q8 (G, d), G <= 64.
py::array_t<std::int32_t> dot_qt_s8(i8array C, i8array Q8, const std::string& kernel) {
  if (C.ndim() != 2 || Q8.ndim() != 2 || Q8.shape(1) != C.shape(1)) throw std::invalid_argument("C must be (R, d), Q8 (G, d)");
  const std::size_t G = static_cast<std::size_t>(Q8.shape(0)), d = static_cast<std::size_t>(C.shape(1));
  const std::size_t R = static_cast<std::size_t>(C.shape(0));
  if (G == 0 || G > 64) throw std::invalid_argument("G must be in [1, 64]");
  if (d > 65536) throw std::invalid_argument("d must be at most 65536");
  const Kernels& k = variant(kernel);
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
}

// Exact int32 dots of int8 rows C (R, d) with one int8 query q8 (d,): a lone query's kernel.
py::array_t<std::int32_t> dot_s8_1(i8array C, i8array q8, const std::string& kernel) {
  if (C.ndim() != 2 || q8.ndim() != 1 || q8.shape(0) != C.shape(1)) throw std::invalid_argument("C must be (R, d), q8 (d,)");
  const std::size_t d = static_cast<std::size_t>(C.shape(1)), R = static_cast<std::size_t>(C.shape(0));
  if (d > 65536) throw std::invalid_argument("d must be at most 65536");
  const Kernels& k = variant(kernel);
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
}

// Which queries of a group the planner sends to the probe (probe.hpp), given each one's
// rows in force `f` (0: the probe does not apply) and the store's rows `n`.
py::array_t<bool> probe_choices(std::size_t n, carray<std::uint64_t> f) {
  if (f.ndim() != 1) throw std::invalid_argument("f must be 1-D");
  const std::size_t G = static_cast<std::size_t>(f.size());
  std::vector<std::size_t> fs(f.data(), f.data() + G);
  std::vector<char> applies(G);
  chrono::probe_choice(n, fs.data(), G, applies.data());
  py::array_t<bool> out(static_cast<py::ssize_t>(G));
  for (std::size_t g = 0; g < G; ++g) out.mutable_data()[g] = applies[g] != 0;
  return out;
}

// One citation as Store.search_one writes it; None where it defers to Python.
py::object citation(std::optional<std::string> title, std::optional<std::string> version, std::int64_t valid_from,
                    bool zh) {
  std::string out;
  if (!chrono_text::append_citation(out, zh, title.has_value(), title ? *title : std::string(), version.has_value(),
                                    version ? *version : std::string(), valid_from))
    return py::none();
  return py::str(out);
}

}  // namespace

void register_testing(py::module_& m) {
  m.def("dot_i8_some", &dot_i8_some, py::arg("c"), py::arg("Q"), py::arg("which"), py::arg("variant") = "");
  m.def("dot_qt_i8", &dot_qt_i8, py::arg("C"), py::arg("Q"), py::arg("variant") = "");
  m.def("quantise_queries", &quantised, py::arg("Q"));
  m.def("dot_qt_s8", &dot_qt_s8, py::arg("C"), py::arg("Q8"), py::arg("variant") = "");
  m.def("dot_s8_1", &dot_s8_1, py::arg("C"), py::arg("q8"), py::arg("variant") = "");
  m.def("probe_choice", &probe_choices, py::arg("n"), py::arg("f"));
  m.def("citation", &citation, py::arg("title"), py::arg("version"), py::arg("valid_from"), py::arg("zh"));
}

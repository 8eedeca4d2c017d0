// The store's internals exposed for tests against their NumPy references
// (tests/test_bound_pass.py, test_compact.py, test_build.py): the certified plan's
// metadata pass, the lone scan's validities, the compact int8 copy, the interval index and
// the freshness lists. The engine never calls these.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>
#include "chrono/store.hpp"
#include "common.hpp"
#include "store_binding.hpp"

using namespace chrono;
using chrono_bind::PyStore;
using chrono_bind::StoreClass;

namespace {

// The certified plan's metadata pass (Kernels::bound_rows) on rows of this store, for
// tests against NumPy; per-query arrays have G <= 64 values and are padded here.
py::dict bound_rows(PyStore& p, carray<std::uint32_t> rows, carray<double> t, carray<std::int64_t> known_at,
                    carray<std::int64_t> x1, carray<std::int64_t> x2, carray<double> theta, carray<double> a,
                    carray<double> b, double tau, double out_pen, bool latest,
                    std::optional<carray<std::uint8_t>> mask, const std::string& which, std::optional<double> fut_pen) {
  const std::size_t G = static_cast<std::size_t>(t.size()), n = static_cast<std::size_t>(rows.size());
  if (G == 0 || G > 64) throw std::invalid_argument("G must be in [1, 64]");
  const std::size_t Gp = (G + 7) / 8 * 8;
  std::vector<double> T(Gp, 0.0), TH(Gp, std::numeric_limits<double>::infinity()), A(Gp, 0.0), B(Gp, 0.0);
  std::vector<std::int64_t> K(Gp, kOpenStart), X1(Gp, kOpenStart), X2(Gp, kOpenEnd);
  std::copy(t.data(), t.data() + G, T.begin());
  std::copy(checked(theta, G, "theta"), theta.data() + G, TH.begin());
  std::copy(checked(a, G, "a"), a.data() + G, A.begin());
  std::copy(checked(b, G, "b"), b.data() + G, B.begin());
  std::copy(checked(known_at, G, "known_at"), known_at.data() + G, K.begin());
  std::copy(checked(x1, G, "x1"), x1.data() + G, X1.begin());
  std::copy(checked(x2, G, "x2"), x2.data() + G, X2.begin());
  std::vector<std::uint32_t> kept(n), cnt(Gp, 0);
  std::vector<double> best(n);
  std::vector<float> val(n * Gp), pen(n * Gp);
  std::shared_lock<std::shared_mutex> g(p.s->mutex());
  for (std::size_t i = 0; i < n; ++i)
    if (rows.data()[i] >= p.s->meta().size()) throw std::out_of_range("row out of range");
  BoundArgs ba;
  ba.Gp = Gp; ba.G = G; ba.t = T.data(); ba.known_at = K.data(); ba.x1 = X1.data(); ba.x2 = X2.data();
  ba.theta = TH.data(); ba.a = A.data(); ba.b = B.data(); ba.tau = tau; ba.out_pen = out_pen; ba.latest = latest;
  ba.fut_pen = fut_pen.value_or(out_pen);
  ba.specs = p.s->decay_specs().data(); ba.n_specs = p.s->decay_specs().size();
  if (mask) { ba.type_mask = mask->data(); ba.mask_n = static_cast<std::size_t>(mask->size()); }
  ba.kept = kept.data(); ba.best = best.data(); ba.val = val.data(); ba.pen = pen.data(); ba.cnt = cnt.data();
  const std::size_t nk = variant(which).bound_rows(ba, &p.s->meta(), rows.data(), n);
  py::array_t<float> V({static_cast<py::ssize_t>(nk), static_cast<py::ssize_t>(G)}),
      P({static_cast<py::ssize_t>(nk), static_cast<py::ssize_t>(G)});
  for (std::size_t r = 0; r < nk; ++r)
    for (std::size_t q = 0; q < G; ++q) {
      V.mutable_data()[r * G + q] = val[r * Gp + q];
      P.mutable_data()[r * G + q] = pen[r * Gp + q];
    }
  py::dict out;
  out["kept"] = py::array_t<std::uint32_t>(static_cast<py::ssize_t>(nk), kept.data());
  out["best"] = py::array_t<double>(static_cast<py::ssize_t>(nk), best.data());
  out["validity"] = V; out["penalty"] = P;
  out["count"] = py::array_t<std::uint32_t>(static_cast<py::ssize_t>(G), cnt.data());
  return out;
}

// The lone scan's validities (Kernels::validities) of `rows` at t, and the same rows'
// reliability times their decay by Kernels::decay one row at a time (the exact path,
// Searcher::score): the two must agree bit for bit (the scan's tau test reads the first).
py::tuple validities(PyStore& p, carray<std::uint32_t> rows, std::int64_t t, const std::string& which) {
  const std::size_t n = static_cast<std::size_t>(rows.size());
  std::shared_lock<std::shared_mutex> g(p.s->mutex());
  const MetaTable& meta = p.s->meta();
  for (std::size_t i = 0; i < n; ++i)
    if (rows.data()[i] >= meta.size()) throw std::out_of_range("row out of range");
  const Kernels& k = variant(which);
  py::array_t<double> got(static_cast<py::ssize_t>(n)), exact(static_cast<py::ssize_t>(n));
  k.validities(p.s->decay_specs().data(), &meta, rows.data(), n, t, got.mutable_data());
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t r = rows.data()[i];
    const double age = age_days(t, meta.observed_at(r));
    double d;
    k.decay(p.s->decay_specs()[meta.fact_type(r)], &age, &d, 1);
    exact.mutable_data()[i] = static_cast<double>(meta.reliability(r)) * d;
  }
  return py::make_tuple(got, exact);
}

py::array_t<std::uint32_t> rows_valid_at(PyStore& p, std::int64_t t) {
  std::shared_lock<std::shared_mutex> g(p.s->mutex());
  std::vector<std::uint32_t> rows;
  p.s->intervals().for_each_valid_at(t, [&](std::uint32_t r) { rows.push_back(r); });
  std::sort(rows.begin(), rows.end());
  return py::array_t<std::uint32_t>(static_cast<py::ssize_t>(rows.size()), rows.data());
}

py::array_t<std::uint32_t> rows_overlapping(PyStore& p, std::int64_t a, std::int64_t b) {
  std::shared_lock<std::shared_mutex> g(p.s->mutex());
  std::vector<std::uint32_t> rows;
  p.s->intervals().for_each_overlapping(a, b, [&](std::uint32_t r) { rows.push_back(r); });
  std::sort(rows.begin(), rows.end());
  return py::array_t<std::uint32_t>(static_cast<py::ssize_t>(rows.size()), rows.data());
}

// The freshness lists (tests): rows of a fact-type code observed in [lo, hi], sorted, and
// the list's own count of them.
py::tuple rows_observed_between(PyStore& p, std::uint16_t type, std::int64_t lo, std::int64_t hi) {
  std::shared_lock<std::shared_mutex> g(p.s->mutex());
  std::vector<std::uint32_t> rows;
  p.s->freshness().for_each_observed_between(type, lo, hi, [&](std::uint32_t r) { rows.push_back(r); });
  std::sort(rows.begin(), rows.end());
  return py::make_tuple(py::array_t<std::uint32_t>(static_cast<py::ssize_t>(rows.size()), rows.data()),
                        p.s->freshness().count_observed_between(type, lo, hi));
}

// (codes, scale, err) of the compact copy for `rows` (tests check its bound).
py::tuple compact(PyStore& p, carray<std::uint32_t> rows) {
  std::shared_lock<std::shared_mutex> g(p.s->mutex());
  const auto& ann = p.s->ann();
  const std::size_t d = p.s->dim(), n = static_cast<std::size_t>(rows.size());
  py::array_t<std::int8_t> codes({static_cast<py::ssize_t>(n), static_cast<py::ssize_t>(d)});
  py::array_t<float> scale(static_cast<py::ssize_t>(n)), err(static_cast<py::ssize_t>(n));
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t r = rows.data()[i];
    if (r >= p.s->size()) throw std::out_of_range("row out of range");
    std::copy_n(ann.compact(r), d, codes.mutable_data() + i * d);
    scale.mutable_data()[i] = ann.compact_scale(r);
    err.mutable_data()[i] = ann.compact_err(r);
  }
  return py::make_tuple(codes, scale, err);
}

}  // namespace

void register_store_checks(StoreClass& cls) {
  cls.def("bound_rows", &bound_rows, py::arg("rows"), py::arg("t"), py::arg("known_at"), py::arg("x1"), py::arg("x2"),
          py::arg("theta"), py::arg("a"), py::arg("b"), py::arg("tau"), py::arg("out_pen"), py::arg("latest"),
          py::arg("mask") = py::none(), py::arg("variant") = "", py::arg("fut_pen") = py::none())
      .def("validities", &validities, py::arg("rows"), py::arg("t"), py::arg("variant") = "")
      .def("compact", &compact, py::arg("rows"))
      .def("rows_valid_at", &rows_valid_at, py::arg("t"))
      .def("rows_overlapping", &rows_overlapping, py::arg("start"), py::arg("end"))
      .def("rows_observed_between", &rows_observed_between, py::arg("type"), py::arg("lo"), py::arg("hi"))
      .def("valid_at_upper_bound", [](PyStore& p, std::int64_t t) {
        std::shared_lock<std::shared_mutex> g(p.s->mutex());
        return p.s->intervals().valid_at_upper_bound(t);
      }, py::arg("t"));
}

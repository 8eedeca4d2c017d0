// _core.Store: the compiled store (store_binding.hpp) and its methods for the Python
// layer: writes (ingest, amend, update, restore), reads of its columns, vectors and
// indexes, and the probe partition. The searches and the internals exposed for tests are
// registered from register_store_search.cpp and register_store_checks.cpp.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>
#include "chrono/store.hpp"
#include "common.hpp"
#include "register.hpp"
#include "store_binding.hpp"

using namespace chrono;
using chrono_bind::PyStore;
using chrono_bind::StoreClass;

namespace {

// The metadata columns of n rows, each checked to hold n values.
MetaColumns meta_columns(std::size_t n, const carray<std::int64_t>& vf, const carray<std::int64_t>& vt,
                         const carray<std::int64_t>& ob, const carray<std::int64_t>& ing,
                         const carray<std::int64_t>& ret, const carray<std::uint64_t>& ver,
                         const carray<float>& rel, const carray<std::int32_t>& stem,
                         const carray<std::uint16_t>& ft, const carray<std::uint8_t>& dep,
                         const std::optional<carray<std::uint64_t>>& ids) {
  MetaColumns c;
  c.n = n;
  c.valid_from = checked(vf, n, "valid_from");
  c.valid_to = checked(vt, n, "valid_to");
  c.observed_at = checked(ob, n, "observed_at");
  c.ingested_at = checked(ing, n, "ingested_at");
  c.retracted_at = checked(ret, n, "retracted_at");
  c.version = checked(ver, n, "version");
  c.reliability = checked(rel, n, "reliability");
  c.stem = checked(stem, n, "stem");
  c.fact_type = checked(ft, n, "fact_type");
  c.deprecated = checked(dep, n, "deprecated");
  c.ids = checked(ids, n, "id");
  return c;
}

// Amendments of existing rows, one per value of `rows`.
AmendColumns amend_columns(const carray<std::uint32_t>& rows, const carray<std::int64_t>& tx,
                           const carray<std::int64_t>& vt, const carray<std::int64_t>& dep) {
  AmendColumns a;
  a.n = static_cast<std::size_t>(rows.size());
  a.rows = rows.data();
  a.tx = checked(tx, a.n, "amend tx");
  a.valid_to = checked(vt, a.n, "amend valid_to");
  a.dep_from = checked(dep, a.n, "amend deprecated_from");
  return a;
}

std::size_t ingest(PyStore& p, carray<float> vectors, carray<std::int64_t> vf, carray<std::int64_t> vt,
                   carray<std::int64_t> ob, carray<std::int64_t> ing, carray<std::int64_t> ret,
                   carray<std::uint64_t> ver, carray<float> rel, carray<std::int32_t> stem, carray<std::uint16_t> ft,
                   carray<std::uint8_t> dep, std::optional<carray<std::uint64_t>> ids, int threads,
                   std::optional<carray<std::uint32_t>> am_rows, std::optional<carray<std::int64_t>> am_tx,
                   std::optional<carray<std::int64_t>> am_vt, std::optional<carray<std::int64_t>> am_dep) {
  if (vectors.ndim() != 2 || static_cast<std::size_t>(vectors.shape(1)) != p.s->dim())
    throw std::invalid_argument("vectors must have shape (n, " + std::to_string(p.s->dim()) + ")");
  std::size_t n = static_cast<std::size_t>(vectors.shape(0));
  MetaColumns c = meta_columns(n, vf, vt, ob, ing, ret, ver, rel, stem, ft, dep, ids);
  if (am_rows.has_value() != am_tx.has_value() || am_rows.has_value() != am_vt.has_value() ||
      am_rows.has_value() != am_dep.has_value())
    throw std::invalid_argument("the amendment arrays go together");
  AmendColumns a;
  if (am_rows) a = amend_columns(*am_rows, *am_tx, *am_vt, *am_dep);
  py::gil_scoped_release nogil;
  return p.s->ingest(vectors.data(), c, threads, am_rows ? &a : nullptr);
}

void amend(PyStore& p, carray<std::uint32_t> rows, carray<std::int64_t> tx, carray<std::int64_t> vt,
           carray<std::int64_t> dep) {
  AmendColumns a = amend_columns(rows, tx, vt, dep);
  py::gil_scoped_release nogil;
  p.s->amend(a);
}

void restore(PyStore& p, const std::string& path, carray<std::int64_t> vf, carray<std::int64_t> vt,
             carray<std::int64_t> ob, carray<std::int64_t> ing, carray<std::int64_t> ret, carray<std::uint64_t> ver,
             carray<float> rel, carray<std::int32_t> stem, carray<std::uint16_t> ft, carray<std::uint8_t> dep,
             carray<std::uint64_t> ids, std::optional<std::size_t> n_stems) {
  std::size_t n = static_cast<std::size_t>(vf.size());
  MetaColumns c = meta_columns(n, vf, vt, ob, ing, ret, ver, rel, stem, ft, dep, ids);
  py::gil_scoped_release nogil;
  p.s->restore(path, c, n_stems.value_or(Store::kAnyStem));
}

void update(PyStore& p, carray<std::uint32_t> rows, std::optional<carray<std::int64_t>> valid_to,
            std::optional<carray<std::uint8_t>> deprecated, std::optional<carray<std::int64_t>> retracted_at) {
  std::size_t n = static_cast<std::size_t>(rows.size());
  std::vector<std::uint32_t> r(rows.data(), rows.data() + n);
  const std::int64_t* vt = checked(valid_to, n, "valid_to");
  const std::uint8_t* dp = checked(deprecated, n, "deprecated");
  const std::int64_t* rt = checked(retracted_at, n, "retracted_at");
  py::gil_scoped_release nogil;
  p.s->update(r, vt, dp, rt);
}

// Every amendment: (rows, tx, valid_to, deprecated_from), in order of arrival per row
// (oldest first), rows ascending.
py::tuple amendments(PyStore& p) {
  std::shared_lock<std::shared_mutex> g(p.s->mutex());
  const auto& m = p.s->meta();
  std::vector<std::uint32_t> rows;
  std::vector<std::int64_t> tx, vt, dep;
  rows.reserve(m.amendments()); tx.reserve(m.amendments()); vt.reserve(m.amendments()); dep.reserve(m.amendments());
  for (std::size_t r = 0; r < m.size(); ++r) {
    if (!m.amended(r)) continue;
    const std::size_t at = rows.size();
    m.for_each_amendment(r, [&](const MetaTable::Amendment& a) {
      rows.push_back(static_cast<std::uint32_t>(r)); tx.push_back(a.tx); vt.push_back(a.valid_to); dep.push_back(a.dep_from);
    });
    std::reverse(tx.begin() + static_cast<std::ptrdiff_t>(at), tx.end());
    std::reverse(vt.begin() + static_cast<std::ptrdiff_t>(at), vt.end());
    std::reverse(dep.begin() + static_cast<std::ptrdiff_t>(at), dep.end());
  }
  auto arr = [](auto& v) { return py::array(static_cast<py::ssize_t>(v.size()), v.data()); };
  return py::make_tuple(arr(rows), arr(tx), arr(vt), arr(dep));
}

py::array_t<std::uint32_t> stem_rows(PyStore& p, std::int32_t stem) {
  std::shared_lock<std::shared_mutex> g(p.s->mutex());
  std::vector<std::uint32_t> rows = p.s->stem_rows(stem);
  std::sort(rows.begin(), rows.end());
  return py::array_t<std::uint32_t>(static_cast<py::ssize_t>(rows.size()), rows.data());
}

py::array_t<std::int64_t> rows_of(PyStore& p, carray<std::uint64_t> ids) {
  py::array_t<std::int64_t> out(ids.size());
  std::shared_lock<std::shared_mutex> g(p.s->mutex());
  for (py::ssize_t i = 0; i < ids.size(); ++i) out.mutable_data()[i] = p.s->lookup_row(ids.data()[i]);
  return out;
}

// The metadata columns of `rows` (the caller holds the lock). known_at: the columns as ingested (None), or with the
// amendments known at that transaction time (one, or one per row) applied: valid_to
// brought forward, and deprecated_from (the valid time deprecated from: INT64_MIN always,
// INT64_MAX never; `deprecated` is then 1 when deprecated from some time).
py::dict gather(const Store& st, const std::uint32_t* rows, std::size_t count,
                const std::optional<carray<std::int64_t>>& known_at) {
  if (known_at && known_at->size() != 1 && static_cast<std::size_t>(known_at->size()) != count)
    throw std::invalid_argument("known_at must hold one time or one per row");
  const auto& m = st.meta();
  auto n = static_cast<py::ssize_t>(count);
  py::array_t<std::int64_t> vf(n), vt(n), ob(n), ing(n), ret(n);
  py::array_t<std::uint64_t> ver(n), ids(n);
  py::array_t<float> rel(n);
  py::array_t<std::int32_t> stem(n);
  py::array_t<std::uint16_t> ft(n);
  py::array_t<std::uint8_t> dep(n);
  for (py::ssize_t i = 0; i < n; ++i) {
    const std::uint32_t r = rows[i];
    vf.mutable_data()[i] = m.valid_from(r); vt.mutable_data()[i] = m.valid_to(r); ob.mutable_data()[i] = m.observed_at(r);
    ing.mutable_data()[i] = m.ingested_at(r); ret.mutable_data()[i] = m.retracted_at(r); ver.mutable_data()[i] = m.version(r);
    rel.mutable_data()[i] = m.reliability(r); stem.mutable_data()[i] = m.stem(r); ft.mutable_data()[i] = m.fact_type(r);
    dep.mutable_data()[i] = m.deprecated(r) ? 1 : 0; ids.mutable_data()[i] = st.id_of(r);
  }
  py::dict d;
  if (known_at) {
    py::array_t<std::int64_t> dfrom(n), amended(n);
    const std::int64_t* K = known_at->data();
    const bool one = known_at->size() == 1;
    for (py::ssize_t i = 0; i < n; ++i) {
      micros end, from, last = kOpenEnd;
      const micros k = one ? K[0] : K[i];
      m.known(rows[i], k, end, from);
      m.for_each_amendment(rows[i], [&](const MetaTable::Amendment& a) {
        if (a.tx <= k) last = last == kOpenEnd ? a.tx : std::max(last, a.tx);
      });
      vt.mutable_data()[i] = end;
      dfrom.mutable_data()[i] = from;
      amended.mutable_data()[i] = last;
      dep.mutable_data()[i] = from != kOpenEnd ? 1 : 0;
    }
    d["deprecated_from"] = dfrom;
    d["amended_at"] = amended;  // the latest amendment's transaction time (INT64_MAX: none)
  }
  d["valid_from"] = vf; d["valid_to"] = vt; d["observed_at"] = ob; d["ingested_at"] = ing; d["retracted_at"] = ret;
  d["version"] = ver; d["reliability"] = rel; d["stem"] = stem; d["fact_type"] = ft; d["deprecated"] = dep; d["id"] = ids;
  return d;
}

py::dict columns_out(PyStore& p, std::optional<carray<std::int64_t>> known_at) {
  std::shared_lock<std::shared_mutex> g(p.s->mutex());
  std::vector<std::uint32_t> all(p.s->meta().size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::uint32_t>(i);
  return gather(*p.s, all.data(), all.size(), known_at);
}

py::dict columns_at(PyStore& p, carray<std::uint32_t> rows, std::optional<carray<std::int64_t>> known_at) {
  std::shared_lock<std::shared_mutex> g(p.s->mutex());
  for (py::ssize_t i = 0; i < rows.size(); ++i)
    if (rows.data()[i] >= p.s->meta().size()) throw std::out_of_range("row out of range");
  return gather(*p.s, rows.data(), static_cast<std::size_t>(rows.size()), known_at);
}

// What a result table reads of its hits' metadata (search.py, _hits), in one call:
// valid_from, valid_to as known at known_at (one time, or one per row; amendments
// applied as in gather), valid_to's validity (false where open) or None when none is
// open, and the stem codes (-1: none). columns_at gives the same and eight more columns,
// each an array made per call (~1.5 us each in place after a lone search's scan).
py::tuple hit_meta(PyStore& p, carray<std::uint32_t> rows, carray<std::int64_t> known_at) {
  const auto n = static_cast<std::size_t>(rows.size());
  if (known_at.ndim() != 1 || (known_at.size() != 1 && static_cast<std::size_t>(known_at.size()) != n))
    throw std::invalid_argument("known_at must hold one time or one per row");
  py::array_t<std::int64_t> vf(static_cast<py::ssize_t>(n)), vt(static_cast<py::ssize_t>(n));
  py::array_t<std::int32_t> stem(static_cast<py::ssize_t>(n));
  bool open = false;
  {
    std::shared_lock<std::shared_mutex> g(p.s->mutex());
    const auto& m = p.s->meta();
    const std::uint32_t* r = rows.data();
    for (std::size_t i = 0; i < n; ++i)
      if (r[i] >= m.size()) throw std::out_of_range("row out of range");
    const std::int64_t* K = known_at.data();
    const bool one = known_at.size() == 1;
    for (std::size_t i = 0; i < n; ++i) {
      micros end, from;
      m.known(r[i], one ? K[0] : K[i], end, from);
      vf.mutable_data()[i] = m.valid_from(r[i]);
      vt.mutable_data()[i] = end;
      stem.mutable_data()[i] = m.stem(r[i]);
      open |= end == kOpenEnd;
    }
  }
  const std::int64_t* e = vt.data();
  return py::make_tuple(vf, vt, validity(n, open, [&](std::size_t i) { return e[i] != kOpenEnd; }), stem);
}

py::array_t<float> vectors(PyStore& p, carray<std::uint32_t> rows) {
  std::shared_lock<std::shared_mutex> g(p.s->mutex());
  std::size_t d = p.s->dim();
  py::array_t<float> out({static_cast<py::ssize_t>(rows.size()), static_cast<py::ssize_t>(d)});
  for (py::ssize_t i = 0; i < rows.size(); ++i) {
    std::uint32_t r = rows.data()[i];
    if (r >= p.s->meta().size()) throw std::out_of_range("row out of range");
    std::memcpy(out.mutable_data() + i * static_cast<py::ssize_t>(d), p.s->ann().vector(r), d * sizeof(float));
  }
  return out;
}

// Per row, the fingerprint storage/recovery.py checks a store's vectors against: the sum over j
// of bits(x_j) * w_j modulo 2^64 (bits: the float32 bit pattern as an unsigned integer),
// for rows [0, n). `weights`: at least dim of them. The GIL is released; rows are split
// over `threads` workers (the sum is exact modular arithmetic: any order gives the same).
py::array_t<std::uint64_t> vector_hashes(PyStore& p, carray<std::uint64_t> weights, int threads) {
  std::shared_lock<std::shared_mutex> g(p.s->mutex());
  const std::size_t d = p.s->dim(), n = p.s->meta().size();
  if (weights.ndim() != 1 || static_cast<std::size_t>(weights.size()) < d)
    throw std::invalid_argument("vector_hashes: need at least dim weights");
  py::array_t<std::uint64_t> out(static_cast<py::ssize_t>(n));
  std::uint64_t* o = out.mutable_data();
  const std::uint64_t* w = weights.data();
  {
    py::gil_scoped_release nogil;
    constexpr std::size_t kChunk = 4096;
    parallel_for((n + kChunk - 1) / kChunk, std::max(threads, 1), [&](std::size_t c) {
      const std::size_t hi = std::min(n, (c + 1) * kChunk);
      for (std::size_t r = c * kChunk; r < hi; ++r) {
        const float* x = p.s->ann().vector(static_cast<std::uint32_t>(r));
        std::uint64_t h = 0;
        for (std::size_t j = 0; j < d; ++j) {
          std::uint32_t b;
          std::memcpy(&b, x + j, sizeof b);
          h += static_cast<std::uint64_t>(b) * w[j];
        }
        o[r] = h;
      }
    });
  }
  return out;
}

}  // namespace

namespace {

void def_writes(StoreClass& cls) {
  cls.def("set_decay", [](PyStore& p, carray<double> table) { p.s->set_decay(specs_from(table)); }, py::arg("table"))
      .def("ingest", &ingest, py::arg("vectors"), py::arg("valid_from"), py::arg("valid_to"), py::arg("observed_at"),
           py::arg("ingested_at"), py::arg("retracted_at"), py::arg("version"), py::arg("reliability"),
           py::arg("stem"), py::arg("fact_type"), py::arg("deprecated"), py::arg("ids"), py::arg("threads"),
           py::arg("amend_rows") = py::none(), py::arg("amend_tx") = py::none(),
           py::arg("amend_valid_to") = py::none(), py::arg("amend_deprecated_from") = py::none())
      .def("amend", &amend, py::arg("rows"), py::arg("tx"), py::arg("valid_to"), py::arg("deprecated_from"))
      .def("restore", &restore, py::arg("path"), py::arg("valid_from"), py::arg("valid_to"), py::arg("observed_at"),
           py::arg("ingested_at"), py::arg("retracted_at"), py::arg("version"), py::arg("reliability"),
           py::arg("stem"), py::arg("fact_type"), py::arg("deprecated"), py::arg("ids"),
           py::arg("n_stems") = py::none())
      .def("update", &update, py::arg("rows"), py::arg("valid_to") = py::none(), py::arg("deprecated") = py::none(),
           py::arg("retracted_at") = py::none())
      .def("save_graph", [](PyStore& p, const std::string& path) {
        std::shared_lock<std::shared_mutex> g(p.s->mutex());
        p.s->ann().save(path);
      }, py::arg("path"));
}

void def_reads(StoreClass& cls) {
  cls.def("amendments", &amendments)
      .def("stem_rows", &stem_rows, py::arg("stem"))
      .def("rows_of", &rows_of, py::arg("ids"))
      .def("columns", &columns_out, py::arg("known_at") = py::none())
      .def("columns_at", &columns_at, py::arg("rows"), py::arg("known_at") = py::none())
      .def("hit_meta", &hit_meta, py::arg("rows"), py::arg("known_at"))
      .def("vectors", &vectors, py::arg("rows"))
      .def("vector_hashes", &vector_hashes, py::arg("weights"), py::arg("threads"))
      .def("count_valid_at", [](PyStore& p, std::int64_t t, std::optional<std::int64_t> k) {
        std::shared_lock<std::shared_mutex> g(p.s->mutex());
        return k ? p.s->count_valid_at_known(t, *k) : p.s->count_valid_at_now(t);
      }, py::arg("t"), py::arg("known_at") = py::none())
      .def("count_overlapping", [](PyStore& p, std::int64_t a, std::int64_t b, std::optional<std::int64_t> k) {
        std::shared_lock<std::shared_mutex> g(p.s->mutex());
        return k ? p.s->count_overlapping_known(a, b, *k) : p.s->count_overlapping_now(a, b);
      }, py::arg("start"), py::arg("end"), py::arg("known_at") = py::none())
      .def("memory", [](PyStore& p) {
        py::dict d;
        d["metadata"] = p.s->metadata_bytes();
        d["interval_index"] = p.s->interval_index_bytes();
        d["freshness_index"] = p.s->freshness_index_bytes();
        d["graph"] = p.s->ann().graph_bytes();
        d["vectors"] = p.s->ann().vector_bytes();
        d["compact_vectors"] = p.s->ann().compact_bytes();
        return d;
      })
      .def_property_readonly("size", [](PyStore& p) { return p.s->size(); })
      // (next automatic id, exhausted): Python assigns a clustered batch's ids in input order
      .def("id_state", [](PyStore& p) { auto st = p.s->id_state(); return py::make_tuple(st.first, st.second); })
      .def_property_readonly("id_map_mode", [](PyStore& p) { return std::string(p.s->id_map_mode()); })
      .def_property_readonly("dim", [](PyStore& p) { return p.s->dim(); })
      .def_property_readonly("M", [](PyStore& p) { return p.s->ann().M(); })
      .def_property_readonly("ef_construction", [](PyStore& p) { return p.s->ann().ef_construction(); });
}

// The coarse partition the probe plan reads (chrono_engine/_partition.py makes it).
void def_partition(StoreClass& cls) {
  cls.def("set_partition", [](PyStore& p, carray<float> centroids, double delta) {
    // new centroids (C, dim) and delta for the probe plan; every row unassigned
    if (centroids.ndim() != 2 || static_cast<std::size_t>(centroids.shape(1)) != p.s->dim())
      throw std::invalid_argument("centroids must have shape (C, " + std::to_string(p.s->dim()) + ")");
    py::gil_scoped_release nogil;
    p.s->set_partition(centroids.data(), static_cast<std::size_t>(centroids.shape(0)), delta);
  }, py::arg("centroids"), py::arg("delta"))
      .def("assign_partition", [](PyStore& p, std::size_t first, carray<std::uint16_t> a) {
        // rows [first, first + len(a)) to centroids a (65535: none); first = partition_info()[1]
        if (a.ndim() != 1) throw std::invalid_argument("assignment must be 1-D");
        py::gil_scoped_release nogil;
        p.s->assign_partition(first, a.data(), static_cast<std::size_t>(a.size()));
      }, py::arg("first"), py::arg("assignment"))
      .def("clear_partition", [](PyStore& p) { p.s->clear_partition(); })
      .def("partition_info", [](PyStore& p) {
        // (centroids, rows assigned, delta)
        std::shared_lock<std::shared_mutex> g(p.s->mutex());
        const auto& c = p.s->partition();
        return py::make_tuple(c.C, c.covered, c.delta);
      })
      .def("partition_members", [](PyStore& p, std::size_t j) {
        // the rows of centroid j, ascending
        std::shared_lock<std::shared_mutex> g(p.s->mutex());
        const auto& c = p.s->partition();
        if (j >= c.C) throw std::out_of_range("no such centroid");
        return py::array_t<std::uint32_t>(static_cast<py::ssize_t>(c.members[j].size()), c.members[j].data());
      }, py::arg("centroid"));
}

}  // namespace

void register_store(py::module_& m) {
  StoreClass c(m, "Store");
  c.def(py::init<std::size_t, const std::string&, std::size_t, std::size_t, std::size_t>(), py::arg("dim"),
        py::arg("metric"), py::arg("M"), py::arg("ef_construction"), py::arg("seed"));
  def_writes(c);
  def_reads(c);
  def_partition(c);
  register_store_search(c);
  register_store_checks(c);
  register_store_user(c);
}

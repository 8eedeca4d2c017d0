// Bindings of the store and the planner: array conversion, GIL release, thread pool.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <pybind11/stl.h>
#include "chrono/names.hpp"
#include "chrono/planner.hpp"
#include "arrow_export.hpp"
#include "common.hpp"
#include "result_text.hpp"
#include "search_params.hpp"
#include "string_columns.hpp"

using namespace chrono;

namespace {

std::string_view utf8(const py::handle& h, const char* what) {
  if (!PyUnicode_Check(h.ptr())) throw py::type_error(std::string(what) + " must be str");
  Py_ssize_t len = 0;
  const char* p = PyUnicode_AsUTF8AndSize(h.ptr(), &len);
  if (p == nullptr) throw py::error_already_set();
  return {p, static_cast<std::size_t>(len)};
}

py::str to_py(std::string_view s) { return py::str(s.data(), s.size()); }

// An Arrow validity as NumPy bools, valid(i) per row, or None when no row is null
// (any_null false): the result tables' form of a nullable column.
template <class Valid>
py::object validity(std::size_t n, bool any_null, Valid&& valid) {
  if (!any_null) return py::none();
  py::array_t<bool> v(static_cast<py::ssize_t>(n));
  for (std::size_t i = 0; i < n; ++i) v.mutable_data()[i] = valid(i);
  return std::move(v);
}

using chrono_bind::BoundSearchParams;
using chrono_bind::StringColumns;

// A string column being built: offsets (n + 1), bytes, one validity byte per row.
struct TextColumn {
  std::vector<std::int32_t> off{0};
  std::vector<std::uint8_t> data;
  std::vector<std::uint8_t> valid;
  bool any_null = false;
  void add(bool ok, std::string_view v) {
    if (ok) data.insert(data.end(), v.begin(), v.end());
    if (data.size() > 0x7fffffffu) throw std::length_error("search_one: the strings exceed 2 GiB");
    off.push_back(static_cast<std::int32_t>(data.size()));
    valid.push_back(ok ? 1 : 0);
    any_null |= !ok;
  }
  chrono_arrow::OwnedColumn column(const char* name) {
    chrono_arrow::OwnedColumn c{name, "u", {}, {}, {}};
    c.values.resize(off.size() * sizeof(std::int32_t));
    std::memcpy(c.values.data(), off.data(), c.values.size());
    c.data = std::move(data);
    if (any_null) c.valid = std::move(valid);
    return c;
  }
};

template <class T>
chrono_arrow::OwnedColumn fixed_column(const char* name, const char* fmt, const std::vector<T>& v) {
  chrono_arrow::OwnedColumn c{name, fmt, {}, {}, {}};
  c.values.resize(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(c.values.data(), v.data(), c.values.size());
  return c;
}

struct PyStore {
  std::unique_ptr<Store> s;

  PyStore(std::size_t dim, const std::string& metric, std::size_t M, std::size_t efc, std::size_t seed)
      : s(std::make_unique<Store>(dim, parse_metric(metric), M, efc, seed)) {}

  static MetaColumns columns(std::size_t n, const carray<std::int64_t>& vf, const carray<std::int64_t>& vt,
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

  static AmendColumns amendments(const carray<std::uint32_t>& rows, const carray<std::int64_t>& tx,
                                  const carray<std::int64_t>& vt, const carray<std::int64_t>& dep) {
    AmendColumns a;
    a.n = static_cast<std::size_t>(rows.size());
    a.rows = rows.data();
    a.tx = checked(tx, a.n, "amend tx");
    a.valid_to = checked(vt, a.n, "amend valid_to");
    a.dep_from = checked(dep, a.n, "amend deprecated_from");
    return a;
  }

  std::size_t ingest(carray<float> vectors, carray<std::int64_t> vf, carray<std::int64_t> vt, carray<std::int64_t> ob,
                     carray<std::int64_t> ing, carray<std::int64_t> ret, carray<std::uint64_t> ver, carray<float> rel,
                     carray<std::int32_t> stem, carray<std::uint16_t> ft, carray<std::uint8_t> dep,
                     std::optional<carray<std::uint64_t>> ids, int threads,
                     std::optional<carray<std::uint32_t>> am_rows, std::optional<carray<std::int64_t>> am_tx,
                     std::optional<carray<std::int64_t>> am_vt, std::optional<carray<std::int64_t>> am_dep) {
    if (vectors.ndim() != 2 || static_cast<std::size_t>(vectors.shape(1)) != s->dim())
      throw std::invalid_argument("vectors must have shape (n, " + std::to_string(s->dim()) + ")");
    std::size_t n = static_cast<std::size_t>(vectors.shape(0));
    MetaColumns c = columns(n, vf, vt, ob, ing, ret, ver, rel, stem, ft, dep, ids);
    if (am_rows.has_value() != am_tx.has_value() || am_rows.has_value() != am_vt.has_value() ||
        am_rows.has_value() != am_dep.has_value())
      throw std::invalid_argument("the amendment arrays go together");
    AmendColumns a;
    if (am_rows) a = amendments(*am_rows, *am_tx, *am_vt, *am_dep);
    py::gil_scoped_release nogil;
    return s->ingest(vectors.data(), c, threads, am_rows ? &a : nullptr);
  }

  void amend(carray<std::uint32_t> rows, carray<std::int64_t> tx, carray<std::int64_t> vt, carray<std::int64_t> dep) {
    AmendColumns a = amendments(rows, tx, vt, dep);
    py::gil_scoped_release nogil;
    s->amend(a);
  }

  // Every amendment: (rows, tx, valid_to, deprecated_from), in order of arrival per row
  // (oldest first), rows ascending.
  py::tuple amendments_out() {
    std::shared_lock<std::shared_mutex> g(s->mutex());
    const auto& m = s->meta();
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

  py::array_t<std::uint32_t> stem_rows(std::int32_t stem) {
    std::shared_lock<std::shared_mutex> g(s->mutex());
    std::vector<std::uint32_t> rows = s->stem_rows(stem);
    std::sort(rows.begin(), rows.end());
    return py::array_t<std::uint32_t>(static_cast<py::ssize_t>(rows.size()), rows.data());
  }

  void restore(const std::string& path, carray<std::int64_t> vf, carray<std::int64_t> vt, carray<std::int64_t> ob,
               carray<std::int64_t> ing, carray<std::int64_t> ret, carray<std::uint64_t> ver, carray<float> rel,
               carray<std::int32_t> stem, carray<std::uint16_t> ft, carray<std::uint8_t> dep, carray<std::uint64_t> ids,
               std::optional<std::size_t> n_stems) {
    std::size_t n = static_cast<std::size_t>(vf.size());
    MetaColumns c = columns(n, vf, vt, ob, ing, ret, ver, rel, stem, ft, dep, ids);
    py::gil_scoped_release nogil;
    s->restore(path, c, n_stems.value_or(Store::kAnyStem));
  }

  // One query through the planner and its result table in one call, built here as
  // search.py's lone path builds it (rank, id, score, similarity, validity, stem_id,
  // version, valid_from, valid_to as known at known_at, title, content, citation,
  // certified): (schema and array capsules) with `with_schema`, else (array capsule, its
  // address). None where the Python path must answer instead: a hit whose similarity
  // overflowed float32 (ip, l2: the Python path raises the QueryError), a row the string
  // columns do not hold yet (a write raced the search) or a citation it would write
  // otherwise (a version string that does not parse, a day outside years 1-9999).
  py::object search_one(carray<float> query, std::int64_t t, std::int64_t known_at, std::int64_t win_start,
                        std::int64_t win_end, const BoundSearchParams& params, const StringColumns& strings,
                        const NameTable& stems, bool zh, bool with_schema) {
    if (query.ndim() != 1 || static_cast<std::size_t>(query.shape(0)) != s->dim())
      throw std::invalid_argument("query must have shape (" + std::to_string(s->dim()) + ",)");
    if (strings.columns() != 3) throw std::invalid_argument("search_one: strings are title, version, content");
    SearchParams p = params.core;
    p.time.t = t;
    p.time.known_at = known_at;
    p.time.win_start = win_start;
    p.time.win_end = win_end;
    std::vector<QueryResult> results(1);
    std::vector<micros> vf, vt;
    std::vector<std::int32_t> stem;
    std::vector<std::uint64_t> ids;
    {
      py::gil_scoped_release nogil;
      std::shared_lock<std::shared_mutex> g(s->mutex());
      std::vector<Searcher> qs;
      qs.emplace_back(*s, p, query.data());
      run_group(qs, *s, results, std::vector<std::size_t>{0});
      const auto& m = s->meta();
      for (const Hit& x : results[0].hits) {
        micros end, from;
        m.known(x.row, known_at, end, from);
        vf.push_back(m.valid_from(x.row));
        vt.push_back(end);
        stem.push_back(m.stem(x.row));
        ids.push_back(s->id_of(x.row));
      }
    }
    const QueryResult& r = results[0];
    const std::size_t n = r.hits.size();
    const Metric metric = s->metric();
    std::vector<std::int32_t> rank(n);
    std::vector<double> score(n);
    std::vector<float> sim(n), val(n);
    for (std::size_t i = 0; i < n; ++i) {
      const Hit& x = r.hits[i];
      if ((metric == Metric::InnerProduct && (!std::isfinite(x.similarity) || !std::isfinite(x.score))) ||
          (metric == Metric::L2 && x.similarity == 0.0f))
        return py::none();
      if (static_cast<std::int64_t>(x.row) >= strings.rows()) return py::none();
      if (stem[i] >= 0 && static_cast<std::size_t>(stem[i]) >= stems.size()) return py::none();
      rank[i] = static_cast<std::int32_t>(i + 1);
      score[i] = x.score;
      sim[i] = x.similarity;
      val[i] = x.validity;
    }
    TextColumn stem_id, version, title, content, citation;
    std::vector<std::uint8_t> to_valid(n), cert(n, r.certified ? 1 : 0);
    bool open = false;
    std::string cite;
    for (std::size_t i = 0; i < n; ++i) {
      const std::int64_t row = r.hits[i].row;
      stem_id.add(stem[i] >= 0, stem[i] >= 0 ? stems.name(static_cast<std::size_t>(stem[i])) : std::string_view());
      std::string_view ti, ve, co;
      const bool has_title = strings.get(0, row, ti), has_version = strings.get(1, row, ve);
      const bool has_content = strings.get(2, row, co);
      title.add(has_title, ti);
      version.add(has_version, ve);
      content.add(has_content, co);
      cite.clear();
      if (!chrono_text::append_citation(cite, zh, has_title, ti, has_version, ve, vf[i])) return py::none();
      citation.add(true, cite);
      to_valid[i] = vt[i] != kOpenEnd;
      open |= vt[i] == kOpenEnd;
    }
    std::vector<chrono_arrow::OwnedColumn> cols;
    cols.push_back(fixed_column("rank", "i", rank));
    cols.push_back(fixed_column("id", "L", ids));
    cols.push_back(fixed_column("score", "g", score));
    cols.push_back(fixed_column("similarity", "f", sim));
    cols.push_back(fixed_column("validity", "f", val));
    cols.push_back(stem_id.column("stem_id"));
    cols.push_back(version.column("version"));
    cols.push_back(fixed_column("valid_from", "tsu:UTC", vf));
    cols.push_back(fixed_column("valid_to", "tsu:UTC", vt));
    if (open) cols.back().valid = std::move(to_valid);
    cols.push_back(title.column("title"));
    cols.push_back(content.column("content"));
    cols.push_back(citation.column("citation"));
    cols.push_back(fixed_column("certified", "b", cert));
    return chrono_arrow::export_batch(cols, n, with_schema);
  }

  py::dict search_batch(carray<float> queries, carray<std::int64_t> t, carray<std::int64_t> known_at,
                        carray<std::int64_t> win_start, carray<std::int64_t> win_end, const BoundSearchParams& params,
                        int threads) {
    if (queries.ndim() != 2 || static_cast<std::size_t>(queries.shape(1)) != s->dim())
      throw std::invalid_argument("queries must have shape (n, " + std::to_string(s->dim()) + ")");
    const std::size_t nq = static_cast<std::size_t>(queries.shape(0));
    const std::int64_t* T = checked(t, nq, "as_of");
    const std::int64_t* K = checked(known_at, nq, "known_at");
    const std::int64_t* WS = checked(win_start, nq, "window start");
    const std::int64_t* WE = checked(win_end, nq, "window end");
    const SearchParams& base = params.core;
    const std::size_t group = params.group;
    std::vector<QueryResult> results(nq);
    const float* Q = queries.data();
    const std::size_t d = s->dim();
    {
      py::gil_scoped_release nogil;
      // Groups of queries close in time share most candidates: sort by T, cut into groups.
      std::vector<std::size_t> order(nq);
      for (std::size_t i = 0; i < nq; ++i) order[i] = i;
      std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return T[a] < T[b]; });
      const std::size_t G = std::max<std::size_t>(1, std::min<std::size_t>(group, 64));
      const std::size_t n_groups = (nq + G - 1) / G;
      parallel_for(n_groups, threads, [&](std::size_t gi) {
        std::shared_lock<std::shared_mutex> g(s->mutex());
        std::vector<Searcher> qs;
        qs.reserve(G);
        std::vector<std::size_t> where;
        for (std::size_t j = gi * G; j < std::min(nq, (gi + 1) * G); ++j) {
          std::size_t i = order[j];
          SearchParams p = base;  // the Searcher keeps its own copy
          p.time.t = T[i];
          p.time.known_at = K[i];
          p.time.win_start = WS[i];
          p.time.win_end = WE[i];
          qs.emplace_back(*s, p, Q + i * d);
          where.push_back(i);
        }
        run_group(qs, *s, results, where);
      });
    }
    std::size_t total = 0;
    for (const auto& r : results) total += r.hits.size();
    auto n = static_cast<py::ssize_t>(total);
    py::array_t<std::int32_t> qi(n), rank(n);
    py::array_t<std::uint32_t> row(n);
    py::array_t<std::uint64_t> ids(n);
    py::array_t<double> score(n);
    py::array_t<float> sim(n), val(n), dec(n), pen(n);
    py::array_t<bool> cert(static_cast<py::ssize_t>(nq));
    py::array_t<std::uint8_t> plan(static_cast<py::ssize_t>(nq));
    py::array_t<std::uint64_t> scored(static_cast<py::ssize_t>(nq)), in_force(static_cast<py::ssize_t>(nq)),
        cands(static_cast<py::ssize_t>(nq));
    std::size_t j = 0;
    {
      std::shared_lock<std::shared_mutex> g(s->mutex());
      for (std::size_t i = 0; i < nq; ++i) {
        const auto& r = results[i];
        cert.mutable_data()[i] = r.certified;
        plan.mutable_data()[i] = static_cast<std::uint8_t>(r.plan);
        scored.mutable_data()[i] = r.scored;
        in_force.mutable_data()[i] = r.in_force;
        cands.mutable_data()[i] = r.candidates;
        for (std::size_t h = 0; h < r.hits.size(); ++h, ++j) {
          const Hit& x = r.hits[h];
          qi.mutable_data()[j] = static_cast<std::int32_t>(i);
          rank.mutable_data()[j] = static_cast<std::int32_t>(h + 1);
          row.mutable_data()[j] = x.row;
          ids.mutable_data()[j] = s->id_of(x.row);
          score.mutable_data()[j] = x.score;
          sim.mutable_data()[j] = x.similarity;
          val.mutable_data()[j] = x.validity;
          dec.mutable_data()[j] = x.decay;
          pen.mutable_data()[j] = x.penalty;
        }
      }
    }
    py::dict out;
    out["query"] = qi; out["rank"] = rank; out["row"] = row; out["id"] = ids; out["score"] = score;
    out["similarity"] = sim; out["validity"] = val; out["decay"] = dec; out["penalty"] = pen;
    out["certified"] = cert; out["plan"] = plan; out["scored"] = scored; out["in_force"] = in_force; out["candidates"] = cands;
    return out;
  }

  void update(carray<std::uint32_t> rows, std::optional<carray<std::int64_t>> valid_to,
              std::optional<carray<std::uint8_t>> deprecated, std::optional<carray<std::int64_t>> retracted_at) {
    std::size_t n = static_cast<std::size_t>(rows.size());
    std::vector<std::uint32_t> r(rows.data(), rows.data() + n);
    const std::int64_t* vt = checked(valid_to, n, "valid_to");
    const std::uint8_t* dp = checked(deprecated, n, "deprecated");
    const std::int64_t* rt = checked(retracted_at, n, "retracted_at");
    py::gil_scoped_release nogil;
    s->update(r, vt, dp, rt);
  }

  py::array_t<std::int64_t> rows_of(carray<std::uint64_t> ids) {
    py::array_t<std::int64_t> out(ids.size());
    std::shared_lock<std::shared_mutex> g(s->mutex());
    for (py::ssize_t i = 0; i < ids.size(); ++i) out.mutable_data()[i] = s->lookup_row(ids.data()[i]);
    return out;
  }

  py::dict columns_out(std::optional<carray<std::int64_t>> known_at) {
    std::shared_lock<std::shared_mutex> g(s->mutex());
    std::vector<std::uint32_t> all(s->meta().size());
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::uint32_t>(i);
    return gather(all.data(), all.size(), known_at);
  }
  // The certified plan's metadata pass (Kernels::bound_rows) on rows of this store, for
  // tests against NumPy; per-query arrays have G <= 64 values and are padded here.
  py::dict bound_rows(carray<std::uint32_t> rows, carray<double> t, carray<std::int64_t> known_at,
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
    std::shared_lock<std::shared_mutex> g(s->mutex());
    for (std::size_t i = 0; i < n; ++i)
      if (rows.data()[i] >= s->meta().size()) throw std::out_of_range("row out of range");
    BoundArgs ba;
    ba.Gp = Gp; ba.G = G; ba.t = T.data(); ba.known_at = K.data(); ba.x1 = X1.data(); ba.x2 = X2.data();
    ba.theta = TH.data(); ba.a = A.data(); ba.b = B.data(); ba.tau = tau; ba.out_pen = out_pen; ba.latest = latest;
    ba.fut_pen = fut_pen.value_or(out_pen);
    ba.specs = s->decay_specs().data(); ba.n_specs = s->decay_specs().size();
    if (mask) { ba.type_mask = mask->data(); ba.mask_n = static_cast<std::size_t>(mask->size()); }
    ba.kept = kept.data(); ba.best = best.data(); ba.val = val.data(); ba.pen = pen.data(); ba.cnt = cnt.data();
    const std::size_t nk = variant(which).bound_rows(ba, &s->meta(), rows.data(), n);
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
  py::tuple validities(carray<std::uint32_t> rows, std::int64_t t, const std::string& which) {
    const std::size_t n = static_cast<std::size_t>(rows.size());
    std::shared_lock<std::shared_mutex> g(s->mutex());
    const MetaTable& meta = s->meta();
    for (std::size_t i = 0; i < n; ++i)
      if (rows.data()[i] >= meta.size()) throw std::out_of_range("row out of range");
    const Kernels& k = variant(which);
    py::array_t<double> got(static_cast<py::ssize_t>(n)), exact(static_cast<py::ssize_t>(n));
    k.validities(s->decay_specs().data(), &meta, rows.data(), n, t, got.mutable_data());
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t r = rows.data()[i];
      const double age = age_days(t, meta.observed_at(r));
      double d;
      k.decay(s->decay_specs()[meta.fact_type(r)], &age, &d, 1);
      exact.mutable_data()[i] = static_cast<double>(meta.reliability(r)) * d;
    }
    return py::make_tuple(got, exact);
  }

  py::dict columns_at(carray<std::uint32_t> rows, std::optional<carray<std::int64_t>> known_at) {
    std::shared_lock<std::shared_mutex> g(s->mutex());
    for (py::ssize_t i = 0; i < rows.size(); ++i)
      if (rows.data()[i] >= s->meta().size()) throw std::out_of_range("row out of range");
    return gather(rows.data(), static_cast<std::size_t>(rows.size()), known_at);
  }
  // What a result table reads of its hits' metadata (search.py, _hits), in one call:
  // valid_from, valid_to as known at known_at (one time, or one per row; amendments
  // applied as in gather), valid_to's validity (false where open) or None when none is
  // open, and the stem codes (-1: none). columns_at gives the same and eight more columns,
  // each an array made per call (~1.5 us each in place after a lone search's scan).
  py::tuple hit_meta(carray<std::uint32_t> rows, carray<std::int64_t> known_at) {
    const auto n = static_cast<std::size_t>(rows.size());
    if (known_at.ndim() != 1 || (known_at.size() != 1 && static_cast<std::size_t>(known_at.size()) != n))
      throw std::invalid_argument("known_at must hold one time or one per row");
    py::array_t<std::int64_t> vf(static_cast<py::ssize_t>(n)), vt(static_cast<py::ssize_t>(n));
    py::array_t<std::int32_t> stem(static_cast<py::ssize_t>(n));
    bool open = false;
    {
      std::shared_lock<std::shared_mutex> g(s->mutex());
      const auto& m = s->meta();
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
  // caller holds the lock. known_at: the columns as ingested (None), or with the
  // amendments known at that transaction time (one, or one per row) applied: valid_to
  // brought forward, and deprecated_from (the valid time deprecated from: INT64_MIN always,
  // INT64_MAX never; `deprecated` is then 1 when deprecated from some time).
  py::dict gather(const std::uint32_t* rows, std::size_t count, const std::optional<carray<std::int64_t>>& known_at) {
    if (known_at && known_at->size() != 1 && static_cast<std::size_t>(known_at->size()) != count)
      throw std::invalid_argument("known_at must hold one time or one per row");
    const auto& m = s->meta();
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
      dep.mutable_data()[i] = m.deprecated(r) ? 1 : 0; ids.mutable_data()[i] = s->id_of(r);
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

  py::array_t<float> vectors(carray<std::uint32_t> rows) {
    std::shared_lock<std::shared_mutex> g(s->mutex());
    std::size_t d = s->dim();
    py::array_t<float> out({static_cast<py::ssize_t>(rows.size()), static_cast<py::ssize_t>(d)});
    for (py::ssize_t i = 0; i < rows.size(); ++i) {
      std::uint32_t r = rows.data()[i];
      if (r >= s->meta().size()) throw std::out_of_range("row out of range");
      std::memcpy(out.mutable_data() + i * static_cast<py::ssize_t>(d), s->ann().vector(r), d * sizeof(float));
    }
    return out;
  }

  // Per row, the fingerprint storage.py checks a store's vectors against: the sum over j
  // of bits(x_j) * w_j modulo 2^64 (bits: the float32 bit pattern as an unsigned integer),
  // for rows [0, n). `weights`: at least dim of them. The GIL is released; rows are split
  // over `threads` workers (the sum is exact modular arithmetic: any order gives the same).
  py::array_t<std::uint64_t> vector_hashes(carray<std::uint64_t> weights, int threads) {
    std::shared_lock<std::shared_mutex> g(s->mutex());
    const std::size_t d = s->dim(), n = s->meta().size();
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
          const float* x = s->ann().vector(static_cast<std::uint32_t>(r));
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

  py::array_t<std::uint32_t> rows_valid_at(std::int64_t t) {
    std::shared_lock<std::shared_mutex> g(s->mutex());
    std::vector<std::uint32_t> rows;
    s->intervals().for_each_valid_at(t, [&](std::uint32_t r) { rows.push_back(r); });
    std::sort(rows.begin(), rows.end());
    return py::array_t<std::uint32_t>(static_cast<py::ssize_t>(rows.size()), rows.data());
  }
  py::array_t<std::uint32_t> rows_overlapping(std::int64_t a, std::int64_t b) {
    std::shared_lock<std::shared_mutex> g(s->mutex());
    std::vector<std::uint32_t> rows;
    s->intervals().for_each_overlapping(a, b, [&](std::uint32_t r) { rows.push_back(r); });
    std::sort(rows.begin(), rows.end());
    return py::array_t<std::uint32_t>(static_cast<py::ssize_t>(rows.size()), rows.data());
  }
  // The freshness lists (tests): rows of a fact-type code observed in [lo, hi], sorted, and
  // the list's own count of them.
  py::tuple rows_observed_between(std::uint16_t type, std::int64_t lo, std::int64_t hi) {
    std::shared_lock<std::shared_mutex> g(s->mutex());
    std::vector<std::uint32_t> rows;
    s->freshness().for_each_observed_between(type, lo, hi, [&](std::uint32_t r) { rows.push_back(r); });
    std::sort(rows.begin(), rows.end());
    return py::make_tuple(py::array_t<std::uint32_t>(static_cast<py::ssize_t>(rows.size()), rows.data()),
                          s->freshness().count_observed_between(type, lo, hi));
  }
};

}  // namespace

// The names of `codes` as Arrow string buffers (int32 offsets, UTF-8 data); code -1 gives
// an empty slot (the caller marks it null).
static py::tuple t_take(const NameTable& t, carray<std::int32_t> codes) {
  const std::int32_t* c = codes.data();
  const auto n = static_cast<std::size_t>(codes.size());
  py::array_t<std::int32_t> offsets(static_cast<py::ssize_t>(n + 1));
  std::int32_t* o = offsets.mutable_data();
  std::size_t total = 0;
  o[0] = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (c[i] < -1 || (c[i] >= 0 && static_cast<std::size_t>(c[i]) >= t.size()))
      throw py::index_error("name code " + std::to_string(c[i]) + " out of range");
    if (c[i] >= 0) total += t.name(static_cast<std::size_t>(c[i])).size();
    if (total > 0x7fffffffu) throw std::length_error("names exceed 2 GiB");
    o[i + 1] = static_cast<std::int32_t>(total);
  }
  py::array_t<std::uint8_t> data(static_cast<py::ssize_t>(total));
  char* d = reinterpret_cast<char*>(data.mutable_data());
  for (std::size_t i = 0; i < n; ++i)
    if (c[i] >= 0) {
      const std::string_view v = t.name(static_cast<std::size_t>(c[i]));
      std::copy(v.begin(), v.end(), d + o[i]);
    }
  return py::make_tuple(offsets, data);
}

void bind_store(py::module_& m) {
  m.def("probe_choice", [](std::size_t n, carray<std::uint64_t> f) {
    // which queries of a group the planner sends to the probe (probe.hpp), given each one's
    // rows in force (0: the probe does not apply) and the store's rows: tests check the rule
    if (f.ndim() != 1) throw std::invalid_argument("f must be 1-D");
    const std::size_t G = static_cast<std::size_t>(f.size());
    std::vector<std::size_t> fs(f.data(), f.data() + G);
    std::vector<char> applies(G);
    probe_choice(n, fs.data(), G, applies.data());
    py::array_t<bool> out(static_cast<py::ssize_t>(G));
    for (std::size_t g = 0; g < G; ++g) out.mutable_data()[g] = applies[g] != 0;
    return out;
  }, py::arg("n"), py::arg("f"));
  // The GIL stays held in every method: a table is read and extended under it only.
  py::class_<NameTable>(m, "Names")
      .def(py::init<>())
      .def("__len__", &NameTable::size)
      .def("__getitem__", [](const NameTable& t, std::int64_t code) {
        if (code < 0 || static_cast<std::size_t>(code) >= t.size()) throw py::index_error("name code out of range");
        return to_py(t.name(static_cast<std::size_t>(code)));
      }, py::arg("code"))
      .def("find", [](const NameTable& t, py::handle s) { return t.find(utf8(s, "name")); }, py::arg("name"))
      .def("add_all", [](NameTable& t, const py::sequence& names) {
        // codes of `names`, adding the new ones in order; all or nothing
        const std::size_t n0 = t.size();
        py::array_t<std::int32_t> out(static_cast<py::ssize_t>(names.size()));
        try {
          for (std::size_t i = 0; i < names.size(); ++i) {
            const std::uint32_t c = t.add(utf8(names[i], "name"));
            if (c > 0x7fffffffu) throw std::length_error("more than 2^31 - 1 stems");
            out.mutable_data()[i] = static_cast<std::int32_t>(c);
          }
        } catch (...) {
          t.truncate(n0);
          throw;
        }
        return out;
      }, py::arg("names"))
      .def("take", &t_take, py::arg("codes"))
      .def("take_valid", [](const NameTable& t, carray<std::int32_t> codes) {
        // take's (offsets, data) and the validity (false for code -1), None when every code
        // names a stem: a result table's stem_id column in one call
        py::tuple od = t_take(t, codes);
        const std::int32_t* c = codes.data();
        const auto n = static_cast<std::size_t>(codes.size());
        const bool none = std::any_of(c, c + n, [](std::int32_t x) { return x < 0; });
        return py::make_tuple(od[0], od[1], validity(n, none, [&](std::size_t i) { return c[i] >= 0; }));
      }, py::arg("codes"))
      .def("truncate", &NameTable::truncate, py::arg("n"))
      .def("tolist", [](const NameTable& t) {
        py::list out(t.size());
        for (std::size_t i = 0; i < t.size(); ++i) out[i] = to_py(t.name(i));
        return out;
      })
      .def("memory_bytes", &NameTable::memory_bytes);

  py::class_<StringColumns>(m, "StringColumns")
      .def(py::init([](const py::sequence& columns, carray<std::int64_t> starts) {
        return StringColumns(columns, starts, "StringColumns");
      }), py::arg("columns"), py::arg("starts"))
      .def_property_readonly("rows", &StringColumns::rows)
      .def("take", &StringColumns::take, py::arg("rows"));

  m.def("citation", [](std::optional<std::string> title, std::optional<std::string> version, std::int64_t valid_from,
                       bool zh) -> py::object {
    // one citation as Store.search_one writes it (None where it defers to Python), for tests
    std::string out;
    if (!chrono_text::append_citation(out, zh, title.has_value(), title ? *title : std::string(), version.has_value(),
                                      version ? *version : std::string(), valid_from))
      return py::none();
    return py::str(out);
  }, py::arg("title"), py::arg("version"), py::arg("valid_from"), py::arg("zh"));

  py::class_<PyStore>(m, "Store")
      .def(py::init<std::size_t, const std::string&, std::size_t, std::size_t, std::size_t>(), py::arg("dim"),
           py::arg("metric"), py::arg("M"), py::arg("ef_construction"), py::arg("seed"))
      .def("set_decay", [](PyStore& p, carray<double> table) { p.s->set_decay(specs_from(table)); }, py::arg("table"))
      .def("ingest", &PyStore::ingest, py::arg("vectors"), py::arg("valid_from"), py::arg("valid_to"),
           py::arg("observed_at"), py::arg("ingested_at"), py::arg("retracted_at"), py::arg("version"),
           py::arg("reliability"), py::arg("stem"), py::arg("fact_type"), py::arg("deprecated"), py::arg("ids"),
           py::arg("threads"), py::arg("amend_rows") = py::none(), py::arg("amend_tx") = py::none(),
           py::arg("amend_valid_to") = py::none(), py::arg("amend_deprecated_from") = py::none())
      .def("amend", &PyStore::amend, py::arg("rows"), py::arg("tx"), py::arg("valid_to"), py::arg("deprecated_from"))
      .def("amendments", &PyStore::amendments_out)
      .def("stem_rows", &PyStore::stem_rows, py::arg("stem"))
      .def("restore", &PyStore::restore, py::arg("path"), py::arg("valid_from"), py::arg("valid_to"),
           py::arg("observed_at"), py::arg("ingested_at"), py::arg("retracted_at"), py::arg("version"),
           py::arg("reliability"), py::arg("stem"), py::arg("fact_type"), py::arg("deprecated"), py::arg("ids"),
           py::arg("n_stems") = py::none())
      .def("search_batch", &PyStore::search_batch, py::arg("queries"), py::arg("t"), py::arg("known_at"),
           py::arg("win_start"), py::arg("win_end"), py::arg("params"), py::arg("threads"))
      .def("search_one", &PyStore::search_one, py::arg("query"), py::arg("t"), py::arg("known_at"),
           py::arg("win_start"), py::arg("win_end"), py::arg("params"), py::arg("strings"), py::arg("stems"),
           py::arg("zh"), py::arg("with_schema"))
      .def("update", &PyStore::update, py::arg("rows"), py::arg("valid_to") = py::none(),
           py::arg("deprecated") = py::none(), py::arg("retracted_at") = py::none())
      .def("rows_of", &PyStore::rows_of, py::arg("ids"))
      .def("columns", &PyStore::columns_out, py::arg("known_at") = py::none())
      .def("columns_at", &PyStore::columns_at, py::arg("rows"), py::arg("known_at") = py::none())
      .def("hit_meta", &PyStore::hit_meta, py::arg("rows"), py::arg("known_at"))
      .def("bound_rows", &PyStore::bound_rows, py::arg("rows"), py::arg("t"), py::arg("known_at"), py::arg("x1"),
           py::arg("x2"), py::arg("theta"), py::arg("a"), py::arg("b"), py::arg("tau"), py::arg("out_pen"),
           py::arg("latest"), py::arg("mask") = py::none(), py::arg("variant") = "", py::arg("fut_pen") = py::none())
      .def("validities", &PyStore::validities, py::arg("rows"), py::arg("t"), py::arg("variant") = "")
      .def("vectors", &PyStore::vectors, py::arg("rows"))
      .def("vector_hashes", &PyStore::vector_hashes, py::arg("weights"), py::arg("threads"))
      .def("set_partition", [](PyStore& p, carray<float> centroids, double delta) {
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
      }, py::arg("centroid"))
      .def("compact", [](PyStore& p, carray<std::uint32_t> rows) {
        // (codes, scale, err) of the compact copy for `rows` (tests check its bound)
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
      }, py::arg("rows"))
      .def("rows_valid_at", &PyStore::rows_valid_at, py::arg("t"))
      .def("rows_overlapping", &PyStore::rows_overlapping, py::arg("start"), py::arg("end"))
      .def("rows_observed_between", &PyStore::rows_observed_between, py::arg("type"), py::arg("lo"), py::arg("hi"))
      .def("valid_at_upper_bound", [](PyStore& p, std::int64_t t) {
        std::shared_lock<std::shared_mutex> g(p.s->mutex());
        return p.s->intervals().valid_at_upper_bound(t);
      }, py::arg("t"))
      .def("count_valid_at", [](PyStore& p, std::int64_t t, std::optional<std::int64_t> k) {
        std::shared_lock<std::shared_mutex> g(p.s->mutex());
        return k ? p.s->count_valid_at_known(t, *k) : p.s->count_valid_at_now(t);
      }, py::arg("t"), py::arg("known_at") = py::none())
      .def("count_overlapping", [](PyStore& p, std::int64_t a, std::int64_t b, std::optional<std::int64_t> k) {
        std::shared_lock<std::shared_mutex> g(p.s->mutex());
        return k ? p.s->count_overlapping_known(a, b, *k) : p.s->count_overlapping_now(a, b);
      }, py::arg("start"), py::arg("end"), py::arg("known_at") = py::none())
      .def("save_graph", [](PyStore& p, const std::string& path) {
        std::shared_lock<std::shared_mutex> g(p.s->mutex());
        p.s->ann().save(path);
      }, py::arg("path"))
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

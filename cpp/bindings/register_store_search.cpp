// Store.search_one and Store.search_batch: queries through the planner (planner.hpp) as
// one _core.SearchParams describes them (checked when it was made), each query at its own
// times, with the GIL released; a batch's groups run on a thread pool.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>
#include "chrono/names.hpp"
#include "chrono/planner.hpp"
#include "arrow_export.hpp"
#include "common.hpp"
#include "result_text.hpp"
#include "search_params.hpp"
#include "store_binding.hpp"
#include "string_columns.hpp"

using namespace chrono;
using chrono_arrow::OwnedColumn;
using chrono_bind::BoundSearchParams;
using chrono_bind::PyStore;
using chrono_bind::StoreClass;
using chrono_bind::StringColumns;

namespace {

// Every option of `params`, and one query's times.
SearchParams at_times(const BoundSearchParams& params, micros t, micros known_at, micros win_start, micros win_end) {
  SearchParams p = params.core;
  p.time.t = t;
  p.time.known_at = known_at;
  p.time.win_start = win_start;
  p.time.win_end = win_end;
  return p;
}

// ------------------------------------------------------------------------- a lone search

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
  OwnedColumn column(const char* name) {
    OwnedColumn c{name, "u", {}, {}, {}};
    c.values.resize(off.size() * sizeof(std::int32_t));
    std::memcpy(c.values.data(), off.data(), c.values.size());
    c.data = std::move(data);
    if (any_null) c.valid = std::move(valid);
    return c;
  }
};

template <class T>
OwnedColumn fixed_column(const char* name, const char* fmt, const std::vector<T>& v) {
  OwnedColumn c{name, fmt, {}, {}, {}};
  c.values.resize(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(c.values.data(), v.data(), c.values.size());
  return c;
}

// A lone query's answer and what its table reads of its hits' rows, taken under the
// store's lock: valid_from, valid_to as known at the query's known_at, stem code, id.
struct LoneHits {
  QueryResult result;
  std::vector<micros> valid_from, valid_to;
  std::vector<std::int32_t> stem;
  std::vector<std::uint64_t> ids;
};

// The caller has released the GIL.
LoneHits run_lone(const Store& st, SearchParams p, const FilterProgram* filter, const float* query) {
  std::vector<QueryResult> results(1);
  LoneHits h;
  std::shared_lock<std::shared_mutex> g(st.mutex());
  const std::shared_ptr<const RowSet> rows = filter ? st.filter_rows(*filter) : nullptr;
  p.filter = rows.get();
  std::vector<Searcher> qs;
  qs.emplace_back(st, p, query);
  run_group(qs, st, results, std::vector<std::size_t>{0});
  const auto& m = st.meta();
  for (const Hit& x : results[0].hits) {
    micros end, from;
    m.known(x.row, p.time.known_at, end, from);
    h.valid_from.push_back(m.valid_from(x.row));
    h.valid_to.push_back(end);
    h.stem.push_back(m.stem(x.row));
    h.ids.push_back(st.id_of(x.row));
  }
  h.result = std::move(results[0]);
  return h;
}

// Whether the Python path must answer instead: a hit whose similarity overflowed float32
// (ip, l2: the Python path raises the QueryError), a row the string columns do not hold
// yet (a write raced the search), a stem code the names do not hold.
bool python_answers(const LoneHits& h, Metric metric, const StringColumns& strings, const NameTable& stems) {
  for (std::size_t i = 0; i < h.result.hits.size(); ++i) {
    const Hit& x = h.result.hits[i];
    if ((metric == Metric::InnerProduct && (!std::isfinite(x.similarity) || !std::isfinite(x.score))) ||
        (metric == Metric::L2 && x.similarity == 0.0f))
      return true;
    if (static_cast<std::int64_t>(x.row) >= strings.rows()) return true;
    if (h.stem[i] >= 0 && static_cast<std::size_t>(h.stem[i]) >= stems.size()) return true;
  }
  return false;
}

// The lone table's columns, as search.py's lone path builds them; nothing where a
// citation is the Python path's to write (a version string that does not parse, a day
// outside years 1-9999).
std::optional<std::vector<OwnedColumn>> lone_columns(const LoneHits& h, const StringColumns& strings,
                                                     const NameTable& stems, bool zh) {
  const QueryResult& r = h.result;
  const std::size_t n = r.hits.size();
  std::vector<std::int32_t> rank(n);
  std::vector<double> score(n);
  std::vector<float> sim(n), val(n);
  for (std::size_t i = 0; i < n; ++i) {
    rank[i] = static_cast<std::int32_t>(i + 1);
    score[i] = r.hits[i].score;
    sim[i] = r.hits[i].similarity;
    val[i] = r.hits[i].validity;
  }
  TextColumn stem_id, version, title, content, citation;
  std::vector<std::uint8_t> to_valid(n), cert(n, r.certified ? 1 : 0);
  bool open = false;
  std::string cite;
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t row = r.hits[i].row;
    const std::int32_t s = h.stem[i];
    stem_id.add(s >= 0, s >= 0 ? stems.name(static_cast<std::size_t>(s)) : std::string_view());
    std::string_view ti, ve, co;
    const bool has_title = strings.get(0, row, ti), has_version = strings.get(1, row, ve);
    const bool has_content = strings.get(2, row, co);
    title.add(has_title, ti);
    version.add(has_version, ve);
    content.add(has_content, co);
    cite.clear();
    if (!chrono_text::append_citation(cite, zh, has_title, ti, has_version, ve, h.valid_from[i])) return std::nullopt;
    citation.add(true, cite);
    to_valid[i] = h.valid_to[i] != kOpenEnd;
    open |= h.valid_to[i] == kOpenEnd;
  }
  std::vector<OwnedColumn> cols;
  cols.push_back(fixed_column("rank", "i", rank));
  cols.push_back(fixed_column("id", "L", h.ids));
  cols.push_back(fixed_column("score", "g", score));
  cols.push_back(fixed_column("similarity", "f", sim));
  cols.push_back(fixed_column("validity", "f", val));
  cols.push_back(stem_id.column("stem_id"));
  cols.push_back(version.column("version"));
  cols.push_back(fixed_column("valid_from", "tsu:UTC", h.valid_from));
  cols.push_back(fixed_column("valid_to", "tsu:UTC", h.valid_to));
  if (open) cols.back().valid = std::move(to_valid);
  cols.push_back(title.column("title"));
  cols.push_back(content.column("content"));
  cols.push_back(citation.column("citation"));
  cols.push_back(fixed_column("certified", "b", cert));
  return cols;
}

// One query through the planner and its result table in one call (rank, id, score,
// similarity, validity, stem_id, version, valid_from, valid_to as known at known_at,
// title, content, citation, certified): (schema and array capsules) with `with_schema`,
// else (array capsule, its address); None where the Python path must answer instead.
py::object search_one(PyStore& p, carray<float> query, std::int64_t t, std::int64_t known_at, std::int64_t win_start,
                      std::int64_t win_end, const BoundSearchParams& params, const StringColumns& strings,
                      const NameTable& stems, bool zh, bool with_schema) {
  if (query.ndim() != 1 || static_cast<std::size_t>(query.shape(0)) != p.s->dim())
    throw std::invalid_argument("query must have shape (" + std::to_string(p.s->dim()) + ",)");
  if (strings.columns() != 3) throw std::invalid_argument("search_one: strings are title, version, content");
  const SearchParams sp = at_times(params, t, known_at, win_start, win_end);
  LoneHits h;
  {
    py::gil_scoped_release nogil;
    h = run_lone(*p.s, sp, params.filter.get(), query.data());
  }
  if (python_answers(h, p.s->metric(), strings, stems)) return py::none();
  std::optional<std::vector<OwnedColumn>> cols = lone_columns(h, strings, stems, zh);
  if (!cols) return py::none();
  return chrono_arrow::export_batch(*cols, h.result.hits.size(), with_schema);
}

// ------------------------------------------------------------------------- a batch

// Per query: T, known_at, window start and end.
struct QueryTimes {
  const std::int64_t *t, *known_at, *win_start, *win_end;
};

// The caller has released the GIL. Queries close in time share most candidates: sorted by
// T, cut into groups of params.group (0 counts as 1, at most 64) run on `threads` threads.
std::vector<QueryResult> run_batch(const Store& st, const float* Q, std::size_t nq, const QueryTimes& times,
                                   const BoundSearchParams& params, int threads) {
  std::vector<QueryResult> results(nq);
  const std::size_t d = st.dim();
  std::vector<std::size_t> order(nq);
  for (std::size_t i = 0; i < nq; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return times.t[a] < times.t[b]; });
  const std::size_t G = std::max<std::size_t>(1, std::min<std::size_t>(params.group, 64));
  const std::size_t n_groups = (nq + G - 1) / G;
  if (params.filter) {  // a program the store cannot run fails here, before any thread starts
    std::shared_lock<std::shared_mutex> g(st.mutex());
    st.filter_rows(*params.filter);
  }
  parallel_for(n_groups, threads, [&](std::size_t gi) {
    std::shared_lock<std::shared_mutex> g(st.mutex());
    // each group its own rows: the store may have grown since (the cache adds only new rows)
    const std::shared_ptr<const RowSet> rows = params.filter ? st.filter_rows(*params.filter) : nullptr;
    std::vector<Searcher> qs;
    qs.reserve(G);
    std::vector<std::size_t> where;
    for (std::size_t j = gi * G; j < std::min(nq, (gi + 1) * G); ++j) {
      const std::size_t i = order[j];
      // the Searcher keeps its own copy
      SearchParams sp = at_times(params, times.t[i], times.known_at[i], times.win_start[i], times.win_end[i]);
      sp.filter = rows.get();
      qs.emplace_back(st, sp, Q + i * d);
      where.push_back(i);
    }
    run_group(qs, st, results, where);
  });
  return results;
}

// A batch's answer: per hit query, rank, row, id, score, similarity, validity, decay,
// penalty; per query certified, plan, scored, in_force, candidates.
py::dict batch_answer(const Store& st, const std::vector<QueryResult>& results) {
  const std::size_t nq = results.size();
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
    std::shared_lock<std::shared_mutex> g(st.mutex());
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
        ids.mutable_data()[j] = st.id_of(x.row);
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

py::dict search_batch(PyStore& p, carray<float> queries, carray<std::int64_t> t, carray<std::int64_t> known_at,
                      carray<std::int64_t> win_start, carray<std::int64_t> win_end, const BoundSearchParams& params,
                      int threads) {
  if (queries.ndim() != 2 || static_cast<std::size_t>(queries.shape(1)) != p.s->dim())
    throw std::invalid_argument("queries must have shape (n, " + std::to_string(p.s->dim()) + ")");
  const std::size_t nq = static_cast<std::size_t>(queries.shape(0));
  const QueryTimes times{checked(t, nq, "as_of"), checked(known_at, nq, "known_at"),
                         checked(win_start, nq, "window start"), checked(win_end, nq, "window end")};
  std::vector<QueryResult> results;
  {
    py::gil_scoped_release nogil;
    results = run_batch(*p.s, queries.data(), nq, times, params, threads);
  }
  return batch_answer(*p.s, results);
}

}  // namespace

void register_store_search(StoreClass& cls) {
  cls.def("search_one", &search_one, py::arg("query"), py::arg("t"), py::arg("known_at"), py::arg("win_start"),
          py::arg("win_end"), py::arg("params"), py::arg("strings"), py::arg("stems"), py::arg("zh"),
          py::arg("with_schema"))
      .def("search_batch", &search_batch, py::arg("queries"), py::arg("t"), py::arg("known_at"),
           py::arg("win_start"), py::arg("win_end"), py::arg("params"), py::arg("threads"));
}

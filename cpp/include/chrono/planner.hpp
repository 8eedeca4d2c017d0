// Fused temporal top-k and the planner that chooses how to compute it.
//
// Score of item e for query q at time T:
//   V(e) = q_e * D_j(T - t_e)                      validity (paper eq. 2/3)
//   product: s+ * V      linear: alpha * s + (1 - alpha) * V       (s+ = clip(s, 0, 1))
//   times a penalty for items not in force (latest mode, deprecated="penalize");
//   items with V < tau never qualify; one version per stem when arbitrating.
// Both fusions are monotone in s and in V, and s <= s_cap, so
//   bound(e) = fuse(s_cap, V(e)) * penalty(e)
// caps the score of an item whose similarity is still unknown (threshold algorithm).
//
// The certified plan, per query (run for a group of queries at once, see run_group):
//  1. Seed. When more than seed_min items are in force, a short filtered HNSW walk
//     (seed_ef) scores a few similar, eligible items; the k-th of their scores is a valid
//     lower bound theta on the final k-th score.
//  2. Enumerate candidates from metadata alone, whichever list is shorter:
//     - the interval index: the items in force at T (or overlapping the window);
//     - the freshness lists: per fact type, items whose decay can still reach the level
//       L with fuse(s_cap, L) = theta (a suffix of the list, by binary search).
//     Items whose bound is below theta are dropped. In latest mode, items out of force
//     everywhere in the group come in a second stage, at the level theta / penalty.
//  3. Score: rows in order of their best bound (theta rises); a row is skipped once no
//     query's bound reaches its k-th score. Dense metrics read the row's compact int8 copy
//     first (AnnIndex::compact): its similarity cap decides per query whether the full
//     vector must be dotted at all. A row needed by several queries is fetched once.
//  Every item that could still tie or beat the final k-th score has been scored, so the
//  answer is exact ("certified"), whatever HNSW's recall.
//  Step 3 in the similarity-first order (SearchParams::scan, the default for dense metrics;
//  run_group): the rows of step 2 in storage order, no per-(row, query) metadata pass.
//  A row-level bound (its reliability times its largest decay over the group's times,
//  its penalty if it is out of force for every query) drops a row below every theta; the
//  others get their compact dots with all the group's queries in batches, and only the
//  queries whose cap-based bound (per-query penalty, the row's largest validity) reaches
//  their theta read the exact validity, penalty and full vector. It wins where validity
//  prunes little (linear fusion, gentle decay, or most of the group's rows in force);
//  "bounds" is the order above.
//
// The graph plan (approximate): when exact=False and more than `scan_limit` candidates
// survive step 2, walk HNSW in similarity order with the eligibility filter inside
// hnswlib's search, widening (ef doubles) until the similarity frontier s_f satisfies
// fuse(s_f, 1) < theta or ef reaches ef_max. Not certified.
#pragma once
#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>
#include "probe.hpp"
#include "scan_bounds_first.hpp"
#include "scan_one.hpp"
#include "scan_similarity_first.hpp"
#include "searcher.hpp"

namespace chrono {

// Rows a group of queries must examine, from metadata alone, each row once.
// Stage 0: rows that can be in force at some T of the group: from the interval index, or
// from the freshness lists (per fact type, rows whose decay can still reach some query's
// theta, in force or not) when those list fewer rows. Returns true if stage 0 used the
// freshness lists (then it covered the out-of-force rows too).
// Stage 1 (latest mode, after stage 0 raised theta): rows out of force everywhere in the
// group, from the freshness lists at the level theta / penalty, usually above 1: nothing.
template <class Emit>
inline bool group_rows(std::vector<Searcher>& qs, const Store& st, int stage, Emit&& emit) {
  const SearchParams& p0 = qs[0].params();
  const Mode mode = p0.time.mode;
  const auto& meta = st.meta();
  const RowSet* filter = p0.filter;  // the where= filter (one for the group: one key)
  micros t_lo = kOpenEnd, t_hi = kOpenStart, w_lo = kOpenEnd, w_hi = kOpenStart;
  bool seeded = true;
  for (const Searcher& q : qs) {
    const TimeContext& tc = q.params().time;
    t_lo = std::min(t_lo, tc.t); t_hi = std::max(t_hi, tc.t);
    w_lo = std::min(w_lo, tc.win_start); w_hi = std::max(w_hi, tc.win_end);
    seeded = seeded && q.current_theta() > -std::numeric_limits<double>::infinity();
  }
  const micros t_end = t_hi == kOpenEnd ? t_hi : t_hi + 1;
  const micros a = mode == Mode::Window ? w_lo : t_lo, b = mode == Mode::Window ? w_hi : t_end;
  const auto& fr = st.freshness();
  const std::size_t n_types = std::min(fr.n_types(), st.decay_specs().size());
  std::vector<std::pair<micros, micros>> ranges;
  auto ranges_for = [&](double pen) {
    std::size_t count = 0;
    ranges.assign(n_types, {kOpenEnd, kOpenStart});
    for (std::size_t j = 0; j < n_types; ++j) {
      if (!p0.type_mask.empty() && (j >= p0.type_mask.size() || !p0.type_mask[j])) continue;
      for (const Searcher& q : qs) {
        micros lo, hi;
        if (!q.fresh_range_for(j, pen, lo, hi)) continue;
        ranges[j].first = std::min(ranges[j].first, lo);
        ranges[j].second = std::max(ranges[j].second, hi);
      }
      if (ranges[j].first <= ranges[j].second)
        count += fr.count_observed_between(static_cast<std::uint16_t>(j), ranges[j].first, ranges[j].second);
    }
    return count;
  };
  auto emit_ranges = [&](auto&& keep) {
    for (std::size_t j = 0; j < ranges.size(); ++j)
      if (ranges[j].first <= ranges[j].second)
        fr.for_each_observed_between(static_cast<std::uint16_t>(j), ranges[j].first, ranges[j].second,
                                     [&](std::uint32_t r) { if (keep(r)) emit(r); });
  };
  if (stage == 1) {
    // A row out of force for the whole group either starts after every query's T (not yet
    // valid: the future policy) or ended before every T (the deprecated policy); a policy
    // that excludes its rows drops them here, before any bound is computed (future="exclude"
    // at 1% in force: ~99% of the rows).
    const double old_pen = qs[0].out_of_force_penalty(), fut_pen = qs[0].future_penalty();
    const double out_pen = std::max(old_pen, fut_pen);
    if (out_pen <= 0.0) return false;
    auto keep = [&](std::uint32_t r) {
      if (filter && !filter->test(r)) return false;
      if (meta.overlaps(r, a, b)) return false;
      return meta.valid_from(r) >= b ? fut_pen > 0.0 : old_pen > 0.0;
    };
    if (!seeded) {  // fewer than k eligible rows in force: every other row may count
      if (filter) filter->for_each([&](std::uint32_t r) { if (keep(r)) emit(r); });
      else for (std::uint32_t r = 0; r < meta.size(); ++r) if (keep(r)) emit(r);
      return false;
    }
    if (ranges_for(out_pen) == 0) return false;
    if (fut_pen > 0.0) { emit_ranges(keep); return false; }
    // Only rows that ended by a (valid_to <= a) remain: past a, the late lists alone (the
    // freshness lists' note); at an early T this skips most of the store.
    for (std::size_t j = 0; j < ranges.size(); ++j)
      if (ranges[j].first <= ranges[j].second)
        fr.for_each_ended_observed_between(static_cast<std::uint16_t>(j), ranges[j].first, ranges[j].second, a,
                                           [&](std::uint32_t r) { if (keep(r)) emit(r); });
    return false;
  }
  auto passes = [filter](std::uint32_t r) { return !filter || filter->test(r); };
  if (mode == Mode::All && !seeded) {
    if (filter) filter->for_each(emit);
    else for (std::uint32_t r = 0; r < meta.size(); ++r) emit(r);
    return true;
  }
  std::size_t by_interval = mode == Mode::All ? meta.size() : st.intervals().count_overlapping(a, b);
  const std::size_t by_fresh = seeded ? ranges_for(1.0) : meta.size() + 1;  // fills `ranges`
  // A where= filter passing fewer rows than either list: its rows, in force or not (the
  // scans bound each one; a selective filter then costs its own rows, whatever the time).
  // Against the interval index the choice is by cost. The filter's F rows each cost their
  // metadata (~12 ns, a cache miss), those in force (about a share I / n) their compact
  // copy too (~70 ns); the index enumerates the I rows in force without reading their
  // metadata (IntervalIndex::stab; ~1.2-1.7 ns a row with the filter's bit test) and hands the
  // scan those that pass (about I F / n), each costing both. Measured per lone call (core
  // only) at 200k x 384: filter 10% / in force 10%, 445 us by the filter's rows against
  // 197 by the index; filter 1% / in force 50%, 87 against 211; the constants fit those
  // and six more pairs within ~20%. Where rows out of force may still count (latest mode
  // with a penalty) the filter's rows also spare the second stage: the smaller list.
  if (filter && filter->count <= by_fresh) {
    constexpr double kIterNs = 1.5, kMetaNs = 12.0, kRowNs = 70.0;
    const double F = static_cast<double>(filter->count), I = static_cast<double>(by_interval),
                 n = static_cast<double>(std::max<std::size_t>(meta.size(), 1));
    const bool out_count = qs[0].out_of_force_penalty() > 0.0 || qs[0].future_penalty() > 0.0;
    const double by_filter = F * (kMetaNs + kRowNs * std::min(1.0, I / n));
    const double by_index = I * kIterNs + I * F / n * (kMetaNs + kRowNs);
    if (out_count ? F <= I : by_filter <= by_index) {
      filter->for_each(emit);
      return true;
    }
  }
  if (seeded && (mode == Mode::All || by_fresh <= by_interval)) {
    emit_ranges(passes);
    return true;  // the freshness lists hold every row, in force or not
  }
  if (filter) {  // the rows in force unread; those the filter keeps prefetched for the scan
    st.intervals().for_each_overlapping<true>(a, b, [&](std::uint32_t r) {
      if (filter->test(r)) { meta.prefetch(r); emit(r); }
    });
  }
  else st.intervals().for_each_overlapping(a, b, emit);
  return false;
}

// ===== run_group in named steps
// A group of queries (at most 64) runs the certified plan together, so that metadata and
// vectors needed by several of them are loaded once. Per stage (group_rows above):
//  - setup, once per group: GroupContext (group_context.hpp), the group's constants shared
//    by both scan orders;
//  - scan_bounds_first (scan_bounds_first.hpp): bound_pass (Kernels::bound_rows: per (row,
//    query) penalty, validity and bound, vectorised across the queries; keeps the rows some
//    query can still use), then BoundsFirstScan: rows best bound first, skipped once every
//    query's bound is below its k-th score; otherwise the compact copy gives the queries
//    that need the row a similarity cap (dot_qt_i8 / dot_qt_s8 for rows many need,
//    dot_i8_some for the others) and the full vector is loaded once for those the cap
//    cannot rule out;
//  - scan_similarity_first (scan_similarity_first.hpp): the order described above, step 3
//    in storage order (SimilarityFirstScan);
//  - Thresholds (group_context.hpp): the float thresholds both scans test against,
//    refreshed whenever a query's theta moves.
// Per query, the seed, the graph plan, the top-k heap and the exact score are Searcher's
// (searcher.hpp).

// "auto", per stage: similarity first for stages of at least kSimilarityMinRows rows
// (below that, the bounds order's best-first start raises theta sooner than the storage
// order does; measured at 200k rows: ~2k rows per group at 1% selectivity favour bounds by
// 10-20%, ~20k at 10% favour similarity by 1.3-1.5x). Stage 0 also needs the rows to be
// scanned anyway (exact, no more than scan_limit of them, or a store where the graph plan
// is not taken: Searcher::graph_plan_allowed); beyond that the bounds order's per-query
// candidate counts after the bound pass decide which queries walk the graph instead.
inline bool similarity_first(const GroupContext& c, int stage) {
  constexpr std::size_t kSimilarityMinRows = 8192;
  const SearchParams& p0 = c.p0;
  const std::size_t n = c.buf.rows.size();
  if (!c.dense || p0.scan == ScanOrder::Bounds) return false;
  if (p0.scan == ScanOrder::Similarity) return true;
  return n >= kSimilarityMinRows && (stage == 1 || p0.exact || n <= p0.scan_limit || !c.qs[0].graph_plan_allowed());
}

// Run the certified plan for a group of queries (at most 64): seeds, stage 0 (rows that can
// be in force) and, unless stage 0 covered them, stage 1 (latest mode: rows out of force
// everywhere in the group), each in the order similarity_first picks, or a lone query's
// own scan (scan_one.hpp).
inline void run_certified(std::vector<Searcher>& qs, const Store& st, std::vector<QueryResult>& out,
                          const std::vector<std::size_t>& where);

// The most queries a certified group splits into lone scans (run_certified; from three, only
// where each has at most an eighth of the store in force).
inline constexpr std::size_t kLoneSplit = 5;

// A group: the probe plan (probe.hpp) for the queries it applies to, the certified plan
// (and per query the graph plan) for the others.
inline void run_group(std::vector<Searcher>& qs, const Store& st, std::vector<QueryResult>& out,
                      const std::vector<std::size_t>& where) {
  std::vector<std::size_t> f(qs.size());
  for (std::size_t g = 0; g < qs.size(); ++g) f[g] = probe_in_force(qs[g], st);
  std::vector<char> applies(qs.size());
  probe_choice(probe_cost_rows(qs[0], st.meta().size()), f.data(), qs.size(), applies.data());  // one filter per group
  if (std::find(applies.begin(), applies.end(), 1) == applies.end()) { run_certified(qs, st, out, where); return; }
  std::vector<Searcher> rest;
  std::vector<std::size_t> rest_where;
  const std::size_t budget = st.meta().size() / 16 + 1024;
  // A probe over its budget is wasted work (the query then scans). Where probes fail (a
  // partition whose clusters do not separate the queries, as at low dimension, where the
  // allowance delta is large) they fail for the group's similar queries too: once the
  // group's failed probes are as many as its answered ones, its other queries scan at once.
  // At 30k x 64 every probe failed, and the group of 64 cost 2.3x its certified scan.
  std::size_t answered = 0, failed = 0;
  for (std::size_t g = 0; g < qs.size(); ++g) {
    if (applies[g] && (failed == 0 || failed < answered)) {
      Searcher trial = qs[g];
      if (probe(trial, st, budget)) { out[where[g]] = trial.finish(); ++answered; continue; }
      ++failed;
    }
    rest.push_back(qs[g]);
    rest_where.push_back(where[g]);
  }
  if (!rest.empty()) run_certified(rest, st, out, rest_where);
}

inline void run_certified(std::vector<Searcher>& qs, const Store& st, std::vector<QueryResult>& out,
                          const std::vector<std::size_t>& where) {
  // A few queries share too little to pay for the group scans' bookkeeping: each takes its
  // own lone scan (certified answers do not depend on the grouping). Three to kLoneSplit
  // queries at unrelated times scan the union of their rows in force, where the decay
  // bound over distant times prunes little; but where much of the store is in force the
  // group shares its rows, so those split only with at most an eighth of the store in
  // force each. Measured per query, group against lone scans: docs/search.md, step 3.
  const std::size_t G = qs.size();
  const bool split = G == 2 || (G >= 3 && G <= kLoneSplit &&
                                std::all_of(qs.begin(), qs.end(), [&](const Searcher& q) {
                                  return q.in_force_count() <= st.meta().size() / 8;
                                }));
  if (split && lone_scan_possible(qs[0], st.dim())) {
    for (std::size_t g = 0; g < G; ++g) {
      std::vector<Searcher> one{qs[g]};
      run_certified(one, st, out, std::vector<std::size_t>{where[g]});
    }
    return;
  }
  for (Searcher& q : qs) q.start();
  GroupBuffers& buf = GroupBuffers::this_thread();
  buf.rows.clear();
  GroupContext c(qs, st, buf);
  auto scan_stage = [&](int stage) {
    if (scan_one_applies(c, stage)) scan_one(c, stage);
    else if (similarity_first(c, stage)) scan_similarity_first(c, stage); else scan_bounds_first(c, stage);
  };
  auto add_row = [&](std::uint32_t r) { buf.rows.push_back(r); };
  const bool covered = group_rows(qs, st, 0, add_row);
  scan_stage(0);
  if (!covered) {
    buf.rows.clear();
    group_rows(qs, st, 1, add_row);
    if (!buf.rows.empty()) scan_stage(1);
  }
  for (std::size_t g = 0; g < qs.size(); ++g) out[where[g]] = qs[g].finish();
  buf.trim();
}

}  // namespace chrono

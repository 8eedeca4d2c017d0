// The probe plan: one query, approximate, the partition's clusters nearest first.
//
// A lone query on the certified scan streams the compact copy of every row its validity
// bound cannot rule out: most of the rows in force when decay prunes little. The probe plan
// reads the rows of the store's partition (partition.hpp) cluster by cluster, in decreasing
// <q, c>, each row as the certified scan would (eligibility, the validity bound, the int8
// cap, then the exact score), and stops before the first cluster whose estimate
//   fuse(min(s_cap, <q, c> + |q| delta), 1)
// is below the query's k-th score theta. delta is estimated on the store (_partition.py:
// six standard deviations of a residual's projection on an independent direction) and
// is not a bound: an answer the plan stopped early is
// marked not certified (it is certified when every cluster was read). Rows that no cluster
// holds (ingested since the last assignment) are read first.
//
// Taken only with exact=False, a dense metric, a partitioned store and more than
// kProbeMinRows rows in force (below that the certified scan is as cheap, and a probe
// would read many clusters before k rows in force raise theta), and only when its estimated
// cost per query is below the certified scan's (probe_cheaper): a probe reads a share of
// the store's clusters alone, about kProbeNsPerRow per row of the store (n) whatever the
// group; the certified scan reads every row in force (F), each row's load shared by the
// group's G queries, then a compact dot per query:
//   probe ~ kProbeNsPerRow * n      scan ~ F * (kScanNsPerRow / G + kScanNsPerDot)
// per query. The rates are measured (steep, as_of and latest, one thread, d = 384, on the
// development machine): the probe read ~1 ns per store row at 200k and at 1M rows
// (0.2-0.34 ms and ~0.8 ms per query); the scan cost ~8-9 ns per row in force and query in
// groups of 64 (0.89 ms at 1M with a tenth in force, 0.73 ms at 200k with half), and
// ~100-270 ns alone (rows in force are scattered in storage: each costs its cache misses).
// The crossing is then F / n = 0.12 in a group of 64, 0.06 in 16, 0.007 alone; measured:
// at 200k with a tenth in force the scan won at 64 (297 against 336 us per query), at 1M
// with a fifth the probe won at 64 (~0.8 against 2.2 ms). Only speed depends on the rates:
// every plan scores each row it returns exactly.
// A query whose probe reads more than its budget gives up and runs the certified plan
// from a fresh start.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>
#include "searcher.hpp"

namespace chrono {

constexpr std::size_t kProbeMinRows = 8192;
constexpr double kProbeNsPerRow = 1.0;    // the probe, per query and row of the store
constexpr double kScanNsPerRow = 150.0;   // the certified scan, per row in force, shared by the group
constexpr double kScanNsPerDot = 6.0;     // the certified scan, per row in force and query

// Whether a probe (per query) is estimated cheaper than the certified scan's share, for a
// group of G queries, a store of n rows and f rows in force.
inline bool probe_cheaper(std::size_t G, std::size_t n, std::size_t f) {
  const double probe = kProbeNsPerRow * static_cast<double>(n);
  const double scan = static_cast<double>(f) * (kScanNsPerRow / static_cast<double>(std::max<std::size_t>(G, 1)) + kScanNsPerDot);
  return probe < scan;
}

// The rows in force of a query the probe may take (0: it may not: exact, not a dense
// metric, no partition, or no more than kProbeMinRows rows in force).
inline std::size_t probe_in_force(const Searcher& q, const Store& st) {
  const SearchParams& p = q.params();
  if (p.exact || !q.uses_dot() || st.partition().empty() || st.partition().covered == 0) return 0;
  if ((p.time.mode == Mode::Latest || p.time.mode == Mode::AsOf) &&
      st.intervals().valid_at_upper_bound(p.time.t) <= kProbeMinRows)
    return 0;  // the tree path's sizes already rule it out (no endpoint read)
  const std::size_t f = q.in_force_count();
  return f > kProbeMinRows ? f : 0;
}

// The store rows a probe's cost is reckoned on (probe_cheaper's n): the store's, divided by
// the share of rows the where= filter passes. A query's k-th score among a tenth of the
// rows is lower, and the probe reads clusters until their estimate falls below it: at
// 200k x 384, half in force, a filter passing 10% took 124-170 of 256 clusters (~10k rows
// it passes) where the store alone took a few, and most such probes ran past their budget
// to hand the query to the certified scan after all (57% of the lone call's time).
inline std::size_t probe_cost_rows(const Searcher& q, std::size_t n) {
  const RowSet* filter = q.params().filter;
  if (!filter || filter->count >= n) return n;
  if (filter->count == 0) return std::numeric_limits<std::size_t>::max() / 4;
  return static_cast<std::size_t>(static_cast<double>(n) * static_cast<double>(n) / static_cast<double>(filter->count));
}

// Which queries of a group probe (applies[g] = 1), given each one's rows in force f[g]
// (0: the probe does not apply) and a store of n rows. A query probes where its probe is
// estimated cheaper than its share of the group's certified scan; but the scan is shared
// only by the queries that do not probe, so each time some queries leave for the probe the
// others' shares grow, and they are decided again with the smaller group, until none
// changes (queries only ever leave the scan: at most G rounds). Deciding once with the
// whole group left a few queries scanning alone at the price the model gave a full group:
// at 200k x 384 with a tenth in force, groups of 32 kept ~4 queries scanning ~19k rows
// among themselves, and the group cost ~2x its queries probed and scanned apart.
inline void probe_choice(std::size_t n, const std::size_t* f, std::size_t G, char* applies) {
  std::size_t scanning = G;
  for (std::size_t g = 0; g < G; ++g) applies[g] = 0;
  for (bool changed = true; changed && scanning > 0;) {
    changed = false;
    const std::size_t share = scanning;  // the scan's queries as this round began
    for (std::size_t g = 0; g < G; ++g)
      if (!applies[g] && f[g] != 0 && probe_cheaper(share, n, f[g])) {
        applies[g] = 1;
        --scanning;
        changed = true;
      }
  }
}

// Run the probe plan on q; false (q left in an undefined state) when it read more than
// `budget` rows.
inline bool probe(Searcher& q, const Store& st, std::size_t budget) {
  const Partition& part = st.partition();
  const Kernels& k = kernels();
  const AnnIndex& ann = st.ann();
  const MetaTable& meta = st.meta();
  const std::size_t d = st.dim(), C = part.C, n = meta.size();
  const float* Q = q.query();
  double nq = 0.0;
  for (std::size_t i = 0; i < d; ++i) nq += static_cast<double>(Q[i]) * Q[i];
  nq = std::sqrt(nq) * (1.0 + 1e-12);
  thread_local std::vector<float> gc;
  thread_local std::vector<std::uint32_t> order;
  gc.resize(C);
  order.resize(C);
  for (std::size_t j = 0; j < C; ++j) gc[j] = k.dot(Q, &part.centroids[j * d], d);
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) { return gc[a] > gc[b] || (gc[a] == gc[b] && a < b); });
  const std::uint32_t one = 0;
  float raw = 0.0f;
  std::size_t read = 0;
  const RowSet* filter = q.params().filter;
  thread_local std::vector<std::uint32_t> kept;
  auto visit = [&](std::uint32_t row) {
    double v = 0.0;
    const double pen = q.eligibility(row, v);
    if (pen == 0.0) return;
    // theta lowered by the float margins of the scans (the int8 cap's float dot may round
    // below the true cap): these tests only gate the exact score, never replace it
    const double th0 = q.current_theta(), th = th0 - 1e-5 * std::fabs(th0) - 1e-6;
    if (!(q.fused(q.sim_cap(), v) * pen >= th)) return;
    k.dot_i8_some(ann.compact(row), Q, &one, 1, d, &raw);
    const double cap = static_cast<double>(ann.compact_scale(row)) * raw + nq * ann.compact_err(row);
    if (!(q.fused(cap, v) * pen >= th)) return;
    q.count_scored();
    q.score(row, k.dot(Q, ann.vector(row), d));
  };
  for (std::uint32_t row : part.loose) visit(row);
  for (std::size_t row = part.covered; row < n; ++row) visit(static_cast<std::uint32_t>(row));
  const double allow = part.delta * nq;
  std::size_t j = 0;
  for (; j < C; ++j) {
    const std::uint32_t c = order[j];
    const double est = std::min(q.sim_cap(), static_cast<double>(gc[c]) + allow);
    if (q.fused(est, 1.0) < q.current_theta()) break;
    const auto& all = part.members[c];
    const std::uint32_t* rows = all.data();
    std::size_t m = all.size();
    if (filter) {  // the cluster's rows the filter passes (a bit each, cached): the others cost nothing more
      kept.clear();
      for (std::uint32_t r : all) if (filter->test(r)) kept.push_back(r);
      rows = kept.data(); m = kept.size();
    }
    read += m;
    if (read > budget) return false;
    // a cluster's members lie scattered in storage: their metadata is asked for 8 rows
    // ahead (every row reads it), the compact copy 4 ahead (the rows it rules in read it)
    for (std::size_t i = 0; i < std::min<std::size_t>(8, m); ++i) meta.prefetch(rows[i]);
    for (std::size_t i = 0; i < m; ++i) {
      if (i + 8 < m) meta.prefetch(rows[i + 8]);
      if (i + 4 < m) ann.prefetch_compact(rows[i + 4]);
      visit(rows[i]);
    }
  }
  q.probed(j == C);
  return true;
}

}  // namespace chrono

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
// would read many clusters before k rows in force raise theta); and only in a group of at
// most kProbeMaxGroup queries, or of G queries with G * n <= kProbeGroupRatio * (rows in
// force): a group's certified scan shares each row in force among its queries, while each
// probe reads up to n / 16 rows alone. The ratio is measured, not derived: at 200k x 384
// (steep, as_of, one thread) the probe beat the group's certified scan at every group
// size up to 64 with half the store in force (208 against 733 us per query at 64), and up
// to about 32 with a tenth (336 against 297 us at 64); 320 * F / n puts the crossing there.
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

constexpr std::size_t kProbeMaxGroup = 4;
constexpr std::size_t kProbeGroupRatio = 320;
constexpr std::size_t kProbeMinRows = 8192;

inline bool probe_applies(const Searcher& q, const Store& st, std::size_t group_size) {
  const SearchParams& p = q.params();
  if (p.exact || !q.uses_dot() || st.partition().empty() || st.partition().covered == 0) return false;
  if ((p.time.mode == Mode::Latest || p.time.mode == Mode::AsOf) &&
      st.intervals().valid_at_upper_bound(p.time.t) <= kProbeMinRows)
    return false;  // the tree path's sizes already rule it out (no endpoint read)
  const std::size_t f = q.in_force_count();
  if (f <= kProbeMinRows) return false;
  return group_size <= kProbeMaxGroup ||
         static_cast<double>(group_size) * static_cast<double>(st.meta().size()) <= kProbeGroupRatio * static_cast<double>(f);
}

// Run the probe plan on q; false (q left in an undefined state) when it read more than
// `budget` rows.
inline bool probe(Searcher& q, const Store& st, std::size_t budget) {
  const Partition& part = st.partition();
  const Kernels& k = kernels();
  const AnnIndex& ann = st.ann();
  const std::size_t d = st.dim(), C = part.C, n = st.meta().size();
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
    const auto& rows = part.members[c];
    read += rows.size();
    if (read > budget) return false;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (i + 4 < rows.size()) ann.prefetch_compact(rows[i + 4]);
      visit(rows[i]);
    }
  }
  q.probed(j == C);
  return true;
}

}  // namespace chrono

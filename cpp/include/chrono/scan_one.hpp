// The certified scan of a lone query (a group of one: a single search() call, or a call
// the coalescer found alone), the stage's rows in storage order.
//
// The group scans (scan_bounds_first.hpp, scan_similarity_first.hpp) share each row's
// loads among up to 64 queries: a bound pass writes per (row, query) lanes padded to 8, the
// rows are ordered or batched for all queries, and that bookkeeping is paid once for the
// group. For one query it was most of the cost (200k x 384 steep, 1% in force: ~2,000
// rows, ~96% of them needing their int8 cap, ~170 ns per row). Here each row costs its
// exact penalty (Searcher::penalty_of), its validity (Kernels::validities, a chunk of rows
// per call), one bound test, and, for the rows the bound keeps, the exact integer dot of
// its compact copy (Kernels::dot_s8_1, kBatch rows per call) with the cap of
// GroupContext::cap_s8_exact. Rows whose cap reaches theta wait in a small buffer and are
// read in full best cap first, so that theta rises before the weaker ones are read. Every
// row whose cap reaches the final theta is scored exactly (Searcher::score), so the answer
// is the same certified top-k as the group scans'.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>
#include "group_context.hpp"
#include "scan_similarity_first.hpp"

namespace chrono {

// Whether a query of dimension d could take scan_one: a dense metric, the lone query's
// exact int8 kernel (Kernels::dot_s8_1, AVX2 or AVX512-VNNI; GroupContext::s8) and the
// automatic scan order (an order asked for by name is kept). run_certified splits groups
// of two on it.
inline bool lone_scan_possible(const Searcher& q, std::size_t d) {
  const Kernels& k = kernels();
  return q.uses_dot() && k.dot_s8_1 != nullptr && d <= 65536 &&
         q.params().scan == ScanOrder::Auto;
}

// Whether a stage of c takes scan_one: a group of one that could, with no graph plan to
// decide (every row is scanned anyway).
inline bool scan_one_applies(const GroupContext& c, int stage) {
  if (c.G != 1 || !lone_scan_possible(c.qs[0], c.d)) return false;
  const SearchParams& p = c.p0;
  return stage == 1 || p.exact || c.buf.rows.size() <= p.scan_limit || !c.qs[0].graph_plan_allowed();
}

inline void scan_one(GroupContext& c, int stage) {
  Searcher& q = c.qs[0];
  // Rows in storage order, for sequential reads where they are dense (at least one row in
  // kDense); sparser rows each cost their own cache lines in any order, and the bitmap walk
  // over the whole store was 5-11% of a lone 1% call's core (200k rows, ~2,000 in force). The stage's
  // rows come once each (group_rows), and the answer does not depend on the order.
  constexpr std::size_t kDense = 32;
  if (c.buf.rows.size() * kDense >= c.meta.size()) storage_order(c.buf.rows, c.meta.size(), c.buf.bits);
  const std::vector<std::uint32_t>& rows = c.buf.rows;
  const std::size_t n = rows.size(), d = c.d;
  const AnnIndex& ann = c.ann;
  const MetaTable& meta = c.meta;
  const float* Q = c.Q.data();
  const double cap_all = q.sim_cap();
  constexpr std::size_t kBatch = 8, kMetaAhead = 16, kCodeAhead = 8;
  const std::int8_t* xs[kBatch];
  std::uint32_t br[kBatch];
  double bv[kBatch], bp[kBatch];
  alignas(64) std::int32_t D[kBatch * 64];
  std::size_t nb = 0, eligible = 0;
  // theta lowered by the float margins of the kernels: these tests only gate the exact
  // score (Searcher::score), never replace it
  auto lowered = [&] { const double t = q.current_theta(); return t - 1e-5 * std::fabs(t) - 1e-6; };
  double th = lowered();
  // Rows whose cap reaches theta wait in `cand` (up to kCand) and are scored best cap
  // first, so that theta rises before the weaker ones are read in full.
  struct Cand { double ub; std::uint32_t row; };
  constexpr std::size_t kCand = 32;
  Cand cand[kCand];
  std::size_t nc = 0;
  auto drain = [&] {
    std::sort(cand, cand + nc, [](const Cand& a, const Cand& b) { return a.ub > b.ub || (a.ub == b.ub && a.row < b.row); });
    for (std::size_t j = 0; j < nc && cand[j].ub >= th; ++j) {
      q.count_scored();
      q.score(cand[j].row, c.k.dot(Q, ann.vector(cand[j].row), d));
      th = lowered();
    }
    nc = 0;
  };
  auto flush = [&] {
    c.dots_s8(xs, nb, D);
    for (std::size_t b = 0; b < nb; ++b) {
      const CompactRow cr = c.compact_row(br[b]);
      const double ub = q.fused(c.cap_s8_exact(0, D[b * c.Gp], cr), bv[b]) * bp[b];
      if (!(ub >= th)) continue;
      cand[nc++] = Cand{ub, br[b]};
      if (nc == kCand) drain();
    }
    nb = 0;
  };
  // rows in chunks: their penalties one by one, the validities of the eligible ones in
  // one kernel call (Kernels::validities), then the bound test
  constexpr std::size_t kChunk = 32;
  std::uint32_t er[kChunk];
  double ep[kChunk], ev[kChunk];
  const double tau = c.p0.tau;
  const micros t = q.params().time.t;
  for (std::size_t i = 0; i < std::min(n, kMetaAhead); ++i) meta.prefetch(rows[i]);
  for (std::size_t i0 = 0; i0 < n; i0 += kChunk) {
    const std::size_t i1 = std::min(n, i0 + kChunk);
    std::size_t ne = 0;
    for (std::size_t i = i0; i < i1; ++i) {
      if (i + kMetaAhead < n) meta.prefetch(rows[i + kMetaAhead]);
      const double pen = q.penalty_of(rows[i]);
      if (pen == 0.0) continue;
      er[ne] = rows[i]; ep[ne] = pen; ++ne;
    }
    c.k.validities(c.specs.data(), &meta, er, ne, t, ev);
    for (std::size_t j = 0; j < std::min(ne, kCodeAhead); ++j) ann.prefetch_compact(er[j]);
    for (std::size_t j = 0; j < ne; ++j) {
      if (j + kCodeAhead < ne) ann.prefetch_compact(er[j + kCodeAhead]);
      const double v = ev[j], pen = ep[j];
      if (tau > 0.0 && !(v >= tau)) continue;
      ++eligible;
      if (!(q.fused(cap_all, v) * pen >= th)) continue;
      xs[nb] = ann.compact(er[j]); br[nb] = er[j]; bv[nb] = v; bp[nb] = pen;
      if (++nb == kBatch) flush();
    }
  }
  if (nb) flush();
  if (nc) drain();
  if (stage == 0) q.choose_plan(eligible);  // records the count; never the graph plan here (scan_one_applies)
}

}  // namespace chrono

// The certified scan in the bounds-first order (planner.hpp): a bound pass over the
// stage's rows (per row and query: penalty, validity and bound), then the rows best bound
// first, each scored only for the queries whose bound and compact-copy cap still reach
// their threshold.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>
#include "group_context.hpp"

namespace chrono {

// Indices of `best`, highest first, by a counting sort into 1024 buckets (linear in the
// range; equal-bucket rows stay in their original, memory-friendly order). Only the
// visiting order depends on it: every row is still tested against its exact bound.
inline void bucket_order(const std::vector<double>& best, std::vector<std::uint32_t>& order) {
  const std::size_t n = best.size();
  order.resize(n);
  if (n == 0) return;
  double lo = best[0], hi = best[0];
  for (double b : best) { lo = std::min(lo, b); hi = std::max(hi, b); }
  constexpr std::size_t kB = 1024;
  std::size_t count[kB + 1] = {0};
  const double scale = hi > lo ? (kB - 1) / (hi - lo) : 0.0;
  auto bucket = [&](double b) { return kB - 1 - static_cast<std::size_t>((b - lo) * scale); };
  for (double b : best) ++count[bucket(b) + 1];
  for (std::size_t i = 1; i <= kB; ++i) count[i] += count[i - 1];
  for (std::uint32_t i = 0; i < n; ++i) order[count[bucket(best[i])]++] = i;
}

// The bound pass of the bounds-first order: per (row, query) of the stage's rows, the
// penalty, validity and bound (Kernels::bound_rows); fills buf.kept, best, val and pen
// with the rows some query can still use (validities and penalties as floats rounded up:
// bounds only; scores are recomputed in double when offered). Returns, per query, how many
// rows it keeps.
inline std::vector<std::size_t> bound_pass(GroupContext& c) {
  GroupBuffers& b = c.buf;
  const std::size_t n = b.rows.size(), G = c.G, Gp = c.Gp;
  if (b.val.size() < n * Gp) { b.val.resize(n * Gp); b.pen.resize(n * Gp); }
  if (b.kept.size() < n) { b.kept.resize(n); b.best.resize(n); }
  // per query, padded to Gp lanes with neutral values (never known, theta = +inf)
  alignas(64) double Td[64], th[64];
  alignas(64) std::uint32_t cnt[64];
  for (std::size_t g = 0; g < Gp; ++g) { Td[g] = 0.0; th[g] = std::numeric_limits<double>::infinity(); cnt[g] = 0; }
  for (std::size_t g = 0; g < G; ++g) {
    th[g] = c.qs[g].current_theta();
    Td[g] = static_cast<double>(c.qs[g].params().time.t);
  }
  const SearchParams& p0 = c.p0;
  BoundArgs ba;
  ba.Gp = Gp; ba.G = G; ba.t = Td; ba.known_at = c.KA; ba.x1 = c.X1; ba.x2 = c.X2; ba.theta = th; ba.a = c.Ad; ba.b = c.Bd;
  ba.tau = p0.tau; ba.out_pen = c.qs[0].out_of_force_penalty(); ba.fut_pen = c.qs[0].future_penalty(); ba.latest = c.mode == Mode::Latest;
  ba.specs = c.specs.data(); ba.n_specs = c.specs.size();
  if (!p0.type_mask.empty()) { ba.type_mask = p0.type_mask.data(); ba.mask_n = p0.type_mask.size(); }
  ba.kept = b.kept.data(); ba.best = b.best.data(); ba.val = b.val.data(); ba.pen = b.pen.data(); ba.cnt = cnt;
  const std::size_t nk = c.k.bound_rows(ba, &c.meta, b.rows.data(), n);
  b.kept.resize(nk); b.best.resize(nk);
  return std::vector<std::size_t>(cnt, cnt + G);
}

// The bounds-first scoring path over the bound pass's rows, best bound first (see
// run_group). Dense metrics read the compact (int8) copy first: its similarity cap
// decides, per query, whether the full vector is needed at all (see AnnIndex::compact).
class BoundsFirstScan {
 public:
  explicit BoundsFirstScan(GroupContext& c) : c_(c), b_(c.buf), th_(c.qs, c.active) { bucket_order(b_.best, b_.order); }

  void run() {
    const std::vector<std::uint32_t>& order = b_.order;
    for (std::size_t j = 0; j < std::min(order.size(), kAhead); ++j) prefetch(j);
    for (std::size_t j = 0; j < order.size(); ++j) {
      if (j + kAhead < order.size()) prefetch(j + kAhead);
      if (b_.best[order[j]] < th_.min_th) continue;
      const std::uint32_t n_needed = needs(j);
      if (n_needed == 0) continue;
      if (c_.dense && 8 * n_needed > c_.G) {  // a batched row costs about as much as G / 6 single dots
        pend_[n_pend_] = j;
        xs_[n_pend_] = c_.ann.compact(b_.kept[order[j]]);
        if (++n_pend_ == kBatch) flush();
      } else {
        finish(j, nullptr);
      }
    }
    flush();
  }

 private:
  static constexpr std::size_t kAhead = 4;  // rows prefetched ahead
  // Rows that more than an eighth of the group needs get their compact dots kBatch at a
  // time, with all the queries (one pass over the transposed queries serves the batch).
  static constexpr std::size_t kBatch = 4;

  const float* val(std::size_t j) const { return &b_.val[b_.order[j] * c_.Gp]; }
  const float* pen(std::size_t j) const { return &b_.pen[b_.order[j] * c_.Gp]; }

  void prefetch(std::size_t j) const {
    const std::size_t r = b_.order[j];
    if (b_.best[r] < th_.min_th) return;
    for (std::size_t off = 0; off < c_.Gp; off += 16) {
      __builtin_prefetch(&b_.val[r * c_.Gp + off]);
      __builtin_prefetch(&b_.pen[r * c_.Gp + off]);
    }
    if (c_.dense) c_.ann.prefetch_compact(b_.kept[r]); else c_.ann.prefetch(b_.kept[r]);
  }
  // Whether query g still needs a row: its bound reaches the query's (float, lowered) threshold.
  std::uint32_t bound_reaches(const float* V, const float* P, std::size_t g) const {
    const float* TH = th_.TH;
    const float* ON = th_.ON;
    return (ON[g] * P[g] * (c_.A[g] + c_.B[g] * V[g]) >= TH[g]) & (P[g] > 0.0f) & (ON[g] > 0.0f);
  }
  // nd_[g] = whether query g needs row j; returns how many do.
  std::uint32_t needs(std::size_t j) {
    const float* V = val(j);
    const float* P = pen(j);
    std::uint32_t n_needed = 0;
    for (std::size_t g = 0; g < c_.G; ++g) {
      nd_[g] = bound_reaches(V, P, g);
      n_needed += nd_[g];
    }
    return n_needed;
  }
  // The full similarity and the exact score of a row for the queries with nd_[g] set.
  void score_needed(const float* V, const float* P, std::uint32_t row) {
    const float* x = nullptr;
    for (std::size_t g = 0; g < c_.G; ++g) {
      if (!nd_[g]) continue;
      c_.qs[g].count_scored();
      if (x == nullptr) x = c_.ann.vector(row);
      const float sim = c_.dense ? c_.k.dot(c_.Q.data() + g * c_.d, x, c_.d) : c_.qs[g].similarity(row);
      float sc;
      if (c_.product) { float sp = sim < 0.f ? 0.f : (sim > 1.f ? 1.f : sim); sc = sp * V[g] * P[g]; }
      else sc = (c_.E[g] * sim + c_.B2[g] * V[g]) * P[g];
      if (!(sc >= th_.TH[g])) continue;
      c_.qs[g].score(row, sim);
      th_.refresh(g);
    }
  }
  // Row j for the queries that need it: the compact copy's cap first (raw_all: its dots with
  // the group's queries when computed in a batch, else one dot per query), then the full
  // similarity and the exact score where the cap cannot rule the row out.
  void finish(std::size_t j, const float* raw_all) {
    if (needs(j) == 0) return;  // thresholds may have risen since j was queued
    const float* V = val(j);
    const float* P = pen(j);
    const std::uint32_t row = b_.kept[b_.order[j]];
    if (c_.dense) {
      const std::int8_t* c = c_.ann.compact(row);
      const double cs = c_.ann.compact_scale(row), ce = c_.ann.compact_err(row);
      auto cut = [&](std::size_t g, float raw) {  // nd_[g] &= (the cap's bound reaches TH[g])
        const double cap = cs * raw + c_.NQ[g] * ce;
        double ub;
        if (c_.product) ub = (cap < 0.0 ? 0.0 : (cap > 1.0 ? 1.0 : cap)) * V[g] * P[g];
        else ub = (c_.E[g] * cap + c_.B2[g] * V[g]) * P[g];
        return nd_[g] & static_cast<std::uint32_t>(ub >= th_.TH[g]);
      };
      if (raw_all) {
        for (std::size_t g = 0; g < c_.G; ++g) nd_[g] = cut(g, raw_all[g]);  // branch-free
      } else {  // the few queries that need the row: one int8 conversion for all
        std::size_t n = 0;
        for (std::size_t g = 0; g < c_.G; ++g) if (nd_[g]) which_[n++] = static_cast<std::uint32_t>(g);
        c_.k.dot_i8_some(c, c_.Q.data(), which_, n, c_.d, some_);
        for (std::size_t i = 0; i < n; ++i) nd_[which_[i]] = cut(which_[i], some_[i]);
      }
    }
    score_needed(V, P, row);
  }
  // The batched int8 x int8 caps (s8), in float across the group's queries: for each row
  // of the batch, nd[g] = (the row's bound reaches TH[g]) & (its cap does), then the full
  // similarity for the few queries left. Per query, with D the exact integer dot,
  //   a = SQ D, b = RQ (XN + ce) / cs, cap = cs (a + b) + |q| ce,
  // every float operation rounds by at most 2^-24 relative (about 8 of them, the float
  // copies of SQ and cs included), so cap + 1e-6 (cs (|a| + b) + |q| ce) is at least the
  // double cap; RQ, |q|, ce and the addend are rounded up, so each term is an upper bound.
  // Bounds then use the rounded-up validities and penalties as before.
  void finish_s8(std::size_t j, const std::int32_t* __restrict D) {
    const float* __restrict V = val(j);
    const float* __restrict P = pen(j);
    const std::uint32_t row = b_.kept[b_.order[j]];
    const CompactRow cr = c_.compact_row(row);
    const float* TH = th_.TH;
    auto cap = [&](std::size_t g) { return c_.cap_s8(g, D[g], cr); };
    std::uint32_t any = 0;
    if (c_.product) {  // two loops, so that each vectorises without a per-lane branch
      for (std::size_t g = 0; g < c_.G; ++g) {
        const float c = cap(g), cc = c < 0.0f ? 0.0f : (c > 1.0f ? 1.0f : c);
        nd_[g] = bound_reaches(V, P, g) & (cc * (V[g] * P[g]) >= TH[g]);
        any |= nd_[g];
      }
    } else {
      for (std::size_t g = 0; g < c_.G; ++g) {
        nd_[g] = bound_reaches(V, P, g) & ((c_.E[g] * cap(g) + c_.B2[g] * V[g]) * P[g] >= TH[g]);
        any |= nd_[g];
      }
    }
    if (any) score_needed(V, P, row);
  }
  void flush() {
    if (n_pend_ == 0) return;
    if (c_.s8) {
      c_.dots_s8(xs_, n_pend_, iraw_);
      for (std::size_t b = 0; b < n_pend_; ++b) finish_s8(pend_[b], iraw_ + b * c_.Gp);
    } else {
      c_.k.dot_qt_i8(xs_, n_pend_, c_.qt(), c_.Gp, c_.d, raw_);
      for (std::size_t b = 0; b < n_pend_; ++b) finish(pend_[b], raw_ + b * c_.Gp);
    }
    n_pend_ = 0;
  }

  GroupContext& c_;
  GroupBuffers& b_;
  Thresholds th_;
  alignas(64) std::uint32_t nd_[64];  // per query: still needs the current row
  alignas(64) std::uint32_t which_[64];
  alignas(64) float some_[64];
  std::size_t pend_[kBatch];  // the batch: positions in the visiting order
  const std::int8_t* xs_[kBatch];
  alignas(64) float raw_[kBatch * 64];
  alignas(64) std::int32_t iraw_[kBatch * 64];
  std::size_t n_pend_ = 0;
};

inline void scan_bounds_first(GroupContext& c, int stage) {
  const std::vector<std::size_t> counts = bound_pass(c);
  c.choose_plans(stage, [&](std::size_t g) { return counts[g]; });
  BoundsFirstScan(c).run();
}

}  // namespace chrono

// The certified scan in the similarity-first order (planner.hpp): the stage's rows in
// storage order, a row-level bound, then compact dots with all the group's queries in
// batches; per-query metadata only where a query's cap-based bound reaches its threshold.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>
#include "group_context.hpp"

namespace chrono {

// The rows in storage order, each once, through a bitmap over the n_total rows (left all
// zero for the next call).
inline void storage_order(std::vector<std::uint32_t>& rows, std::size_t n_total, std::vector<std::uint64_t>& bits) {
  if (bits.size() < n_total / 64 + 1) bits.assign(n_total / 64 + 1, 0);
  for (std::uint32_t r : rows) bits[r >> 6] |= std::uint64_t{1} << (r & 63);
  std::size_t n = 0;
  for (std::size_t w = 0; w < n_total / 64 + 1; ++w) {
    std::uint64_t bw = bits[w];
    bits[w] = 0;
    while (bw) { rows[n++] = static_cast<std::uint32_t>(w * 64 + static_cast<std::size_t>(__builtin_ctzll(bw))); bw &= bw - 1; }
  }
  rows.resize(n);
}

// The similarity-first scoring path (see planner.hpp): rows in storage order,
// compact dots with every query first, metadata per query only where the cap reaches theta.
class SimilarityFirstScan {
 public:
  explicit SimilarityFirstScan(GroupContext& c)
      : c_(c), th_(c.qs, c.active), latest_(c.mode == Mode::Latest), out_pen_(c.qs[0].out_of_force_penalty()),
        out_pen_f_(round_up(out_pen_)), fut_pen_f_(round_up(c.qs[0].future_penalty())),
        max_pen_(std::max(out_pen_, c.qs[0].future_penalty())) {
    // the group's extent, for a row-level bound over all its active queries
    for (std::size_t g : th_.act) {
      const TimeContext& tc = c.qs[g].params().time;
      t_min_ = std::min(t_min_, tc.t); t_max_ = std::max(t_max_, tc.t);
      k_min_ = std::min(k_min_, tc.known_at); k_max_ = std::max(k_max_, tc.known_at);
      max_x1_ = std::max(max_x1_, c.X1[g]); min_x2_ = std::min(min_x2_, c.X2[g]);
      max_a_ = std::max(max_a_, c.Ad[g]); max_b_ = std::max(max_b_, c.Bd[g]);
    }
  }

  // A row-level bound (its reliability times its largest decay over the group's times, its
  // penalty if it is out of force for every query) drops a row below every threshold; the
  // others go to the batches.
  void run() {
    if (th_.act.empty()) return;
    const SearchParams& p0 = c_.p0;
    const MetaTable& meta = c_.meta;
    const std::vector<std::uint32_t>& rows = c_.buf.rows;
    const std::size_t n = rows.size();
    for (std::size_t i = 0; i < n; ++i) {
      if (i + 8 < n) c_.ann.prefetch_compact(rows[i + 8]);
      const std::uint32_t row = rows[i];
      const std::uint16_t type = meta.fact_type(row);
      if (!p0.type_mask.empty() && (type >= p0.type_mask.size() || !p0.type_mask[type])) continue;
      const bool out_all = meta.valid_from(row) > max_x1_ || meta.valid_to(row) <= min_x2_ || (latest_ && meta.deprecated(row));
      const double pm = out_all ? max_pen_ : 1.0;
      if (pm <= 0.0) continue;
      if (meta.ingested_at(row) > k_max_ || meta.retracted_at(row) <= k_min_) continue;  // known to no query
      const double vmax = max_validity(row, type);
      if (!(vmax >= p0.tau)) continue;
      if ((max_a_ + max_b_ * vmax) * pm < th_.min_th) continue;
      pend_[n_pend_] = row;
      vmx_[n_pend_] = round_up(vmax);
      xs_[n_pend_] = c_.ann.compact(row);
      if (++n_pend_ == kBatch) flush();
    }
    flush();
  }

 private:
  static constexpr std::size_t kBatch = 4;

  // The row's largest validity over the group's times (decay is non-increasing in |age|),
  // raised by a relative 1e-9 for rounding.
  double max_validity(std::uint32_t row, std::uint16_t type) const {
    const micros obs = c_.meta.observed_at(row);
    double ages[3] = {age_days(t_min_, obs), age_days(t_max_, obs), 0.0}, dd[3];
    const DecaySpec& spec = c_.specs[type];
    const std::size_t na = spec.symmetric && obs >= t_min_ && obs <= t_max_ ? 3 : 2;
    c_.k.decay(spec, ages, dd, na);
    double dmax = std::max(dd[0], dd[1]);
    if (na == 3) dmax = std::max(dmax, dd[2]);
    return static_cast<double>(c_.meta.reliability(row)) * dmax * (1.0 + 1e-9);
  }
  // D: the row's exact integer dots with the int8 queries (s8), else R: its float dots
  // with the float queries (dot_qt_i8); the caps are those of BoundsFirstScan's finish_s8
  // and finish. Sets nd_ to the queries whose cap-based bound (per-query penalty, the row's
  // largest validity vmax) reaches their threshold, then scores those exactly.
  void finish_row(std::uint32_t row, float vmax, const std::int32_t* __restrict D, const float* __restrict R) {
    const MetaTable& meta = c_.meta;
    const std::size_t G = c_.G;
    {  // per lane: the penalty (0: not known at K)
      const micros vf = meta.valid_from(row), vt = meta.valid_to(row), ing = meta.ingested_at(row),
                   ret = meta.retracted_at(row);
      const bool live = !(latest_ && meta.deprecated(row));
      for (std::size_t g = 0; g < G; ++g) {
        const bool known = (ing <= c_.KA[g]) & (c_.KA[g] < ret);
        const bool inf = (vf <= c_.X1[g]) & (vt > c_.X2[g]) & live;
        PL_[g] = known ? (inf ? 1.0f : (vf > c_.X1[g] ? fut_pen_f_ : out_pen_f_)) : 0.0f;
      }
    }
    const CompactRow cr = c_.compact_row(row);
    std::uint32_t any = 0;
    auto test = [&](std::size_t g, float c) {  // c: the lane's float cap, rounded up
      const float pm = PL_[g];
      float ub;
      if (c_.product) { const float cc = c < 0.0f ? 0.0f : (c > 1.0f ? 1.0f : c); ub = cc * vmax * pm; }
      else ub = (c_.E[g] * c + c_.B2[g] * vmax) * pm;
      nd_[g] = (ub >= th_.TH[g]) & (th_.ON[g] > 0.0f) & (pm > 0.0f);
      any |= nd_[g];
    };
    if (D) {
      for (std::size_t g = 0; g < G; ++g) test(g, c_.cap_s8(g, D[g], cr));
    } else {
      for (std::size_t g = 0; g < G; ++g) {
        const float a = cr.fcs * R[g], e = c_.NQf[g] * cr.fce;
        test(g, a + e + 1e-6f * (std::fabs(a) + e));
      }
    }
    if (!any) return;
    for (std::size_t g = 0; g < G; ++g)
      if (nd_[g]) capd_[g] = D ? c_.cap_s8_exact(g, D[g], cr) : cr.cs * static_cast<double>(R[g]) + c_.NQ[g] * cr.ce;
    score_exact(row);
  }
  // The exact phase for the lanes with nd_[g] set, given their similarity caps capd_.
  void score_exact(std::uint32_t row) {
    const float* x = nullptr;
    for (std::size_t g = 0; g < c_.G; ++g) {
      if (!nd_[g]) continue;
      double v = 0.0;
      const double pen = c_.qs[g].eligibility(row, v);
      if (pen == 0.0) continue;
      if (!(c_.qs[g].fused(capd_[g], v) * pen >= th_.TH[g])) continue;
      c_.qs[g].count_scored();
      if (x == nullptr) x = c_.ann.vector(row);
      const float sim = c_.k.dot(c_.Q.data() + g * c_.d, x, c_.d);
      c_.qs[g].score(row, sim);
      th_.refresh(g);
    }
  }
  void flush() {
    if (n_pend_ == 0) return;
    if (c_.s8) {
      c_.dots_s8(xs_, n_pend_, iraw_);
      for (std::size_t b = 0; b < n_pend_; ++b) finish_row(pend_[b], vmx_[b], iraw_ + b * c_.Gp, nullptr);
    } else {
      c_.k.dot_qt_i8(xs_, n_pend_, c_.qt(), c_.Gp, c_.d, raw_);
      for (std::size_t b = 0; b < n_pend_; ++b) finish_row(pend_[b], vmx_[b], nullptr, raw_ + b * c_.Gp);
    }
    n_pend_ = 0;
  }

  GroupContext& c_;
  Thresholds th_;
  const bool latest_;
  const double out_pen_;  // the penalty of rows out of force (0: excluded)
  const float out_pen_f_;
  const float fut_pen_f_;  // the penalty of rows not yet valid (0: excluded)
  const double max_pen_;   // the larger of the two: a row out of force for every query
  // the group's extent: its query times, known-at times, in-force lanes and bound coefficients
  micros t_min_ = kOpenEnd, t_max_ = kOpenStart, k_min_ = kOpenEnd, k_max_ = kOpenStart;
  micros max_x1_ = std::numeric_limits<micros>::min(), min_x2_ = std::numeric_limits<micros>::max();
  double max_a_ = 0.0, max_b_ = 0.0;
  alignas(64) std::uint32_t nd_[64];  // per query: the current row may still reach its threshold
  alignas(64) float PL_[64];          // per query: the current row's penalty
  alignas(64) double capd_[64];       // per query: the current row's similarity cap in double
  std::uint32_t pend_[kBatch];        // the batch: rows,
  float vmx_[kBatch];                 //   their largest validities (rounded up),
  const std::int8_t* xs_[kBatch];     //   their compact copies
  alignas(64) std::int32_t iraw_[kBatch * 64];
  alignas(64) float raw_[kBatch * 64];
  std::size_t n_pend_ = 0;
};

inline void scan_similarity_first(GroupContext& c, int stage) {
  storage_order(c.buf.rows, c.meta.size(), c.buf.bits);
  const std::size_t n = c.buf.rows.size();
  c.choose_plans(stage, [&](std::size_t) { return n; });  // the scan's candidates: every row it visits
  SimilarityFirstScan(c).run();
}

}  // namespace chrono

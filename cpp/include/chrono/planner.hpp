// Fused temporal top-k and the planner that chooses how to compute it.
//
// Score of item e for query q at time T (DESIGN.md, "Scoring"):
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
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>
#include "store.hpp"

namespace chrono {

enum class Fusion : int { Product = 0, Linear = 1 };
enum class InvalidPolicy : int { Penalize = 0, Exclude = 1, Include = 2 };
enum class Plan : std::uint8_t { Scan = 0, Graph = 1 };
enum class ScanOrder : int { Auto = 0, Bounds = 1, Similarity = 2 };

struct SearchParams {
  TimeContext time;
  Fusion fusion = Fusion::Product;
  double alpha = 0.75;
  double tau = 0.0;
  InvalidPolicy invalid = InvalidPolicy::Penalize;
  double penalty = 0.1;
  bool arbitrate = true;
  std::vector<std::uint8_t> type_mask;  // empty: every fact type
  std::size_t k = 10;
  bool exact = false;
  std::size_t ef = 64;             // first graph-plan walk width (at least 4k)
  std::size_t ef_max = 4096;       // widest graph-plan walk
  std::size_t scan_limit = 50000;  // graph plan when more candidates survive (exact=False)
  std::size_t seed_ef = 32;        // seed walk width (0: never seed)
  std::size_t seed_min = 150000;   // seed only when more items than this are in force
  ScanOrder scan = ScanOrder::Auto;  // the certified scan's order (see run_group)
};

struct Hit {
  std::uint32_t row;
  double score;
  float similarity;
  float validity;  // V = q * D
  float decay;     // D
  float penalty;   // multiplier applied (1 = none)
};

struct QueryResult {
  std::vector<Hit> hits;  // best first
  bool certified = false;
  Plan plan = Plan::Scan;
  std::size_t scored = 0;      // similarities computed
  std::size_t in_force = 0;    // interval-index count (taken only to decide the seed; else 0)
  std::size_t candidates = 0;  // rows whose bound reached theta after the metadata pass
};

// Per-query state: parameters, the top-k heap and the pieces of the score.
class Searcher {
 public:
  Searcher(const Store& s, const SearchParams& p, const float* q)
      : st_(s), p_(p), q_(q), meta_(s.meta()), specs_(s.decay_specs()) {
    s_cap_ = 1.0;
    if (s.metric() == Metric::InnerProduct) {
      double nq = std::sqrt(static_cast<double>(kernels().dot(q, q, s.dim())));
      s_cap_ = nq * s.max_norm();
    }
    s_cap_ = s_cap_ * (1.0 + 1e-5) + 1e-6;  // float rounding of computed similarities
  }

  // Step 1: seed theta when more than seed_min items are in force (by default the scan
  // limit: there the seed is what lets the metadata pass cut the candidates below it; under
  // it the best-first scan raises theta faster than a walk). The count (a few microseconds
  // at 10^6 items) is taken only when the store is larger than seed_min and, for a stabbing
  // query, the sizes of the tree nodes on T's path exceed it. Items out of force
  // in latest mode are bounded later, at theta / penalty, after stage 0 has raised theta.
  void start() {
    if (p_.seed_ef == 0 || meta_.size() <= p_.seed_min) return;
    if ((p_.time.mode == Mode::Latest || p_.time.mode == Mode::AsOf) &&
        st_.intervals().valid_at_upper_bound(p_.time.t) <= p_.seed_min)
      return;  // the tree path's sizes already rule the seed out (no endpoint read)
    r_.in_force = estimate_in_force();
    // The seed admits items in force only: any eligible items give a valid lower bound,
    // and in latest mode penalised ones would drag it down to ~penalty x score, which lets
    // every out-of-force item through the metadata pass.
    if (r_.in_force > p_.seed_min) walk(std::max(p_.seed_ef, 2 * p_.k), true);
  }
  // After the group's metadata pass: `candidates` rows can still reach theta. Returns
  // false if this query goes to the graph plan instead (then it is finished).
  bool choose_plan(std::size_t candidates) {
    r_.candidates = candidates;
    if (!p_.exact && candidates > p_.scan_limit) { graph(); return false; }
    return true;
  }
  // The cap on this query's score of an item with validity v and penalty pen (similarity
  // unknown) as (a + b * v) * pen, and the fused score as (c * s+ + e * s + b2 * v) * pen,
  // for the group's vectorised loops.
  void linear_form(double& a, double& b, double& c, double& e, double& b2) const {
    if (p_.fusion == Fusion::Product) { a = 0.0; b = std::min(1.0, s_cap_); c = 1.0; e = 0.0; b2 = 0.0; }
    else { a = p_.alpha * s_cap_; b = 1.0 - p_.alpha; c = 0.0; e = p_.alpha; b2 = 1.0 - p_.alpha; }
  }
  bool product() const { return p_.fusion == Fusion::Product; }
  // Offer a row whose similarity is known: penalty, decay and validity are recomputed in
  // double from its metadata, so a row scores identically whichever path found it.
  void score(std::uint32_t row, float sim) {
    double pen = admit(row);
    if (pen == 0.0) return;
    double d = decay_of(row);
    offer(row, sim, static_cast<double>(meta_.reliability(row)) * d, d, pen);
  }
  void count_scored() { ++r_.scored; }
  // The exact penalty of a row (0: ineligible, tau included) and its validity v.
  double eligibility(std::uint32_t row, double& v) const {
    double pen = admit(row);
    if (pen == 0.0) return 0.0;
    v = static_cast<double>(meta_.reliability(row)) * decay_of(row);
    if (p_.tau > 0.0 && !(v >= p_.tau)) return 0.0;
    return pen;
  }
  double fused(double s, double v) const { return fuse(s, v); }
  double current_theta() const { return theta(); }
  // Penalty of items out of force in latest mode (0: excluded).
  double out_of_force_penalty() const {
    if (p_.time.mode != Mode::Latest || p_.invalid == InvalidPolicy::Exclude) return 0.0;
    return p_.invalid == InvalidPolicy::Penalize ? p_.penalty : 1.0;
  }
  const SearchParams& params() const { return p_; }
  const float* query() const { return q_; }
  bool uses_dot() const { return st_.metric() != Metric::L2; }
  float similarity(std::uint32_t row) const { return st_.ann().similarity(q_, row); }

  // Per fact type, the observed_at range whose decay can still reach theta for an item
  // with penalty `pen` (false: none).
  bool fresh_range_for(std::size_t type, double pen, micros& lo, micros& hi) const {
    double th = theta();
    if (!(th > -std::numeric_limits<double>::infinity())) { lo = kOpenStart; hi = kOpenEnd; return true; }
    double reach = decay_reach_days(specs_[type], validity_level(th / pen));
    if (reach < 0) return false;
    const double t = static_cast<double>(p_.time.t);
    const double span = reach * kMicrosPerDay;
    auto clampd = [](double x) {
      if (!(x > -9.2e18)) return kOpenStart;
      if (!(x < 9.2e18)) return kOpenEnd;
      return static_cast<micros>(x);
    };
    lo = std::isinf(reach) ? kOpenStart : clampd(std::floor(t - span));
    hi = (specs_[type].symmetric && !std::isinf(reach)) ? clampd(std::ceil(t + span)) : kOpenEnd;
    return true;
  }

  QueryResult finish() {
    r_.certified = r_.plan == Plan::Scan;
    Worse cmp{&st_};
    std::sort(heap_.begin(), heap_.end(), cmp);
    r_.hits = std::move(heap_);
    return std::move(r_);
  }

 private:
  double decay_of(std::uint32_t row) const {
    double age = age_days(p_.time.t, meta_.observed_at(row));
    double d;
    kernels().decay(specs_[meta_.fact_type(row)], &age, &d, 1);
    return d;
  }
  double fuse(double s, double v) const {
    if (p_.fusion == Fusion::Product) { double sp = s < 0 ? 0 : (s > 1 ? 1 : s); return sp * v; }
    return p_.alpha * s + (1.0 - p_.alpha) * v;
  }
  // Least validity an item in force needs for its bound to reach theta.
  double validity_level(double theta) const {
    if (p_.fusion == Fusion::Product) return theta / std::min(1.0, s_cap_);
    if (p_.alpha >= 1.0) return -1.0;
    return (theta - p_.alpha * s_cap_) / (1.0 - p_.alpha);
  }
  // Eligibility before similarity and arbitration; returns the penalty (0 = ineligible).
  double admit(std::uint32_t row) const {
    if (!meta_.known_at(row, p_.time.known_at)) return 0.0;
    if (!p_.type_mask.empty()) {
      const std::uint16_t type = meta_.fact_type(row);
      if (type >= p_.type_mask.size() || !p_.type_mask[type]) return 0.0;
    }
    if (in_force(meta_, row, p_.time)) return 1.0;
    if (p_.time.mode != Mode::Latest) return 0.0;
    if (p_.invalid == InvalidPolicy::Exclude) return 0.0;
    return p_.invalid == InvalidPolicy::Penalize ? p_.penalty : 1.0;
  }
  bool is_winner(std::uint32_t row) const {
    if (!p_.arbitrate) return true;
    std::int32_t stem = meta_.stem(row);
    if (stem < 0) return true;
    return is_stem_winner(row, st_.stems(), static_cast<std::uint32_t>(stem), meta_, p_.time);
  }

  // ----- top-k heap: worst on top; ties broken by ascending id
  struct Worse {
    const Store* st;
    bool operator()(const Hit& a, const Hit& b) const {  // true if a ranks before b
      if (a.score != b.score) return a.score > b.score;
      return st->id_of(a.row) < st->id_of(b.row);
    }
  };
  double theta() const {
    return heap_.size() < p_.k ? -std::numeric_limits<double>::infinity() : heap_.front().score;
  }
  bool beats_worst(double score, std::uint32_t row) const {
    if (heap_.size() < p_.k) return true;
    const Hit& w = heap_.front();
    if (score != w.score) return score > w.score;
    return st_.id_of(row) < st_.id_of(w.row);
  }
  void offer(std::uint32_t row, float sim, double v, double d, double pen) {
    double sc = fuse(sim, v) * pen;
    if (!beats_worst(sc, row)) return;
    for (const Hit& h : heap_) if (h.row == row) return;  // seeded earlier
    if (!is_winner(row)) return;
    Hit h{row, sc, sim, static_cast<float>(v), static_cast<float>(d), static_cast<float>(pen)};
    Worse cmp{&st_};
    if (heap_.size() == p_.k) { std::pop_heap(heap_.begin(), heap_.end(), cmp); heap_.pop_back(); }
    heap_.push_back(h);
    std::push_heap(heap_.begin(), heap_.end(), cmp);
  }

  std::size_t estimate_in_force() const {
    const auto& iv = st_.intervals();
    switch (p_.time.mode) {
      case Mode::Latest:
      case Mode::AsOf: return iv.count_valid_at(p_.time.t);
      case Mode::Window: return iv.count_overlapping(p_.time.win_start, p_.time.win_end);
      case Mode::All: return meta_.size();
    }
    return meta_.size();
  }

  // ----- filtered HNSW walks (the seed, and the graph plan)
  struct Filter : hnswlib::BaseFilterFunctor {
    const Searcher* s;
    bool in_force_only = false;
    bool operator()(hnswlib::labeltype label) override {
      const std::uint32_t row = static_cast<std::uint32_t>(label);
      double pen = s->admit(row);
      if (pen == 0.0 || (in_force_only && pen != 1.0)) return false;
      if (s->p_.tau > 0.0 && static_cast<double>(s->meta_.reliability(row)) * s->decay_of(row) < s->p_.tau) return false;
      return s->is_winner(static_cast<std::uint32_t>(label));
    }
  };
  void walk(std::size_t want, bool in_force_only = false) {
    Filter f;
    f.s = this;
    f.in_force_only = in_force_only;
    last_walk_ = st_.ann().search(q_, want, &f);
    r_.scored += last_walk_.size();
    for (const auto& hit : last_walk_) {
      // rescored with the engine's own kernel, so a row scores identically in every plan
      std::uint32_t row = hit.second;
      double d = decay_of(row);
      offer(row, similarity(row), static_cast<double>(meta_.reliability(row)) * d, d, admit(row));
    }
  }
  void graph() {
    r_.plan = Plan::Graph;
    std::size_t want = std::max(p_.ef, 4 * p_.k);
    for (;;) {
      heap_.clear();
      walk(want);
      bool exhausted = last_walk_.size() < want;
      double s_front = last_walk_.empty() ? -1.0 : last_walk_.back().first;
      if (exhausted || fuse(s_front, 1.0) < theta() || want >= p_.ef_max) break;
      want = std::min(want * 2, p_.ef_max);
    }
  }

  const Store& st_;
  SearchParams p_;
  const float* q_;
  const MetaTable& meta_;
  const std::vector<DecaySpec>& specs_;
  double s_cap_;
  std::vector<Hit> heap_;
  std::vector<std::pair<float, std::uint32_t>> last_walk_;
  QueryResult r_;
};

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
    const double out_pen = qs[0].out_of_force_penalty();
    if (out_pen <= 0.0) return false;
    if (!seeded) {  // fewer than k eligible rows in force: every other row may count
      for (std::uint32_t r = 0; r < meta.size(); ++r) if (!meta.overlaps(r, a, b)) emit(r);
      return false;
    }
    if (ranges_for(out_pen) > 0) emit_ranges([&](std::uint32_t r) { return !meta.overlaps(r, a, b); });
    return false;
  }
  if (mode == Mode::All && !seeded) { for (std::uint32_t r = 0; r < meta.size(); ++r) emit(r); return true; }
  std::size_t by_interval = mode == Mode::All ? meta.size() : st.intervals().count_overlapping(a, b);
  const std::size_t by_fresh = seeded ? ranges_for(1.0) : meta.size() + 1;  // fills `ranges`
  if (seeded && (mode == Mode::All || by_fresh <= by_interval)) {
    emit_ranges([](std::uint32_t) { return true; });
    return true;  // the freshness lists hold every row, in force or not
  }
  st.intervals().for_each_overlapping(a, b, emit);
  return false;
}

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

// A float no smaller than x (bounds stay bounds after rounding).
inline float round_up(double x) {
  float f = static_cast<float>(x);
  return static_cast<double>(f) < x ? std::nextafter(f, INFINITY) : f;
}

// A float no larger than theta lowered by a relative and an absolute margin: the float
// tests of the scans only gate the exact (double) comparison in offer(), never replace it.
inline float lowered_threshold(double theta) {
  const double lowered = theta - 1e-5 * std::fabs(theta) - 1e-6;
  const float f = static_cast<float>(lowered);
  return static_cast<double>(f) > lowered ? std::nextafter(f, -INFINITY) : f;
}

// Run the certified plan for a group of queries (at most 64) so that metadata and vectors
// needed by several of them are loaded once:
//  - one pass over the group's rows computes, per (row, query), penalty, validity and
//    bound (Kernels::bound_rows, vectorised across the queries) and keeps rows some query
//    can still use;
//  - rows are then visited best bound first; a row is skipped once every query's bound
//    for it is below that query's k-th score; otherwise its compact copy gives the
//    queries that need it a similarity cap (dot_qt_i8 for rows many need, dot_i8_some
//    for the others) and its full vector is loaded once for those the cap cannot rule out.
inline void run_group(std::vector<Searcher>& qs, const Store& st, std::vector<QueryResult>& out,
                      const std::vector<std::size_t>& where) {
  const std::size_t G = qs.size();
  for (Searcher& q : qs) q.start();
  const auto& meta = st.meta();
  const auto& specs = st.decay_specs();
  const Kernels& k = kernels();
  std::vector<char> active(G, 1);
  // work buffers, reused across groups on this thread (fresh multi-MB buffers per group
  // cost page faults)
  thread_local std::vector<std::uint32_t> rows, kept, order;
  thread_local huge_vector<float> val, pen;
  thread_local std::vector<double> best;
  rows.clear();
  // per-group constants of the scoring pass: the queries row-major (Q) and transposed (QT), and,
  // per query, bound = (A + B v) pen; product score = s+ v pen; linear = (E s + B2 v) pen
  const std::size_t d = st.dim();
  const std::size_t Gp = (G + 7) / 8 * 8;  // per-row stride of the validity / penalty rows
  std::vector<float> Q(G * d);
  for (std::size_t g = 0; g < G; ++g) std::copy(qs[g].query(), qs[g].query() + d, Q.begin() + static_cast<std::ptrdiff_t>(g * d));
  std::vector<float> QT(d * Gp);  // the queries transposed (d x Gp), for dot_qt_i8
  transpose_queries(Q.data(), G, d, Gp, QT.data());
  const AnnIndex& ann = st.ann();
  const bool dense = qs[0].uses_dot();
  const bool product = qs[0].product();
  // With AVX512-VNNI (Kernels::dot_qt_s8), batched compact caps use the queries quantised
  // to int8: q = SQ q8 + r with |r| <= RQ, and the row's compact copy x = cs c + e with
  // |e| <= ce and |x| <= XN, so
  //   <q, x> <= cs SQ <q8, c> + RQ (XN + ce) + |q| ce,
  // the usual cap cs raw + |q| ce with raw = SQ <q8, c> + RQ (XN + ce) / cs (exact integer
  // dots; the compact copy's ce already allows for a float dot's rounding).
  const bool s8 = dense && k.dot_qt_s8 != nullptr && d <= 65536;
  thread_local std::vector<std::int8_t> Q8;
  thread_local std::vector<std::uint8_t> QU;
  double SQ[64] = {}, RQ[64] = {};
  const double XN = st.max_norm() * (1.0 + 1e-6) + 1e-12;
  if (s8) {
    Q8.resize(G * d);
    quantise_queries(Q.data(), G, d, Q8.data(), SQ, RQ);
    QU.resize((d + 3) / 4 * Gp * 4);
    transpose_queries_s8(Q8.data(), G, d, Gp, QU.data());
  }
  alignas(64) float A[64], B[64], E[64], B2[64];
  alignas(64) double Ad[64] = {}, Bd[64] = {};  // the bound's coefficients unrounded (metadata pass)
  double NQ[64];  // |q| rounded up (the compact copy's error term scales with it)
  for (std::size_t g = 0; g < G; ++g) {
    double n2 = 0.0;
    for (std::size_t i = 0; i < d; ++i) n2 += static_cast<double>(Q[g * d + i]) * Q[g * d + i];
    NQ[g] = std::sqrt(n2) * (1.0 + 1e-12);
  }
  alignas(64) float SQf[64], RQf[64], NQf[64];  // float copies for the s8 batches (finish_s8)
  for (std::size_t g = 0; g < G; ++g) {
    SQf[g] = static_cast<float>(SQ[g]);
    RQf[g] = round_up(RQ[g]);
    NQf[g] = round_up(NQ[g]);
  }
  for (std::size_t g = 0; g < G; ++g) {
    double a, b, c, e, b2;
    qs[g].linear_form(a, b, c, e, b2);
    Ad[g] = a; Bd[g] = b;
    A[g] = round_up(a); B[g] = round_up(b); E[g] = round_up(e); B2[g] = round_up(b2);
  }
  // per query, padded to 64 lanes (never known, never in force): in force <=> valid_from <= X1
  // && valid_to > X2 (and not deprecated in latest mode); known <=> ingested_at <= KA < retracted_at
  const Mode mode = qs[0].params().time.mode;
  alignas(64) micros X1[64], X2[64], KA[64];
  for (std::size_t g = 0; g < 64; ++g) { KA[g] = kOpenStart; X1[g] = kOpenStart; X2[g] = kOpenEnd; }
  for (std::size_t g = 0; g < G; ++g) {
    const TimeContext& tc = qs[g].params().time;
    KA[g] = tc.known_at;
    switch (mode) {
      case Mode::Latest: case Mode::AsOf: X1[g] = tc.t; X2[g] = tc.t; break;
      case Mode::Window:
        if (tc.win_end == kOpenStart) { X1[g] = kOpenStart; X2[g] = kOpenEnd; }  // empty
        else { X1[g] = tc.win_end - 1; X2[g] = tc.win_start; }
        break;
      case Mode::All: X1[g] = kOpenEnd; X2[g] = kOpenStart; break;
    }
  }
  // A row's compact-copy constants for the caps: cs, ce in double; in float cs, ce rounded up
  // and the residual addend (XN + ce) / cs rounded up (cs = 0: codes 0, |x| <= ce).
  struct CompactRow { double cs, ce; float fcs, fce, fadd; };
  auto compact_row = [&](std::uint32_t row) {
    const double cs = ann.compact_scale(row), ce = ann.compact_err(row);
    return CompactRow{cs, ce, static_cast<float>(cs), round_up(ce), cs > 0.0 ? round_up((XN + ce) / cs) : 0.0f};
  };
  // Query g's float cap from the exact integer dot D (s8; see finish_s8), and in double.
  auto cap_s8 = [&](std::size_t g, std::int32_t D, const CompactRow& c) {
    const float a = SQf[g] * static_cast<float>(D), b = RQf[g] * c.fadd, e = NQf[g] * c.fce;
    return c.fcs * (a + b) + e + 1e-6f * (c.fcs * (std::fabs(a) + b) + e);
  };
  auto cap_s8_exact = [&](std::size_t g, std::int32_t D, const CompactRow& c) {
    return c.cs * SQ[g] * static_cast<double>(D) + RQ[g] * (XN + c.ce) + NQ[g] * c.ce;
  };
  auto process = [&](int stage) {
    // --- metadata pass
    // per kept row: G validities / penalties, as floats rounded up (bounds only; scores are
    // recomputed in double when offered). The per-query loops below are branch-free so
    // that they vectorise across the group's queries.
    // val/pen: per kept row (stride Gp); best: its largest bound over the queries
    // (the buffers only grow: shrinking and regrowing would zero-fill them every group)
    if (val.size() < rows.size() * Gp) { val.resize(rows.size() * Gp); pen.resize(rows.size() * Gp); }
    std::vector<std::size_t> counts(G, 0);
    {
      // per query, padded to Gp lanes with neutral values (never known, theta = +inf)
      alignas(64) double Td[64], th[64];
      alignas(64) std::uint32_t cnt[64];
      const SearchParams& p0 = qs[0].params();
      for (std::size_t g = 0; g < Gp; ++g) { Td[g] = 0.0; th[g] = std::numeric_limits<double>::infinity(); cnt[g] = 0; }
      for (std::size_t g = 0; g < G; ++g) {
        th[g] = qs[g].current_theta();
        Td[g] = static_cast<double>(qs[g].params().time.t);
      }
      if (kept.size() < rows.size()) { kept.resize(rows.size()); best.resize(rows.size()); }
      BoundArgs ba;
      ba.Gp = Gp; ba.G = G; ba.t = Td; ba.known_at = KA; ba.x1 = X1; ba.x2 = X2; ba.theta = th; ba.a = Ad; ba.b = Bd;
      ba.tau = p0.tau; ba.out_pen = qs[0].out_of_force_penalty(); ba.latest = mode == Mode::Latest;
      ba.specs = specs.data(); ba.n_specs = specs.size();
      if (!p0.type_mask.empty()) { ba.type_mask = p0.type_mask.data(); ba.mask_n = p0.type_mask.size(); }
      ba.kept = kept.data(); ba.best = best.data(); ba.val = val.data(); ba.pen = pen.data(); ba.cnt = cnt;
      const std::size_t nk = k.bound_rows(ba, &meta, rows.data(), rows.size());
      kept.resize(nk); best.resize(nk);
      for (std::size_t g = 0; g < G; ++g) counts[g] = cnt[g];
    }
    if (stage == 0)
      for (std::size_t g = 0; g < G; ++g) active[g] = qs[g].choose_plan(counts[g]);
    std::vector<std::size_t> act;
    for (std::size_t g = 0; g < G; ++g) if (active[g]) act.push_back(g);
    // --- scoring pass, best bound first
    bucket_order(best, order);
    alignas(64) float TH[64], ON[64], some[64];
    alignas(64) std::uint32_t nd[64], which[64];
    for (std::size_t g = 0; g < G; ++g) ON[g] = 0.0f;
    for (std::size_t g : act) ON[g] = 1.0f;
    // thresholds as floats, lowered by a relative and an absolute margin and rounded down:
    // the float tests below only gate the exact (double) comparison in offer(), never
    // replace it. Refreshed whenever a query's theta moves.
    // min_th: the least threshold of the active queries. A row whose best exact bound (from
    // the metadata pass) is below it is needed by none of them: skipped without reading its
    // validities (rows come best bound first, so most of the tail goes this way).
    float min_th = INFINITY;
    auto refresh = [&](std::size_t g) {
      TH[g] = lowered_threshold(qs[g].current_theta());
      min_th = INFINITY;
      for (std::size_t a : act) min_th = std::min(min_th, TH[a]);
    };
    for (std::size_t g = 0; g < G; ++g) refresh(g);
    // Dense metrics read the compact (int8) copy first: its similarity cap decides, per
    // query, whether the full vector is needed at all (see AnnIndex::compact).
    constexpr std::size_t AHEAD = 4;
    auto prefetch = [&](std::size_t jj) {
      if (best[order[jj]] < min_th) return;
      for (std::size_t off = 0; off < Gp; off += 16) {
        __builtin_prefetch(&val[order[jj] * Gp + off]);
        __builtin_prefetch(&pen[order[jj] * Gp + off]);
      }
      if (dense) ann.prefetch_compact(kept[order[jj]]); else ann.prefetch(kept[order[jj]]);
    };
    // Which queries still need row j: its bound reaches their (float, lowered) threshold.
    auto bound_reaches = [&](const float* V, const float* P, std::size_t g) -> std::uint32_t {
      return (ON[g] * P[g] * (A[g] + B[g] * V[g]) >= TH[g]) & (P[g] > 0.0f) & (ON[g] > 0.0f);
    };
    auto needs = [&](std::size_t j) {
      const float* V = &val[order[j] * Gp];
      const float* P = &pen[order[j] * Gp];
      std::uint32_t n_needed = 0;
      for (std::size_t g = 0; g < G; ++g) {
        nd[g] = bound_reaches(V, P, g);
        n_needed += nd[g];
      }
      return n_needed;
    };
    // The full similarity and the exact score of row j for the queries with nd[g] set.
    auto score_needed = [&](const float* V, const float* P, std::uint32_t row) {
      const float* x = nullptr;
      for (std::size_t g = 0; g < G; ++g) {
        if (!nd[g]) continue;
        qs[g].count_scored();
        if (x == nullptr) x = ann.vector(row);
        const float sim = dense ? k.dot(Q.data() + g * d, x, d) : qs[g].similarity(row);
        float sc;
        if (product) { float sp = sim < 0.f ? 0.f : (sim > 1.f ? 1.f : sim); sc = sp * V[g] * P[g]; }
        else sc = (E[g] * sim + B2[g] * V[g]) * P[g];
        if (!(sc >= TH[g])) continue;
        qs[g].score(row, sim);
        refresh(g);
      }
    };
    // Row j for the queries that need it: the compact copy's cap first (raw: its dots with
    // the group's queries when computed in a batch, else one dot per query), then the full
    // similarity and the exact score where the cap cannot rule the row out.
    auto finish = [&](std::size_t j, const float* raw_all) {
      if (needs(j) == 0) return;  // thresholds may have risen since j was queued
      const float* V = &val[order[j] * Gp];
      const float* P = &pen[order[j] * Gp];
      const std::uint32_t row = kept[order[j]];
      if (dense) {
        const std::int8_t* c = ann.compact(row);
        const double cs = ann.compact_scale(row), ce = ann.compact_err(row);
        auto cut = [&](std::size_t g, float raw) {  // nd[g] &= (the cap's bound reaches TH[g])
          const double cap = cs * raw + NQ[g] * ce;
          double ub;
          if (product) ub = (cap < 0.0 ? 0.0 : (cap > 1.0 ? 1.0 : cap)) * V[g] * P[g];
          else ub = (E[g] * cap + B2[g] * V[g]) * P[g];
          return nd[g] & static_cast<std::uint32_t>(ub >= TH[g]);
        };
        if (raw_all) {
          for (std::size_t g = 0; g < G; ++g) nd[g] = cut(g, raw_all[g]);  // branch-free
        } else {  // the few queries that need the row: one int8 conversion for all
          std::size_t n = 0;
          for (std::size_t g = 0; g < G; ++g) if (nd[g]) which[n++] = static_cast<std::uint32_t>(g);
          k.dot_i8_some(c, Q.data(), which, n, d, some);
          for (std::size_t j = 0; j < n; ++j) nd[which[j]] = cut(which[j], some[j]);
        }
      }
      score_needed(V, P, row);
    };
    // Rows that more than an eighth of the group needs get their compact dots kBatch at a time, with all
    // the queries (one pass over the transposed queries serves the batch).
    constexpr std::size_t kBatch = 4;
    std::size_t pend[kBatch];
    const std::int8_t* xs[kBatch];
    alignas(64) float raw[kBatch * 64];
    alignas(64) std::int32_t iraw[kBatch * 64];
    std::size_t n_pend = 0;
    // The batched int8 x int8 caps (s8), in float across the group's queries: for each row
    // of the batch, nd[g] = (the row's bound reaches TH[g]) & (its cap does), then the full
    // similarity for the few queries left. Per query, with D the exact integer dot,
    //   a = SQ D, b = RQ (XN + ce) / cs, cap = cs (a + b) + |q| ce,
    // every float operation rounds by at most 2^-24 relative (about 8 of them, the float
    // copies of SQ and cs included), so cap + 1e-6 (cs (|a| + b) + |q| ce) is at least the
    // double cap; RQ, |q|, ce and the addend are rounded up, so each term is an upper bound.
    // Bounds then use the rounded-up validities and penalties as before.
    auto finish_s8 = [&](std::size_t j, const std::int32_t* __restrict D) {
      const float* __restrict V = &val[order[j] * Gp];
      const float* __restrict P = &pen[order[j] * Gp];
      const std::uint32_t row = kept[order[j]];
      const CompactRow cr = compact_row(row);
      auto cap = [&](std::size_t g) { return cap_s8(g, D[g], cr); };
      std::uint32_t any = 0;
      if (product) {  // two loops, so that each vectorises without a per-lane branch
        for (std::size_t g = 0; g < G; ++g) {
          const float c = cap(g), cc = c < 0.0f ? 0.0f : (c > 1.0f ? 1.0f : c);
          nd[g] = bound_reaches(V, P, g) & (cc * (V[g] * P[g]) >= TH[g]);
          any |= nd[g];
        }
      } else {
        for (std::size_t g = 0; g < G; ++g) {
          nd[g] = bound_reaches(V, P, g) & ((E[g] * cap(g) + B2[g] * V[g]) * P[g] >= TH[g]);
          any |= nd[g];
        }
      }
      if (any) score_needed(V, P, row);
    };
    auto flush = [&] {
      if (n_pend == 0) return;
      if (s8) {
        k.dot_qt_s8(xs, n_pend, QU.data(), Gp, d, iraw);
        for (std::size_t b = 0; b < n_pend; ++b) finish_s8(pend[b], iraw + b * Gp);
      } else {
        k.dot_qt_i8(xs, n_pend, QT.data(), Gp, d, raw);
        for (std::size_t b = 0; b < n_pend; ++b) finish(pend[b], raw + b * Gp);
      }
      n_pend = 0;
    };
    for (std::size_t j = 0; j < std::min(order.size(), AHEAD); ++j) prefetch(j);
    for (std::size_t j = 0; j < order.size(); ++j) {
      if (j + AHEAD < order.size()) prefetch(j + AHEAD);
      if (best[order[j]] < min_th) continue;
      const std::uint32_t n_needed = needs(j);
      if (n_needed == 0) continue;
      if (dense && 8 * n_needed > G) {  // a batched row costs about as much as G / 6 single dots
        pend[n_pend] = j;
        xs[n_pend] = ann.compact(kept[order[j]]);
        if (++n_pend == kBatch) flush();
      } else {
        finish(j, nullptr);
      }
    }
    flush();
  };
  // ----- the similarity-first order (see the top of this file): rows in storage order,
  // compact dots with every query first, metadata per query only where the cap reaches theta
  auto process_sf = [&](int stage) {
    // rows in storage order (a bitmap over the rows; also drops any duplicate)
    thread_local std::vector<std::uint64_t> bits;
    const std::size_t N = meta.size();
    if (bits.size() < N / 64 + 1) bits.assign(N / 64 + 1, 0);
    for (std::uint32_t r : rows) bits[r >> 6] |= std::uint64_t{1} << (r & 63);
    std::size_t n = 0;
    for (std::size_t w = 0; w < N / 64 + 1; ++w) {
      std::uint64_t bw = bits[w];
      bits[w] = 0;
      while (bw) { rows[n++] = static_cast<std::uint32_t>(w * 64 + static_cast<std::size_t>(__builtin_ctzll(bw))); bw &= bw - 1; }
    }
    rows.resize(n);
    if (stage == 0)  // the scan's candidates: every row it visits
      for (std::size_t g = 0; g < G; ++g) active[g] = qs[g].choose_plan(n);
    std::vector<std::size_t> act;
    for (std::size_t g = 0; g < G; ++g) if (active[g]) act.push_back(g);
    if (act.empty()) return;
    const SearchParams& p0 = qs[0].params();
    const bool latest = mode == Mode::Latest;
    const double out_pen = qs[0].out_of_force_penalty();
    const float out_pen_f = round_up(out_pen);
    micros t_min = kOpenEnd, t_max = kOpenStart, k_min = kOpenEnd, k_max = kOpenStart;
    micros maxX1 = std::numeric_limits<micros>::min(), minX2 = std::numeric_limits<micros>::max();
    double maxA = 0.0, maxB = 0.0;
    for (std::size_t g : act) {
      const TimeContext& tc = qs[g].params().time;
      t_min = std::min(t_min, tc.t); t_max = std::max(t_max, tc.t);
      k_min = std::min(k_min, tc.known_at); k_max = std::max(k_max, tc.known_at);
      maxX1 = std::max(maxX1, X1[g]); minX2 = std::min(minX2, X2[g]);
      maxA = std::max(maxA, Ad[g]); maxB = std::max(maxB, Bd[g]);
    }
    alignas(64) float TH[64], ON[64];
    for (std::size_t g = 0; g < 64; ++g) { TH[g] = INFINITY; ON[g] = 0.0f; }
    for (std::size_t g : act) ON[g] = 1.0f;
    float min_th = INFINITY;
    auto refresh = [&](std::size_t g) {
      TH[g] = lowered_threshold(qs[g].current_theta());
      min_th = INFINITY;
      for (std::size_t a : act) min_th = std::min(min_th, TH[a]);
    };
    for (std::size_t g : act) refresh(g);
    constexpr std::size_t kBatch = 4;
    std::uint32_t pend[kBatch];
    float vmx[kBatch];
    const std::int8_t* xs[kBatch];
    alignas(64) std::int32_t iraw[kBatch * 64];
    alignas(64) float raw[kBatch * 64];
    alignas(64) std::uint32_t nd[64];
    std::size_t n_pend = 0;
    // The exact phase for the lanes with nd[g] set, given their similarity caps.
    auto exact = [&](std::uint32_t row, const double* capd) {
      const float* x = nullptr;
      for (std::size_t g = 0; g < G; ++g) {
        if (!nd[g]) continue;
        double v = 0.0;
        const double pen = qs[g].eligibility(row, v);
        if (pen == 0.0) continue;
        if (!(qs[g].fused(capd[g], v) * pen >= TH[g])) continue;
        qs[g].count_scored();
        if (x == nullptr) x = ann.vector(row);
        const float sim = k.dot(Q.data() + g * d, x, d);
        qs[g].score(row, sim);
        refresh(g);
      }
    };
    alignas(64) double capd[64];
    // batched rows: caps from the exact integer dots D (see finish_s8)
    alignas(64) float PL[64];
    // D: the row's exact integer dots with the int8 queries (s8), else R: its float dots
    // with the float queries (dot_qt_i8); the cap is as in finish_s8 and finish.
    auto finish_row = [&](std::uint32_t row, float vmax, const std::int32_t* __restrict D, const float* __restrict R) {
      {  // per lane: the penalty (0: not known at K)
        const micros vf = meta.valid_from(row), vt = meta.valid_to(row), ing = meta.ingested_at(row),
                     ret = meta.retracted_at(row);
        const bool live = !(latest && meta.deprecated(row));
        for (std::size_t g = 0; g < G; ++g) {
          const bool known = (ing <= KA[g]) & (KA[g] < ret);
          const bool inf = (vf <= X1[g]) & (vt > X2[g]) & live;
          PL[g] = known ? (inf ? 1.0f : out_pen_f) : 0.0f;
        }
      }
      const CompactRow cr = compact_row(row);
      std::uint32_t any = 0;
      auto test = [&](std::size_t g, float c) {  // c: the lane's float cap, rounded up
        const float pm = PL[g];
        float ub;
        if (product) { const float cc = c < 0.0f ? 0.0f : (c > 1.0f ? 1.0f : c); ub = cc * vmax * pm; }
        else ub = (E[g] * c + B2[g] * vmax) * pm;
        nd[g] = (ub >= TH[g]) & (ON[g] > 0.0f) & (pm > 0.0f);
        any |= nd[g];
      };
      if (D) {
        for (std::size_t g = 0; g < G; ++g) test(g, cap_s8(g, D[g], cr));
      } else {
        for (std::size_t g = 0; g < G; ++g) {
          const float a = cr.fcs * R[g], e = NQf[g] * cr.fce;
          test(g, a + e + 1e-6f * (std::fabs(a) + e));
        }
      }
      if (!any) return;
      for (std::size_t g = 0; g < G; ++g)
        if (nd[g]) capd[g] = D ? cap_s8_exact(g, D[g], cr) : cr.cs * static_cast<double>(R[g]) + NQ[g] * cr.ce;
      exact(row, capd);
    };
    auto flush = [&] {
      if (n_pend == 0) return;
      if (s8) {
        k.dot_qt_s8(xs, n_pend, QU.data(), Gp, d, iraw);
        for (std::size_t b = 0; b < n_pend; ++b) finish_row(pend[b], vmx[b], iraw + b * Gp, nullptr);
      } else {
        k.dot_qt_i8(xs, n_pend, QT.data(), Gp, d, raw);
        for (std::size_t b = 0; b < n_pend; ++b) finish_row(pend[b], vmx[b], nullptr, raw + b * Gp);
      }
      n_pend = 0;
    };
    for (std::size_t i = 0; i < n; ++i) {
      if (i + 8 < n) ann.prefetch_compact(rows[i + 8]);
      const std::uint32_t row = rows[i];
      const std::uint16_t type = meta.fact_type(row);
      if (!p0.type_mask.empty() && (type >= p0.type_mask.size() || !p0.type_mask[type])) continue;
      const bool out_all = meta.valid_from(row) > maxX1 || meta.valid_to(row) <= minX2 || (latest && meta.deprecated(row));
      const double pm = out_all ? out_pen : 1.0;
      if (pm <= 0.0) continue;
      if (meta.ingested_at(row) > k_max || meta.retracted_at(row) <= k_min) continue;  // known to no query
      // the largest decay over the group's times: decay is non-increasing in |age|
      const micros obs = meta.observed_at(row);
      double ages[3] = {age_days(t_min, obs), age_days(t_max, obs), 0.0}, dd[3];
      const DecaySpec& spec = specs[type];
      const std::size_t na = spec.symmetric && obs >= t_min && obs <= t_max ? 3 : 2;
      k.decay(spec, ages, dd, na);
      double dmax = std::max(dd[0], dd[1]);
      if (na == 3) dmax = std::max(dmax, dd[2]);
      const double vmax = static_cast<double>(meta.reliability(row)) * dmax * (1.0 + 1e-9);
      if (!(vmax >= p0.tau)) continue;
      if ((maxA + maxB * vmax) * pm < min_th) continue;
      pend[n_pend] = row;
      vmx[n_pend] = round_up(vmax);
      xs[n_pend] = ann.compact(row);
      if (++n_pend == kBatch) flush();
    }
    flush();
  };
  // "auto", per stage: similarity first for stages of at least kSimilarityMinRows rows
  // (below that, the bounds order's best-first start raises theta sooner than the storage
  // order does; measured at 200k rows: ~2k rows per group at 1% selectivity favour bounds by
  // 10-20%, ~20k at 10% favour similarity by 1.3-1.5x). Stage 0 also needs the rows to be
  // scanned anyway (exact, or no more than scan_limit of them); beyond that the bounds
  // order's per-query candidate counts after the metadata pass decide which queries walk
  // the graph instead.
  constexpr std::size_t kSimilarityMinRows = 8192;
  const SearchParams& p0 = qs[0].params();
  auto similarity_first = [&](int stage) {
    if (!dense || p0.scan == ScanOrder::Bounds) return false;
    if (p0.scan == ScanOrder::Similarity) return true;
    return rows.size() >= kSimilarityMinRows && (stage == 1 || p0.exact || rows.size() <= p0.scan_limit);
  };
  bool covered = group_rows(qs, st, 0, [&](std::uint32_t r) { rows.push_back(r); });
  if (similarity_first(0)) process_sf(0); else process(0);
  if (!covered) {
    rows.clear();
    group_rows(qs, st, 1, [&](std::uint32_t r) { rows.push_back(r); });
    if (!rows.empty()) { if (similarity_first(1)) process_sf(1); else process(1); }
  }
  for (std::size_t g = 0; g < G; ++g) out[where[g]] = qs[g].finish();
  if (val.capacity() > (std::size_t{16} << 20)) {  // do not keep more than ~64 MB per thread
    for (auto* v : {&val, &pen}) { v->clear(); v->shrink_to_fit(); }
  }
}

}  // namespace chrono

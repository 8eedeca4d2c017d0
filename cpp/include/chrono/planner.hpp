// Fused temporal top-k and the planner that chooses how to compute it.
//
// Score of item e for query q at time T (DESIGN.md, "Scoring"):
//   V(e) = q_e * D_j(T - t_e)                      validity (paper eq. 2/3)
//   product: s+ * V      linear: alpha * s + (1 - alpha) * V       (s+ = clip(s, 0, 1))
//   times a penalty for items not in force (latest mode, deprecated="penalize")
//   items with V < tau never qualify; one version per stem when arbitrating.
// Both fusions are monotone in s and in V, and s <= s_cap, so
//   bound(e) = fuse(s_cap, V(e)) * penalty(e)
// caps the score of an item whose similarity is still unknown.
//
// Plans:
//  * Scan (certified exact): enumerate the items in force with the interval index, compute
//    V and the bound for each from metadata alone, compute similarities for the best
//    `probe` bounds, then only for items whose bound is >= the current k-th score. Every
//    item that could still tie or beat the k-th score has been scored, so the answer is
//    exact. In latest mode, items out of force (penalised) are scanned only if their
//    best possible penalised score could still reach the k-th score.
//  * Graph (approximate): walk HNSW in similarity order with the eligibility filter inside
//    hnswlib's search, fuse the candidates' scores, and widen the walk (ef doubles) until
//    the similarity frontier s_f satisfies fuse(s_f, V_max) <= k-th score (threshold
//    bound) or ef reaches ef_max. HNSW is approximate, so this answer is not certified.
// The planner scans when exact=True or when the interval index counts at most
// `scan_limit` items in force; otherwise it walks the graph.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <queue>
#include <vector>
#include "store.hpp"

namespace chrono {

enum class Fusion : int { Product = 0, Linear = 1 };
enum class InvalidPolicy : int { Penalize = 0, Exclude = 1, Include = 2 };
enum class Plan : std::uint8_t { Scan = 0, Graph = 1 };

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
  std::size_t ef = 64;          // first graph walk width (at least 4k)
  std::size_t ef_max = 4096;    // widest graph walk before giving up on the bound
  std::size_t scan_limit = 30000;  // scan when at most this many items are in force
  std::size_t probe = 0;        // scan: similarities computed before pruning (0: max(8k, 256))
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
  std::size_t scored = 0;  // similarities computed
  std::size_t in_force = 0;  // interval-index count used by the planner
};

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

  QueryResult run() {
    QueryResult r;
    r.in_force = estimate_in_force();
    if (p_.exact || r.in_force <= p_.scan_limit) scan(r);
    else graph(r);
    return r;
  }

 private:
  // ----- per-item pieces
  double decay_of(const Meta& m) const {
    double age = age_days(p_.time.t, m.observed_at);
    double d;
    kernels().decay(specs_[m.fact_type], &age, &d, 1);
    return d;
  }
  double fuse(double s, double v) const {
    if (p_.fusion == Fusion::Product) { double sp = s < 0 ? 0 : (s > 1 ? 1 : s); return sp * v; }
    return p_.alpha * s + (1.0 - p_.alpha) * v;
  }
  // Eligibility before similarity and arbitration; returns the penalty (0 = ineligible).
  double admit(const Meta& m) const {
    if (!m.known_at(p_.time.known_at)) return 0.0;
    if (!p_.type_mask.empty() && (m.fact_type >= p_.type_mask.size() || !p_.type_mask[m.fact_type])) return 0.0;
    if (in_force(m, p_.time)) return 1.0;
    if (p_.time.mode != Mode::Latest) return 0.0;
    if (p_.invalid == InvalidPolicy::Exclude) return 0.0;
    return p_.invalid == InvalidPolicy::Penalize ? p_.penalty : 1.0;
  }
  bool is_winner(std::uint32_t row) const {
    if (!p_.arbitrate) return true;
    std::int32_t stem = meta_[row].stem;
    if (stem < 0) return true;
    return stem_winner(st_.stems()[static_cast<std::size_t>(stem)], meta_, p_.time) == row;
  }

  // ----- top-k heap: worst on top; ties broken by ascending id
  struct Worse {
    const std::vector<std::uint64_t>* ids;
    bool operator()(const Hit& a, const Hit& b) const {  // true if a is better than b
      if (a.score != b.score) return a.score > b.score;
      return (*ids)[a.row] < (*ids)[b.row];
    }
  };
  double theta() const {
    return heap_.size() < p_.k ? -std::numeric_limits<double>::infinity() : heap_.front().score;
  }
  bool beats_worst(double score, std::uint32_t row) const {
    if (heap_.size() < p_.k) return true;
    const Hit& w = heap_.front();
    if (score != w.score) return score > w.score;
    return st_.ids()[row] < st_.ids()[w.row];
  }
  void offer(std::uint32_t row, float sim, double v, double d, double pen) {
    double sc = fuse(sim, v) * pen;
    if (!beats_worst(sc, row) || !is_winner(row)) return;
    Hit h{row, sc, sim, static_cast<float>(v), static_cast<float>(d), static_cast<float>(pen)};
    Worse cmp{&st_.ids()};
    if (heap_.size() == p_.k) { std::pop_heap(heap_.begin(), heap_.end(), cmp); heap_.pop_back(); }
    heap_.push_back(h);
    std::push_heap(heap_.begin(), heap_.end(), cmp);
  }
  void finish(QueryResult& r) {
    Worse cmp{&st_.ids()};
    std::sort(heap_.begin(), heap_.end(), cmp);
    r.hits = std::move(heap_);
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

  // ----- certified scan
  struct Cand { double bound; double v; double d; double pen; std::uint32_t row; };

  void consider(std::uint32_t row, double pen_if_out) {
    const Meta& m = meta_[row];
    double pen = admit(m);
    if (pen == 0.0 || (pen_if_out >= 0 && pen != pen_if_out)) return;
    double d = decay_of(m);
    double v = static_cast<double>(m.reliability) * d;
    if (v < p_.tau || !(v == v)) return;
    cands_.push_back({fuse(s_cap_, v) * pen, v, d, pen, row});
  }

  void score_candidates(QueryResult& r) {
    std::size_t probe = p_.probe ? p_.probe : std::max<std::size_t>(8 * p_.k, 256);
    auto by_bound = [](const Cand& a, const Cand& b) { return a.bound > b.bound; };
    if (cands_.size() > probe) {
      std::nth_element(cands_.begin(), cands_.begin() + static_cast<std::ptrdiff_t>(probe), cands_.end(), by_bound);
      std::sort(cands_.begin(), cands_.begin() + static_cast<std::ptrdiff_t>(probe), by_bound);
    } else {
      std::sort(cands_.begin(), cands_.end(), by_bound);
    }
    for (std::size_t i = 0; i < cands_.size(); ++i) {
      const Cand& c = cands_[i];
      if (c.bound < theta()) continue;
      float sim = st_.ann().similarity(q_, c.row);
      ++r.scored;
      offer(c.row, sim, c.v, c.d, c.pen);
    }
  }

  void scan(QueryResult& r) {
    r.plan = Plan::Scan;
    const TimeContext& tc = p_.time;
    cands_.clear();
    cands_.reserve(std::min<std::size_t>(r.in_force + 16, meta_.size()));
    // 1. items in force, from the interval index (every mode but 'all')
    if (tc.mode == Mode::All) {
      for (std::uint32_t row = 0; row < meta_.size(); ++row) consider(row, -1.0);
    } else if (tc.mode == Mode::Window) {
      st_.intervals().for_each_overlapping(tc.win_start, tc.win_end, [&](std::uint32_t row) { consider(row, 1.0); });
    } else {
      st_.intervals().for_each_valid_at(tc.t, [&](std::uint32_t row) { consider(row, 1.0); });
    }
    score_candidates(r);
    // 2. latest mode: items out of force keep a (penalised) chance unless excluded
    if (tc.mode == Mode::Latest && p_.invalid != InvalidPolicy::Exclude) {
      double pen = p_.invalid == InvalidPolicy::Penalize ? p_.penalty : 1.0;
      double best_possible = fuse(s_cap_, 1.0) * pen;  // V <= 1
      if (pen > 0 && best_possible >= theta()) {
        cands_.clear();
        for (std::uint32_t row = 0; row < meta_.size(); ++row) {
          const Meta& m = meta_[row];
          if (in_force(m, tc)) continue;  // already considered (or ineligible)
          consider(row, pen);
        }
        score_candidates(r);
      }
    }
    r.certified = true;
    finish(r);
  }

  // ----- approximate graph walk
  struct Filter : hnswlib::BaseFilterFunctor {
    const Searcher* s;
    bool operator()(hnswlib::labeltype label) override {
      const Meta& m = s->meta_[label];
      double pen = s->admit(m);
      if (pen == 0.0) return false;
      if (s->p_.tau > 0.0 && static_cast<double>(m.reliability) * s->decay_of(m) < s->p_.tau) return false;
      return s->is_winner(static_cast<std::uint32_t>(label));
    }
  };

  void graph(QueryResult& r) {
    r.plan = Plan::Graph;
    Filter f;
    f.s = this;
    std::size_t want = std::max(p_.ef, 4 * p_.k);
    double pen_max = 1.0;
    if (p_.time.mode == Mode::Latest && p_.invalid == InvalidPolicy::Include) pen_max = 1.0;
    for (;;) {
      heap_.clear();
      auto found = st_.ann().search(q_, want, &f);
      r.scored += found.size();
      for (const auto& [sim, row] : found) {
        const Meta& m = meta_[row];
        double pen = admit(m);
        double d = decay_of(m);
        double v = static_cast<double>(m.reliability) * d;
        offer(row, sim, v, d, pen);
      }
      bool exhausted = found.size() < want;
      double s_front = found.empty() ? -1.0 : found.back().first;
      if (exhausted || fuse(s_front, 1.0) * pen_max < theta() || want >= p_.ef_max) break;
      want = std::min(want * 2, p_.ef_max);
    }
    r.certified = false;
    finish(r);
  }

  const Store& st_;
  const SearchParams& p_;
  const float* q_;
  const std::vector<Meta>& meta_;
  const std::vector<DecaySpec>& specs_;
  double s_cap_;
  std::vector<Cand> cands_;
  std::vector<Hit> heap_;
};

}  // namespace chrono

// One query of the planner (planner.hpp): its parameters (SearchParams), its result
// (QueryResult), and the Searcher that holds its top-k heap, computes the pieces of its
// score, seeds its threshold with a short filtered HNSW walk and runs the graph plan.
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
// ScanAfterGraph: the graph walk found fewer than k eligible rows where more can count (a
// selective filter the walk could not reach), so the query took the certified scan instead.
enum class Plan : std::uint8_t { Scan = 0, Graph = 1, Probe = 2, ScanAfterGraph = 3 };
enum class ScanOrder : int { Auto = 0, Bounds = 1, Similarity = 2 };

struct SearchParams {
  TimeContext time;
  Fusion fusion = Fusion::Product;
  double alpha = 0.75;
  double tau = 0.0;
  InvalidPolicy invalid = InvalidPolicy::Penalize;  // latest mode: items no longer in force
  InvalidPolicy future = InvalidPolicy::Exclude;    // latest mode: items not yet valid at T
  double penalty = 0.1;
  bool arbitrate = true;
  std::vector<std::uint8_t> type_mask;  // empty: every fact type
  const RowSet* filter = nullptr;       // the where= filter's rows (Store::filter_rows); null: every row
  std::size_t k = 10;
  bool exact = false;
  std::size_t ef = 64;             // first graph-plan walk width (at least 4k)
  std::size_t ef_max = 4096;       // widest graph-plan walk
  std::size_t scan_limit = 150000;  // graph plan when more candidates survive (exact=False); the Engine's default
  std::size_t seed_ef = 32;        // seed walk width (0: never seed)
  std::size_t seed_min = 150000;   // seed only when more items than this are in force
  ScanOrder scan = ScanOrder::Auto;  // the certified scan's order (planner.hpp)
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
    if (!p_.exact && candidates > p_.scan_limit && graph_plan_allowed()) {
      graph();
      if (heap_.size() >= p_.k || candidates < p_.k) return false;
      // A short answer: scan as well. The walk's hits stay (exact scores; the scan skips rows
      // already held), and rows the seed's theta ruled out stay out: it bounds the answer.
      r_.plan = Plan::ScanAfterGraph;
    }
    return true;
  }
  // The graph plan serves stores without the probe plan's partition (l2, or too small to
  // have one). Where the probe plan exists, a query it does not take (the certified scan
  // is estimated cheaper, probe.hpp) stays on the certified scan at any candidate count:
  // a filtered walk over a large share of the store in force cost up to 2x the scan (1M
  // rows, 15% in force, latest: 4.25 against 1.67 ms per query).
  bool graph_plan_allowed() const { return !uses_dot() || st_.partition().empty(); }
  // The cap on this query's score of an item with validity v and penalty pen (similarity
  // unknown) as (a + b * v) * pen, and the fused score as (c * s+ + e * s + b2 * v) * pen,
  // for the group's vectorised loops.
  void linear_form(double& a, double& b, double& c, double& e, double& b2) const {
    if (p_.fusion == Fusion::Product) { a = 0.0; b = std::min(1.0, s_cap_); c = 1.0; e = 0.0; b2 = 0.0; }
    else { a = p_.alpha * s_cap_; b = 1.0 - p_.alpha; c = 0.0; e = p_.alpha; b2 = 1.0 - p_.alpha; }
  }
  bool product() const { return p_.fusion == Fusion::Product; }
  std::size_t in_force_count() const { return estimate_in_force(); }  // at T (or over the window)
  double sim_cap() const { return s_cap_; }  // the cap on every similarity (rounding included)
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
  // The exact penalty of a row before its validity (0: ineligible; tau not applied).
  double penalty_of(std::uint32_t row) const { return admit(row); }
  double fused(double s, double v) const { return fuse(s, v); }
  double current_theta() const { return theta(); }
  // Penalty of items out of force in latest mode (0: excluded), and of those not yet valid.
  double out_of_force_penalty() const { return policy_penalty(p_.invalid); }
  double future_penalty() const { return policy_penalty(p_.future); }
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

  // The probe plan (probe.hpp) answered this query; `complete`: it visited every row.
  void probed(bool complete) { r_.plan = Plan::Probe; probe_complete_ = complete; }
  QueryResult finish() {
    r_.certified = r_.plan == Plan::Scan || r_.plan == Plan::ScanAfterGraph || (r_.plan == Plan::Probe && probe_complete_);
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
    // the where= filter first: its bits are few and cached, the row's metadata a cache miss
    if (p_.filter && !p_.filter->test(row)) return 0.0;
    if (!meta_.known_at(row, p_.time.known_at)) return 0.0;
    if (!p_.type_mask.empty()) {
      const std::uint16_t type = meta_.fact_type(row);
      if (type >= p_.type_mask.size() || !p_.type_mask[type]) return 0.0;
    }
    if (in_force(meta_, row, p_.time)) return 1.0;
    // latest mode: not yet valid (valid_from after T, as ingested: amendments never move it)
    // or no longer in force (expired or deprecated at T)
    return meta_.valid_from(row) > p_.time.t ? future_penalty() : out_of_force_penalty();
  }
  double policy_penalty(InvalidPolicy pol) const {
    if (p_.time.mode != Mode::Latest || pol == InvalidPolicy::Exclude) return 0.0;
    return pol == InvalidPolicy::Penalize ? p_.penalty : 1.0;
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

  // Rows in force, times the share of rows the where= filter passes (taken as independent
  // of time: the estimate decides the seed, the probe and lone scans, never an answer).
  std::size_t estimate_in_force() const {
    const std::size_t f = in_force_unfiltered();
    if (!p_.filter || meta_.size() == 0) return f;
    return static_cast<std::size_t>(static_cast<double>(f) * static_cast<double>(p_.filter->count) /
                                    static_cast<double>(meta_.size()));
  }
  std::size_t in_force_unfiltered() const {
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
  bool probe_complete_ = false;
  std::vector<Hit> heap_;
  std::vector<std::pair<float, std::uint32_t>> last_walk_;
  QueryResult r_;
};

}  // namespace chrono

// Items of each fact type in order of observed_at (t_e): the "freshness lists" of the
// threshold algorithm. Decay is monotone in age within a fact type, so "every item whose
// decay is at least L" is a suffix (or, for symmetric profiles, a slice) of its list,
// found by binary search instead of a scan.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>
#include "decay.hpp"
#include "time.hpp"

namespace chrono {

// The largest |age| (days) at which D(age) >= level, or +inf if D never falls below it,
// or -1 if even D(0) < level. Families are non-increasing in |age| (DESIGN.md).
inline double decay_reach_days(const DecaySpec& s, double level) {
  const double inf = std::numeric_limits<double>::infinity();
  if (!(level > 0.0)) return inf;
  if (level > 1.0) return -1.0;
  double a;  // in the family's unit
  switch (s.code) {
    case DecayCode::None: return inf;
    case DecayCode::Exponential: a = s.p1 + (-std::log(level)) / s.p0; break;
    case DecayCode::Gaussian: a = s.p1 + s.p0 * std::sqrt(-2.0 * std::log(level)); break;
    case DecayCode::Linear: a = s.p1 + (1.0 - level) / s.p0; break;
    case DecayCode::PowerLaw: a = std::pow(level, -1.0 / s.p0) - 1.0; break;
    case DecayCode::Weibull: a = s.p1 * std::pow(-std::log(level), 1.0 / s.p0); break;
    default: return inf;
  }
  // widen by a relative hair: the kernel's exp/log differ from libm in the last bits
  return a / s.scale * (1.0 + 1e-9) + 1e-9;
}

class FreshnessIndex {
 public:
  using row_t = std::uint32_t;

  bool append(std::uint16_t type, micros observed, row_t row) {
    delta_.push_back({observed, row, type});
    if (type >= n_types_) n_types_ = type + 1u;
    return delta_.size() > std::max<std::size_t>(4096, n_static_ / 8);
  }

  template <class Get>  // get(i) -> (type, observed_at) for rows 0..n-1
  void rebuild(std::size_t n, Get&& get) {
    delta_.clear();
    lists_.clear();
    for (std::size_t i = 0; i < n; ++i) {
      auto [type, obs] = get(i);
      if (type >= lists_.size()) lists_.resize(type + 1u);
      if (type >= n_types_) n_types_ = type + 1u;
      lists_[type].push_back({obs, static_cast<row_t>(i)});
    }
    for (auto& l : lists_) {
      std::sort(l.begin(), l.end(), [](const Item& a, const Item& b) { return a.t < b.t; });
      l.shrink_to_fit();
    }
    delta_.shrink_to_fit();
    n_static_ = n;
  }

  // Fact types seen so far (static lists and delta).
  std::size_t n_types() const { return n_types_; }

  // Rows of fact type `type` with observed_at in [lo, hi] (closed), plus matching delta rows.
  template <class F>
  void for_each_observed_between(std::uint16_t type, micros lo, micros hi, F&& emit) const {
    if (type < lists_.size()) {
      const auto& l = lists_[type];
      auto it = std::lower_bound(l.begin(), l.end(), lo, [](const Item& a, micros v) { return a.t < v; });
      for (; it != l.end() && it->t <= hi; ++it) emit(it->row);
    }
    for (const auto& e : delta_) if (e.type == type && e.t >= lo && e.t <= hi) emit(e.row);
  }

  std::size_t count_observed_between(std::uint16_t type, micros lo, micros hi) const {
    std::size_t c = 0;
    if (type < lists_.size()) {
      const auto& l = lists_[type];
      auto a = std::lower_bound(l.begin(), l.end(), lo, [](const Item& x, micros v) { return x.t < v; });
      auto b = std::upper_bound(l.begin(), l.end(), hi, [](micros v, const Item& x) { return v < x.t; });
      c = b > a ? static_cast<std::size_t>(b - a) : 0;
    }
    for (const auto& e : delta_) c += (e.type == type && e.t >= lo && e.t <= hi);
    return c;
  }

  std::size_t memory_bytes() const {
    std::size_t b = delta_.capacity() * sizeof(Delta);
    for (const auto& l : lists_) b += l.capacity() * sizeof(Item);
    return b;
  }

 private:
#pragma pack(push, 4)
  struct Item { micros t; row_t row; };  // packed: 12 bytes per item
#pragma pack(pop)
  static_assert(sizeof(Item) == 12, "Item must pack to 12 bytes");
  struct Delta { micros t; row_t row; std::uint16_t type; };
  std::vector<std::vector<Item>> lists_;
  std::vector<Delta> delta_;
  std::size_t n_static_ = 0;
  std::size_t n_types_ = 0;
};

}  // namespace chrono

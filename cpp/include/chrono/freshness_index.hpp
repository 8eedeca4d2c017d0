// Items of each fact type in order of observed_at (t_e): the "freshness lists" of the
// threshold algorithm. Decay is monotone in age within a fact type, so "every item whose
// decay is at least L" is a suffix (or, for symmetric profiles, a slice) of its list,
// found by binary search instead of a scan. The lists hold 4-byte row numbers; observed_at
// is read from the metadata column.
//
// A decay that clamps negative ages (every profile but the symmetric ones) reaches every
// level for rows observed after T, so "decay at least L" is the whole suffix from T - reach
// on: in latest mode at an early T, most of the store. The rows among them that ended
// before T must have been recorded after they ended (valid_to < observed_at: an old fact
// ingested late); each type keeps those "late" rows in a list of their own, so a search
// for rows out of force (the planner's stage 1) reads the suffix past T from that list
// instead of the whole suffix.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>
#include "columns.hpp"
#include "decay.hpp"
#include "sorted_rows.hpp"
#include "time.hpp"

namespace chrono {

// The largest |age| (days) at which D(age) >= level, or +inf if D never falls below it,
// or -1 if even D(0) < level. Families are non-increasing in |age|.
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

  // `meta` is the owner's metadata; it must outlive the index (the store owns both).
  explicit FreshnessIndex(const MetaTable& meta) : meta_(&meta) {}
  FreshnessIndex(const FreshnessIndex&) = delete;
  FreshnessIndex& operator=(const FreshnessIndex&) = delete;

  // The row's metadata must already hold its fact type and observed_at.
  bool append(row_t row) {
    delta_.push_back(row);
    const std::uint16_t type = meta_->fact_type(row);
    if (type >= n_types_) n_types_ = type + 1u;
    return delta_.size() > std::max<std::size_t>(4096, n_static_ / 8);
  }

  void rebuild() {
    const MetaTable& m = *meta_;
    const std::size_t n = m.size();
    delta_.clear();
    delta_.shrink_to_fit();
    std::vector<std::vector<row_t>> rows;
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint16_t type = m.fact_type(i);
      if (type >= rows.size()) rows.resize(type + 1u);
      if (type >= n_types_) n_types_ = type + 1u;
      rows[type].push_back(static_cast<row_t>(i));
    }
    lists_.clear();
    lists_.resize(rows.size());
    for (std::size_t j = 0; j < rows.size(); ++j) {
      lists_[j].build(std::move(rows[j]), m.times_data());
    }
    n_static_ = n;
    rebuild_late();
  }

  // The late lists again, from the static rows (after an edit of valid_to: Store::update).
  // O(rows) plus a sort of the late rows, usually none.
  void rebuild_late() {
    const MetaTable& m = *meta_;
    const MetaTable::Times* t = m.times_data();
    std::vector<std::vector<row_t>> rows(lists_.size());
    for (std::size_t j = 0; j < lists_.size(); ++j)
      for (std::size_t i = 0; i < lists_[j].size(); ++i) {
        const row_t r = lists_[j][i];
        if (t[r].valid_to < t[r].observed_at) rows[j].push_back(r);
      }
    late_.clear();
    late_.resize(rows.size());
    for (std::size_t j = 0; j < rows.size(); ++j) late_[j].build(std::move(rows[j]), t);
  }

  // Fact types seen so far (static lists and delta).
  std::size_t n_types() const { return n_types_; }

  // Rows of fact type `type` with observed_at in [lo, hi] (closed), plus matching delta rows.
  template <class F>
  void for_each_observed_between(std::uint16_t type, micros lo, micros hi, F&& emit) const {
    const MetaTable::Times* obs = meta_->times_data();
    if (type < lists_.size()) emit_through(lists_[type], lists_[type].count_before(lo, obs), hi, emit);
    emit_delta(type, lo, hi, emit);
  }

  // A superset of the rows of `type` observed in [lo, hi] that can have ended by `ended`
  // (valid_to <= ended, as ingested): the list's rows observed in [lo, min(hi, ended)], the
  // late rows observed in (ended, hi] (a row observed after `ended` that ended by then was
  // recorded after it ended), and the delta rows in [lo, hi]. Each row once.
  template <class F>
  void for_each_ended_observed_between(std::uint16_t type, micros lo, micros hi, micros ended, F&& emit) const {
    const MetaTable::Times* obs = meta_->times_data();
    const micros mid = std::min(hi, ended);
    if (type < lists_.size() && lo <= mid) emit_through(lists_[type], lists_[type].count_before(lo, obs), mid, emit);
    if (type < late_.size() && mid < hi) emit_through(late_[type], late_[type].count_through(mid, obs), hi, emit);
    emit_delta(type, lo, hi, emit);
  }

  std::size_t count_observed_between(std::uint16_t type, micros lo, micros hi) const {
    const MetaTable& m = *meta_;
    const MetaTable::Times* obs = m.times_data();
    std::size_t c = 0;
    if (type < lists_.size()) {
      const auto& l = lists_[type];
      std::size_t a = l.count_before(lo, obs), b = l.count_through(hi, obs);
      c = b > a ? b - a : 0;
    }
    for (row_t r : delta_) c += (m.fact_type(r) == type && obs[r].observed_at >= lo && obs[r].observed_at <= hi);
    return c;
  }

  std::size_t memory_bytes() const {
    std::size_t b = delta_.capacity() * sizeof(row_t);
    for (const auto& l : lists_) b += l.memory_bytes();
    for (const auto& l : late_) b += l.memory_bytes();
    return b;
  }

 private:
  using List = SortedRows<&MetaTable::Times::observed_at>;

  // The rows of `l` from position `from` on while observed_at <= hi.
  template <class F>
  void emit_through(const List& l, std::size_t from, micros hi, F& emit) const {
    const MetaTable::Times* obs = meta_->times_data();
    for (std::size_t i = from; i < l.size(); ++i) {
      const row_t r = l[i];
      if (obs[r].observed_at > hi) break;
      emit(r);
    }
  }
  // The delta rows of `type` observed in [lo, hi].
  template <class F>
  void emit_delta(std::uint16_t type, micros lo, micros hi, F& emit) const {
    const MetaTable& m = *meta_;
    const MetaTable::Times* obs = m.times_data();
    for (row_t r : delta_)
      if (m.fact_type(r) == type && obs[r].observed_at >= lo && obs[r].observed_at <= hi) emit(r);
  }

  const MetaTable* meta_;
  std::vector<List> lists_;  // per fact type, rows by observed_at
  std::vector<List> late_;   // per fact type, rows with valid_to < observed_at
  std::vector<row_t> delta_;
  std::size_t n_static_ = 0;
  std::size_t n_types_ = 0;
};

}  // namespace chrono

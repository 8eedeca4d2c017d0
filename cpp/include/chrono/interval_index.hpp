// Interval index over valid time: stabbing ("valid at T") and overlap ("valid during
// [a, b)") queries over half-open intervals [from, to).
//
// Counting is two binary searches over sorted endpoint arrays:
//   #{from <= T < to} = #{from <= T} - #{to <= T}     (every interval has from < to),
// so a stabbing count over 10^6 intervals costs ~40 comparisons. Enumeration uses a
// centred interval tree flattened into arrays (output-sensitive, O(log n + k)). Rows
// appended since the last rebuild live in a small unsorted delta that queries scan; the
// tree is rebuilt when the delta outgrows max(4096, n/8), keeping appends amortised
// O(log n) and queries within a constant of the static tree.
#pragma once
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>
#include "time.hpp"

namespace chrono {

class IntervalIndex {
 public:
  using row_t = std::uint32_t;

  // Appends go to the delta; returns true when the owner should rebuild() (the delta
  // outgrew max(4096, n/8)).
  bool append(micros from, micros to, row_t row) {
    delta_.push_back({from, to, row});
    return delta_.size() > std::max<std::size_t>(4096, size() / 8);
  }

  std::size_t size() const { return n_static_ + delta_.size(); }

  std::size_t count_valid_at(micros t) const {
    std::size_t c = starts_through(t) -
                    static_cast<std::size_t>(std::upper_bound(tos_.begin(), tos_.end(), t) - tos_.begin());
    for (const auto& e : delta_) c += (e.from <= t && t < e.to);
    return c;
  }

  std::size_t count_overlapping(micros a, micros b) const {
    if (a >= b) return 0;
    // overlap [from, to) with [a, b): from < b and to > a
    std::size_t started = starts_before(b);
    std::size_t ended = static_cast<std::size_t>(std::upper_bound(tos_.begin(), tos_.end(), a) - tos_.begin());
    std::size_t c = started - std::min(started, ended);
    for (const auto& e : delta_) c += (e.from < b && e.to > a);
    return c;
  }

  template <class F>
  void for_each_valid_at(micros t, F&& emit) const {
    stab(root_, t, emit);
    for (const auto& e : delta_) if (e.from <= t && t < e.to) emit(e.row);
  }

  template <class F>
  void for_each_overlapping(micros a, micros b, F&& emit) const {
    if (a >= b) return;
    stab(root_, a, emit);
    // intervals starting inside (a, b) overlap and were not stabbed at a
    auto it = std::upper_bound(by_from_.begin(), by_from_.end(), a,
                               [](micros v, const Key& e) { return v < e.t; });
    for (; it != by_from_.end() && it->t < b; ++it) emit(it->row);
    for (const auto& e : delta_) if (e.from < b && e.to > a) emit(e.row);
  }

  // Rebuild the static part from the authoritative intervals: interval(i) -> (from, to)
  // for rows 0..n-1. Not safe concurrently with queries (the owner holds a write lock).
  template <class Get>
  void rebuild(std::size_t n, Get&& interval) {
    delta_.clear();
    std::vector<Entry> items(n);
    for (std::size_t i = 0; i < n; ++i) {
      auto iv = interval(i);
      items[i] = {iv.first, iv.second, static_cast<row_t>(i)};
    }
    n_static_ = items.size();
    tos_.resize(n_static_);
    by_from_.resize(n_static_);
    for (std::size_t i = 0; i < n_static_; ++i) { tos_[i] = items[i].to; by_from_[i] = {items[i].from, items[i].row}; }
    std::sort(tos_.begin(), tos_.end());
    std::sort(by_from_.begin(), by_from_.end(), [](const Key& x, const Key& y) { return x.t < y.t; });
    by_from_.shrink_to_fit();
    tos_.shrink_to_fit();
    nodes_.clear(); by_start_.clear(); by_end_.clear();
    by_start_.reserve(n); by_end_.reserve(n);
    root_ = build(items);
    nodes_.shrink_to_fit(); by_start_.shrink_to_fit(); by_end_.shrink_to_fit();
    delta_.shrink_to_fit();
  }

  std::size_t memory_bytes() const {
    return (by_from_.capacity() + by_start_.capacity() + by_end_.capacity()) * sizeof(Key) +
           delta_.capacity() * sizeof(Entry) + tos_.capacity() * sizeof(micros) + nodes_.capacity() * sizeof(Node);
  }

 private:
  struct Entry { micros from, to; row_t row; };
  // An endpoint and its row, packed to 12 bytes (three of these arrays are the index).
#pragma pack(push, 4)
  struct Key { micros t; row_t row; };
#pragma pack(pop)
  static_assert(sizeof(Key) == 12, "Key must pack to 12 bytes");
  // how many static intervals start at or before t / before t
  std::size_t starts_through(micros t) const {
    return static_cast<std::size_t>(std::upper_bound(by_from_.begin(), by_from_.end(), t,
                                                     [](micros v, const Key& e) { return v < e.t; }) - by_from_.begin());
  }
  std::size_t starts_before(micros t) const {
    return static_cast<std::size_t>(std::lower_bound(by_from_.begin(), by_from_.end(), t,
                                                     [](const Key& e, micros v) { return e.t < v; }) - by_from_.begin());
  }
  struct Node {
    micros center;
    std::uint32_t begin, end;  // slice of by_start_ / by_end_
    std::int32_t left, right;
  };

  std::int32_t build(std::vector<Entry>& items) {
    if (items.empty()) return -1;
    // centre: median start point, a cheap balanced split for interval data
    std::size_t mid = items.size() / 2;
    std::nth_element(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(mid), items.end(),
                     [](const Entry& x, const Entry& y) { return x.from < y.from; });
    micros c = items[mid].from;
    std::vector<Entry> left, right, here;
    for (const auto& e : items) {
      if (e.to <= c) left.push_back(e);
      else if (e.from > c) right.push_back(e);
      else here.push_back(e);
    }
    items.clear(); items.shrink_to_fit();
    Node node{c, static_cast<std::uint32_t>(by_start_.size()), 0, -1, -1};
    std::sort(here.begin(), here.end(), [](const Entry& x, const Entry& y) { return x.from < y.from; });
    for (const Entry& e : here) by_start_.push_back({e.from, e.row});
    std::sort(here.begin(), here.end(), [](const Entry& x, const Entry& y) { return x.to > y.to; });
    for (const Entry& e : here) by_end_.push_back({e.to, e.row});
    node.end = static_cast<std::uint32_t>(by_start_.size());
    std::int32_t id = static_cast<std::int32_t>(nodes_.size());
    nodes_.push_back(node);
    std::int32_t l = build(left);
    std::int32_t r = build(right);
    nodes_[static_cast<std::size_t>(id)].left = l;
    nodes_[static_cast<std::size_t>(id)].right = r;
    return id;
  }

  template <class F>
  void stab(std::int32_t id, micros t, F& emit) const {
    while (id >= 0) {
      const Node& nd = nodes_[static_cast<std::size_t>(id)];
      if (t < nd.center) {
        for (std::uint32_t i = nd.begin; i < nd.end && by_start_[i].t <= t; ++i) emit(by_start_[i].row);
        id = nd.left;
      } else {
        for (std::uint32_t i = nd.begin; i < nd.end && by_end_[i].t > t; ++i) emit(by_end_[i].row);
        id = nd.right;
      }
    }
  }

  std::vector<Key> by_from_;     // static part sorted by from (counting and overlap queries)
  std::vector<micros> tos_;      // sorted ends (counting)
  std::vector<Node> nodes_;
  std::vector<Key> by_start_, by_end_;  // per tree node: (from, row) by from, (to, row) by to desc
  std::vector<Entry> delta_;
  std::size_t n_static_ = 0;
  std::int32_t root_ = -1;
};

}  // namespace chrono

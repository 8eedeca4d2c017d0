// Interval index over valid time: stabbing ("valid at T") and overlap ("valid during
// [a, b)") queries over the half-open intervals [valid_from, valid_to) of the store's
// metadata records.
//
// Counting is two binary searches over rows sorted by each endpoint:
//   #{from <= T < to} = #{from <= T} - #{to <= T}     (every interval has from < to),
// so a stabbing count over 10^6 intervals costs ~40 comparisons. Enumeration uses a
// centred interval tree flattened into arrays (output-sensitive, O(log n + k)). Every array
// holds 4-byte row numbers; the endpoints are read from the records (16 bytes per item in
// all, where (time, row) pairs took 44). Rows appended since the last rebuild live in a
// small unsorted delta that queries scan; the tree is rebuilt when the delta outgrows
// max(4096, n/8), keeping appends amortised O(log n) and queries within a constant of the
// static tree.
#pragma once
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>
#include "columns.hpp"
#include "sorted_rows.hpp"

namespace chrono {

class IntervalIndex {
 public:
  using row_t = std::uint32_t;

  // `meta` is the owner's record array; it must outlive the index (the store owns both).
  explicit IntervalIndex(const std::vector<Meta>& meta) : meta_(&meta) {}
  IntervalIndex(const IntervalIndex&) = delete;
  IntervalIndex& operator=(const IntervalIndex&) = delete;

  // Appends go to the delta (the row's record must already hold its interval); returns
  // true when the owner should rebuild() (the delta outgrew max(4096, n/8)).
  bool append(row_t row) {
    delta_.push_back(row);
    return delta_.size() > std::max<std::size_t>(4096, size() / 8);
  }

  std::size_t size() const { return by_from_.size() + delta_.size(); }

  std::size_t count_valid_at(micros t) const {
    const Meta* m = meta_->data();
    std::size_t c = by_from_.count_through(t, m) - by_to_.count_through(t, m);
    for (row_t r : delta_) c += m[r].valid_at(t);
    return c;
  }

  std::size_t count_overlapping(micros a, micros b) const {
    if (a >= b) return 0;
    const Meta* m = meta_->data();
    // overlap [from, to) with [a, b): from < b and to > a
    std::size_t started = by_from_.count_before(b, m);
    std::size_t ended = by_to_.count_through(a, m);
    std::size_t c = started - std::min(started, ended);
    for (row_t r : delta_) c += m[r].overlaps(a, b);
    return c;
  }

  template <class F>
  void for_each_valid_at(micros t, F&& emit) const {
    const Meta* m = meta_->data();
    stab(root_, t, emit);
    for (row_t r : delta_) if (m[r].valid_at(t)) emit(r);
  }

  template <class F>
  void for_each_overlapping(micros a, micros b, F&& emit) const {
    if (a >= b) return;
    const Meta* m = meta_->data();
    stab(root_, a, emit);
    // intervals starting inside (a, b) overlap and were not stabbed at a
    for (std::size_t i = by_from_.count_through(a, m); i < by_from_.size(); ++i) {
      const row_t r = by_from_[i];
      if (!(m[r].valid_from < b)) break;
      emit(r);
    }
    for (row_t r : delta_) if (m[r].overlaps(a, b)) emit(r);
  }

  // Rebuild the static part from every record. Not safe concurrently with queries (the
  // owner holds a write lock).
  void rebuild() {
    const Meta* m = meta_->data();
    const std::size_t n = meta_->size();
    delta_.clear();
    delta_.shrink_to_fit();
    std::vector<row_t> all(n);
    for (std::size_t i = 0; i < n; ++i) all[i] = static_cast<row_t>(i);
    by_from_.build(all, m);
    by_to_.build(all, m);
    nodes_.clear(); by_start_.clear(); by_end_.clear();
    by_start_.reserve(n); by_end_.reserve(n);
    root_ = build(all);
    nodes_.shrink_to_fit(); by_start_.shrink_to_fit(); by_end_.shrink_to_fit();
  }

  std::size_t memory_bytes() const {
    return by_from_.memory_bytes() + by_to_.memory_bytes() +
           (by_start_.capacity() + by_end_.capacity() + delta_.capacity()) * sizeof(row_t) +
           nodes_.capacity() * sizeof(Node);
  }

 private:
  struct Node {
    micros center;
    std::uint32_t begin, end;  // slice of by_start_ / by_end_
    std::int32_t left, right;
  };

  std::int32_t build(std::vector<row_t>& items) {
    if (items.empty()) return -1;
    const Meta* m = meta_->data();
    // centre: median start point, a cheap balanced split for interval data
    std::size_t mid = items.size() / 2;
    std::nth_element(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(mid), items.end(),
                     [m](row_t x, row_t y) { return m[x].valid_from < m[y].valid_from; });
    micros c = m[items[mid]].valid_from;
    std::vector<row_t> left, right, here;
    for (row_t r : items) {
      if (m[r].valid_to <= c) left.push_back(r);
      else if (m[r].valid_from > c) right.push_back(r);
      else here.push_back(r);
    }
    items.clear(); items.shrink_to_fit();
    Node node{c, static_cast<std::uint32_t>(by_start_.size()), 0, -1, -1};
    std::sort(here.begin(), here.end(), [m](row_t x, row_t y) { return m[x].valid_from < m[y].valid_from; });
    by_start_.insert(by_start_.end(), here.begin(), here.end());
    std::sort(here.begin(), here.end(), [m](row_t x, row_t y) { return m[x].valid_to > m[y].valid_to; });
    by_end_.insert(by_end_.end(), here.begin(), here.end());
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
    const Meta* m = meta_->data();
    while (id >= 0) {
      const Node& nd = nodes_[static_cast<std::size_t>(id)];
      if (t < nd.center) {
        for (std::uint32_t i = nd.begin; i < nd.end && m[by_start_[i]].valid_from <= t; ++i) emit(by_start_[i]);
        id = nd.left;
      } else {
        for (std::uint32_t i = nd.begin; i < nd.end && m[by_end_[i]].valid_to > t; ++i) emit(by_end_[i]);
        id = nd.right;
      }
    }
  }

  const std::vector<Meta>* meta_;
  SortedRows<&Meta::valid_from> by_from_;  // every static row by from (counting, overlap starts)
  SortedRows<&Meta::valid_to> by_to_;      // every static row by to (counting)
  std::vector<Node> nodes_;
  std::vector<row_t> by_start_, by_end_;   // per tree node: rows by from, and by to descending
  std::vector<row_t> delta_;
  std::int32_t root_ = -1;
};

}  // namespace chrono

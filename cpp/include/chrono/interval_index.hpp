// Interval index over valid time: stabbing ("valid at T") and overlap ("valid during
// [a, b)") queries over the half-open intervals [valid_from, valid_to) of the store's
// metadata.
//
// A centred interval tree flattened into arrays: each node holds the intervals that
// contain its centre, once sorted by start (ascending) and once by end (descending), as
// 4-byte row numbers (8 bytes per item; the endpoints are read from the metadata), the
// size of its subtree, and for long slices the key of every 64th position (~0.25 B/item).
//   - Enumeration is output-sensitive, O(log n + k).
//   - Counting walks one root-to-leaf path with a binary search per node, O(log^2 n):
//     valid at T = per node, the intervals started by T (if T < centre) or not ended by T;
//     overlapping [a, b) = #{from < b} - #{to <= a}, each a path walk where whole
//     subtrees on one side count by their stored size.
// Rows appended since the last rebuild live in a small unsorted delta that queries scan;
// the tree is rebuilt when the delta outgrows max(4096, n/8), keeping appends amortised
// O(log n) and queries within a constant of the static tree.
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

  // `meta` is the owner's metadata; it must outlive the index (the store owns both).
  explicit IntervalIndex(const MetaTable& meta) : meta_(&meta) {}
  IntervalIndex(const IntervalIndex&) = delete;
  IntervalIndex& operator=(const IntervalIndex&) = delete;

  // Appends go to the delta (the row's metadata must already hold its interval); returns
  // true when the owner should rebuild() (the delta outgrew max(4096, n/8)).
  bool append(row_t row) {
    delta_.push_back(row);
    return delta_.size() > std::max<std::size_t>(4096, size() / 8);
  }

  std::size_t size() const { return n_static_ + delta_.size(); }

  std::size_t count_valid_at(micros t) const {
    const MetaTable::Times* tm = meta_->times_data();
    std::size_t c = 0;
    for (std::int32_t id = root_; id >= 0;) {
      const Node& nd = nodes_[static_cast<std::size_t>(id)];
      if (t < nd.center) {  // intervals here started by t: a prefix of by_start_
        c += start_prefix(nd, tm, [&](micros k) { return k <= t; });
        id = nd.left;
      } else {  // not ended by t: a prefix of by_end_
        c += end_prefix(nd, tm, [&](micros k) { return k > t; });
        id = nd.right;
      }
    }
    for (row_t r : delta_) c += meta_->valid_at(r, t);
    return c;
  }

  // An upper bound on count_valid_at(t) without reading any endpoint: only the nodes on
  // t's path hold intervals that can contain t, so their sizes (and the delta) bound it.
  std::size_t valid_at_upper_bound(micros t) const {
    std::size_t c = delta_.size();
    for (std::int32_t id = root_; id >= 0;) {
      const Node& nd = nodes_[static_cast<std::size_t>(id)];
      c += nd.end - nd.begin;
      id = t < nd.center ? nd.left : nd.right;
    }
    return c;
  }

  std::size_t count_overlapping(micros a, micros b) const {
    if (a >= b) return 0;
    const MetaTable::Times* tm = meta_->times_data();
    // overlap [from, to) with [a, b): from < b and to > a; every interval with to <= a
    // (< b) also has from < b, so the count is #{from < b} - #{to <= a}.
    std::size_t started = 0, ended = 0;
    for (std::int32_t id = root_; id >= 0;) {  // #{from < b}
      const Node& nd = nodes_[static_cast<std::size_t>(id)];
      if (b <= nd.center) {  // the right subtree starts after the centre
        started += start_prefix(nd, tm, [&](micros k) { return k < b; });
        id = nd.left;
      } else {  // the left subtree and this node start before the centre
        started += subtree(nd.left) + (nd.end - nd.begin);
        id = nd.right;
      }
    }
    for (std::int32_t id = root_; id >= 0;) {  // #{to <= a}
      const Node& nd = nodes_[static_cast<std::size_t>(id)];
      if (a < nd.center) {  // this node and the right subtree end after the centre
        id = nd.left;
      } else {  // the left subtree ends by the centre
        ended += subtree(nd.left) + (nd.end - nd.begin) - end_prefix(nd, tm, [&](micros k) { return k > a; });
        id = nd.right;
      }
    }
    std::size_t c = started - std::min(started, ended);
    for (row_t r : delta_) c += meta_->overlaps(r, a, b);
    return c;
  }

  template <class F>
  void for_each_valid_at(micros t, F&& emit) const {
    stab(root_, t, emit);
    for (row_t r : delta_) if (meta_->valid_at(r, t)) emit(r);
  }

  // `Unread`: the rows valid at a come without their endpoints read (IntervalIndex::stab),
  // for a caller that keeps few of them (a where= filter's bits); otherwise each is read,
  // which also brings its metadata into the cache for a caller that scans them all.
  template <bool Unread = false, class F>
  void for_each_overlapping(micros a, micros b, F&& emit) const {
    if (a >= b) return;
    stab<Unread>(root_, a, emit);
    starting_in(root_, a, b, emit);  // intervals starting inside (a, b) were not stabbed at a
    for (row_t r : delta_) if (meta_->overlaps(r, a, b)) emit(r);
  }

  // Rebuild the static part from all of the metadata. Not safe concurrently with queries
  // (the owner holds a write lock).
  void rebuild() {
    const std::size_t n = meta_->size();
    delta_.clear();
    delta_.shrink_to_fit();
    std::vector<row_t> all(n);
    for (std::size_t i = 0; i < n; ++i) all[i] = static_cast<row_t>(i);
    nodes_.clear(); by_start_.clear(); by_end_.clear(); fence_start_.clear(); fence_end_.clear();
    by_start_.reserve(n); by_end_.reserve(n);
    root_ = build(all);
    n_static_ = n;
    nodes_.shrink_to_fit(); by_start_.shrink_to_fit(); by_end_.shrink_to_fit();
    fence_start_.shrink_to_fit(); fence_end_.shrink_to_fit();
  }

  std::size_t memory_bytes() const {
    return (by_start_.capacity() + by_end_.capacity() + delta_.capacity()) * sizeof(row_t) +
           nodes_.capacity() * sizeof(Node) + (fence_start_.capacity() + fence_end_.capacity()) * sizeof(micros);
  }

 private:
  struct Node {
    micros center;
    std::uint32_t begin, end;  // slice of by_start_ / by_end_
    std::int32_t left, right;
    std::uint32_t total;       // intervals in this subtree
    std::uint32_t fence;       // first fence key in fence_start_ / fence_end_ (slices > kFence)
  };
  static constexpr std::size_t kFence = kFenceStride;

  std::size_t subtree(std::int32_t id) const { return id < 0 ? 0 : nodes_[static_cast<std::size_t>(id)].total; }

  // Length of the prefix of the node's slice of by_start_ (by_end_) whose valid_from
  // (valid_to) satisfies `pred` (it holds on a prefix by the slice's order).
  template <class P>
  std::size_t start_prefix(const Node& nd, const MetaTable::Times* tm, P pred) const {
    return prefix(by_start_, fence_start_, nd, pred, [tm](row_t r) { return tm[r].valid_from; });
  }
  template <class P>
  std::size_t end_prefix(const Node& nd, const MetaTable::Times* tm, P pred) const {
    return prefix(by_end_, fence_end_, nd, pred, [tm](row_t r) { return tm[r].valid_to; });
  }
  // A slice longer than kFence keeps the key of every kFence-th position (its fence).
  template <class P, class K>
  static std::size_t prefix(const std::vector<row_t>& v, const std::vector<micros>& fence, const Node& nd, P pred,
                            K key) {
    const std::size_t m = nd.end - nd.begin;
    return fenced_prefix(v.data() + nd.begin, m, m > kFence ? fence.data() + nd.fence : nullptr, pred, key);
  }

  std::int32_t build(std::vector<row_t>& items) {
    if (items.empty()) return -1;
    const MetaTable::Times* tm = meta_->times_data();
    const std::uint32_t total = static_cast<std::uint32_t>(items.size());
    // centre: median start point, a cheap balanced split for interval data
    std::size_t mid = items.size() / 2;
    std::nth_element(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(mid), items.end(),
                     [tm](row_t x, row_t y) { return tm[x].valid_from < tm[y].valid_from; });
    micros c = tm[items[mid]].valid_from;
    std::vector<row_t> left, right, here;
    for (row_t r : items) {
      if (tm[r].valid_to <= c) left.push_back(r);
      else if (tm[r].valid_from > c) right.push_back(r);
      else here.push_back(r);
    }
    items.clear(); items.shrink_to_fit();
    Node node{c, static_cast<std::uint32_t>(by_start_.size()), 0, -1, -1, total,
              static_cast<std::uint32_t>(fence_start_.size())};
    const bool fenced = here.size() > kFence;
    std::sort(here.begin(), here.end(), [tm](row_t x, row_t y) { return tm[x].valid_from < tm[y].valid_from; });
    by_start_.insert(by_start_.end(), here.begin(), here.end());
    if (fenced) for (std::size_t i = 0; i < here.size(); i += kFence) fence_start_.push_back(tm[here[i]].valid_from);
    std::sort(here.begin(), here.end(), [tm](row_t x, row_t y) { return tm[x].valid_to > tm[y].valid_to; });
    by_end_.insert(by_end_.end(), here.begin(), here.end());
    if (fenced) for (std::size_t i = 0; i < here.size(); i += kFence) fence_end_.push_back(tm[here[i]].valid_to);
    node.end = static_cast<std::uint32_t>(by_start_.size());
    std::int32_t id = static_cast<std::int32_t>(nodes_.size());
    nodes_.push_back(node);
    std::int32_t l = build(left);
    std::int32_t r = build(right);
    nodes_[static_cast<std::size_t>(id)].left = l;
    nodes_[static_cast<std::size_t>(id)].right = r;
    return id;
  }

  // Unread: each node's prefix found by the fenced search (a few endpoint reads), its rows
  // then emitted without reading theirs, so a caller that filters them (a where= filter's
  // bits) reads the metadata of those it keeps only (at 200k rows, a tenth in force and a
  // filter passing a tenth, the per-row endpoint reads were most of the enumeration).
  template <bool Unread = false, class F>
  void stab(std::int32_t id, micros t, F& emit) const {
    const MetaTable::Times* tm = meta_->times_data();
    while (id >= 0) {
      const Node& nd = nodes_[static_cast<std::size_t>(id)];
      if (t < nd.center) {
        const std::size_t end = Unread ? nd.begin + start_prefix(nd, tm, [&](micros k) { return k <= t; }) : nd.end;
        for (std::size_t i = nd.begin; i < end && (Unread || tm[by_start_[i]].valid_from <= t); ++i) emit(by_start_[i]);
        id = nd.left;
      } else {
        const std::size_t end = Unread ? nd.begin + end_prefix(nd, tm, [&](micros k) { return k > t; }) : nd.end;
        for (std::size_t i = nd.begin; i < end && (Unread || tm[by_end_[i]].valid_to > t); ++i) emit(by_end_[i]);
        id = nd.right;
      }
    }
  }

  // Intervals with a < from < b. A node's intervals start by its centre, its left
  // subtree's before it and its right subtree's after it; each visited node with its
  // centre inside (a, b) emits at least the interval its centre came from.
  template <class F>
  void starting_in(std::int32_t id, micros a, micros b, F& emit) const {
    const MetaTable::Times* tm = meta_->times_data();
    while (id >= 0) {
      const Node& nd = nodes_[static_cast<std::size_t>(id)];
      const std::size_t i0 = nd.begin + start_prefix(nd, tm, [&](micros k) { return k <= a; });
      for (std::size_t i = i0; i < nd.end && tm[by_start_[i]].valid_from < b; ++i) emit(by_start_[i]);
      const bool go_left = a < nd.center, go_right = b > nd.center;
      if (go_left && go_right) starting_in(nd.left, a, b, emit);
      id = go_right ? nd.right : (go_left ? nd.left : -1);
    }
  }

  const MetaTable* meta_;
  std::vector<Node> nodes_;
  std::vector<row_t> by_start_, by_end_;   // per tree node: rows by from, and by to descending
  std::vector<micros> fence_start_, fence_end_;  // per long slice: every kFence-th key
  std::vector<row_t> delta_;
  std::int32_t root_ = -1;
  std::size_t n_static_ = 0;
};

}  // namespace chrono

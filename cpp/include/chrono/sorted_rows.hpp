// Rows sorted by one time field of the metadata's time records, stored as 4-byte row
// numbers (the time is read back from the records, passed to each call).
//
// A binary search over a permutation would read a record at random per step; a fence
// holding the key of every 64th position keeps that to one search of a small cached array
// plus at most 6 record reads.
#pragma once
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>
#include "columns.hpp"

namespace chrono {

// Fence stride: a sorted run of rows keeps the key of every kFenceStride-th position.
constexpr std::size_t kFenceStride = 64;

// Length of the prefix of rows[0, n) whose keys (key(row)) satisfy `pred`, which holds on
// a prefix by the rows' order. With a fence (fence[b] = the key at position
// b * kFenceStride), a search of those contiguous keys finds the block and at most
// log2(kFenceStride) random key reads finish it; without one (null), a plain binary search.
template <class P, class K>
std::size_t fenced_prefix(const std::uint32_t* rows, std::size_t n, const micros* fence, P pred, K key) {
  std::size_t lo = 0, hi = n;
  if (fence != nullptr) {
    // blocks whose first key satisfies pred: the answer lies in the last of them
    const micros* fb = std::partition_point(fence, fence + (n + kFenceStride - 1) / kFenceStride, pred);
    const std::size_t nb = static_cast<std::size_t>(fb - fence);
    if (nb == 0) return 0;
    lo = (nb - 1) * kFenceStride + 1;
    hi = std::min(nb * kFenceStride, n);
  }
  while (lo < hi) {  // first position in [lo, hi) failing pred, else hi
    const std::size_t mid = lo + (hi - lo) / 2;
    if (pred(key(rows[mid]))) lo = mid + 1; else hi = mid;
  }
  return lo;
}

template <micros MetaTable::Times::*Key>
class SortedRows {
 public:
  using row_t = std::uint32_t;
  static constexpr std::size_t kFence = kFenceStride;

  // Sort `rows` by (key, row) and take them over.
  void build(std::vector<row_t> rows, const MetaTable::Times* key) {
    std::vector<std::pair<micros, row_t>> tmp(rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) tmp[i] = {key[rows[i]].*Key, rows[i]};
    std::sort(tmp.begin(), tmp.end());
    for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = tmp[i].second;
    rows_ = std::move(rows);
    rows_.shrink_to_fit();
    fence_.resize((rows_.size() + kFence - 1) / kFence);
    for (std::size_t b = 0; b < fence_.size(); ++b) fence_[b] = tmp[b * kFence].first;
    fence_.shrink_to_fit();
  }

  std::size_t size() const { return rows_.size(); }
  row_t operator[](std::size_t i) const { return rows_[i]; }

  // Positions with key <= t (upper_bound) and with key < t (lower_bound).
  std::size_t count_through(micros t, const MetaTable::Times* key) const {
    return search(t, key, [](micros k, micros v) { return k <= v; });
  }
  std::size_t count_before(micros t, const MetaTable::Times* key) const {
    return search(t, key, [](micros k, micros v) { return k < v; });
  }

  std::size_t memory_bytes() const { return rows_.capacity() * sizeof(row_t) + fence_.capacity() * sizeof(micros); }

 private:
  // The first position whose key fails `below(key, t)` (keys are sorted, so `below` holds
  // on a prefix).
  template <class Below>
  std::size_t search(micros t, const MetaTable::Times* key, Below below) const {
    return fenced_prefix(rows_.data(), rows_.size(), fence_.data(), [&](micros k) { return below(k, t); },
                         [key](row_t r) { return key[r].*Key; });
  }

  std::vector<row_t> rows_;
  std::vector<micros> fence_;
};

}  // namespace chrono

// Rows by user id, and ids by row.
//
// Ids equal to their rows (automatic ids on a store that was never given others: the
// common case) are not stored at all. Other ids that stay in a dense range — below
// 2 * rows + 2^16 and below 2^32 - 1, e.g. a batch stored in valid_from order with its ids
// in input order, or ids counted from 1 — are kept in two 32-bit arrays, the id of each
// row and the row of each id (8 bytes a row); any other id turns the map into a hash map
// (about 48 bytes a row with the 64-bit ids by row).
#pragma once
#include <algorithm>
#include <cstdint>
#include <limits>
#include <unordered_map>
#include <vector>

namespace chrono {

class IdMap {
 public:
  // Row of `id` among the first `n_rows` rows, or -1.
  std::int64_t row(std::uint64_t id, std::size_t n_rows) const {
    switch (mode_) {
      case Mode::Identity: return id < n_rows ? static_cast<std::int64_t>(id) : -1;
      case Mode::Dense:
        return id < dense_.size() && dense_[id] != kNone ? static_cast<std::int64_t>(dense_[id]) : -1;
      case Mode::Hash: {
        auto it = hash_.find(id);
        return it == hash_.end() ? -1 : static_cast<std::int64_t>(it->second);
      }
    }
    return -1;
  }
  std::uint64_t id(std::uint32_t row) const {
    return mode_ == Mode::Identity ? row : mode_ == Mode::Dense ? ids32_[row] : ids_[row];
  }

  // Ids of rows first, first + 1, ... (unique, and new to the map: the caller checked).
  void append(const std::vector<std::uint64_t>& ids, std::size_t first) {
    if (ids.empty()) return;
    const std::size_t end = first + ids.size();
    const std::uint64_t top = *std::max_element(ids.begin(), ids.end());
    if (mode_ == Mode::Dense) ids32_.reserve(end);  // sized once per batch, not doubled
    if (mode_ == Mode::Hash) ids_.reserve(end);
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const std::uint64_t id = ids[i];
      const std::size_t row = first + i;
      if (mode_ == Mode::Identity) {
        if (id == row) continue;
        ids32_.reserve(end);
        ids32_.resize(row);  // the rows before it kept their ids
        for (std::size_t r = 0; r < row; ++r) ids32_[r] = static_cast<std::uint32_t>(r);
        mode_ = Mode::Dense;
        dense_.assign(row, kNone);
        for (std::size_t r = 0; r < row; ++r) dense_[r] = static_cast<std::uint32_t>(r);
      }
      if (mode_ == Mode::Dense && id >= dense_limit(end)) to_hash(end);  // end: the rows once appended
      if (mode_ == Mode::Dense) {
        ids32_.push_back(static_cast<std::uint32_t>(id));
        // grown once to the batch's largest id that can stay dense (id is below that limit)
        if (id >= dense_.size())
          dense_.resize(static_cast<std::size_t>(std::min<std::uint64_t>(top, dense_limit(end) - 1)) + 1, kNone);
        dense_[id] = static_cast<std::uint32_t>(row);
      } else {
        ids_.push_back(id);
        hash_.emplace(id, static_cast<std::uint32_t>(row));
      }
    }
  }

  std::size_t memory_bytes() const {
    return ids_.capacity() * sizeof(std::uint64_t) + (ids32_.capacity() + dense_.capacity()) * sizeof(std::uint32_t) +
           hash_.size() * (sizeof(std::uint64_t) + sizeof(std::uint32_t) + 2 * sizeof(void*)) +
           hash_.bucket_count() * sizeof(void*);
  }
  const char* mode() const { return mode_ == Mode::Identity ? "identity" : mode_ == Mode::Dense ? "dense" : "hash"; }

  void clear() {
    mode_ = Mode::Identity;
    ids_ = {};
    ids32_ = {};
    dense_ = {};
    hash_ = {};
  }

 private:
  enum class Mode { Identity, Dense, Hash };
  static constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
  // Ids below this stay dense (kNone, the largest 32-bit value, marks an absent id).
  static std::uint64_t dense_limit(std::size_t rows) {
    return std::min<std::uint64_t>(2 * static_cast<std::uint64_t>(rows) + (1u << 16), kNone);
  }
  void to_hash(std::size_t end) {
    ids_.reserve(end);
    ids_.assign(ids32_.begin(), ids32_.end());
    hash_.reserve(ids_.size());
    for (std::size_t r = 0; r < ids_.size(); ++r) hash_.emplace(ids_[r], static_cast<std::uint32_t>(r));
    ids32_ = {};
    dense_ = {};
    mode_ = Mode::Hash;
  }

  Mode mode_ = Mode::Identity;
  std::vector<std::uint64_t> ids_;    // by row (Hash)
  std::vector<std::uint32_t> ids32_;  // by row (Dense: every id is below kNone)
  std::vector<std::uint32_t> dense_;  // row by id, kNone where no row has it (Dense)
  std::unordered_map<std::uint64_t, std::uint32_t> hash_;  // (Hash)
};

}  // namespace chrono

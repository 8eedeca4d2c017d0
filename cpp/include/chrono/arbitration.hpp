// Per-stem arbitration (tombstone pruning): one version per document lineage.
//
// The winner of a stem depends only on metadata and the query's (mode, T, known_at,
// window), never on similarity, so it acts as a filter. It is checked lazily: only for an
// item that would otherwise enter the top-k, which keeps it off the hot path.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>
#include "columns.hpp"

namespace chrono {

enum class Mode : int { Latest = 0, AsOf = 1, Window = 2, All = 3 };

struct TimeContext {
  Mode mode = Mode::Latest;
  micros t = 0;         // T: decay anchor and validity instant
  micros known_at = 0;  // transaction time the store is viewed at
  micros win_start = 0, win_end = 0;
};

// Does the item count as "in force" for the mode (before penalties), as known at the
// view's transaction time (its amendments known then applied)?
inline bool in_force(const MetaTable& m, std::size_t r, const TimeContext& c) {
  switch (c.mode) {
    case Mode::Latest: return m.live_at_known(r, c.t, c.known_at);
    case Mode::AsOf: return m.valid_at_known(r, c.t, c.known_at);
    case Mode::Window: return m.overlaps_known(r, c.win_start, c.win_end, c.known_at);
    case Mode::All: return true;
  }
  return true;
}

// Rows of each stem (document lineage) as singly linked lists: 4 bytes per stem and per
// row (a vector per stem cost ~24 bytes of header each). Appends are O(1); a stem's rows
// come newest first, which no reader depends on.
class StemRows {
 public:
  static constexpr std::uint32_t kNone = 0xffffffffu;
  // Room for rows < n_rows and stems < n_stems (see grow_capacity).
  void reserve(std::size_t n_rows, std::size_t n_stems) {
    grow_capacity(next_, n_rows);
    grow_capacity(head_, n_stems);
  }
  void add(std::uint32_t stem, std::uint32_t row) {
    if (stem >= head_.size()) head_.resize(static_cast<std::size_t>(stem) + 1, kNone);
    if (row >= next_.size()) next_.resize(static_cast<std::size_t>(row) + 1, kNone);
    next_[row] = head_[stem];
    head_[stem] = row;
  }
  template <class F>
  void for_each(std::uint32_t stem, F&& f) const {
    if (stem >= head_.size()) return;
    for (std::uint32_t r = head_[stem]; r != kNone; r = next_[r]) f(r);
  }
  std::size_t memory_bytes() const { return (head_.capacity() + next_.capacity()) * sizeof(std::uint32_t); }

 private:
  std::vector<std::uint32_t> head_, next_;
};

// The winning version of a stem: among rows known at known_at, the maximum of
// (in force for the mode, version). Every row (chunk) of that version wins; rows of a stem
// are few (1-5 versions, a few chunks each). Returns false if no row of the stem is known.
inline bool stem_winner_key(const StemRows& stems, std::uint32_t stem, const MetaTable& meta,
                            const TimeContext& c, std::pair<int, std::uint64_t>& best) {
  bool found = false;
  stems.for_each(stem, [&](std::uint32_t r) {
    if (!meta.known_at(r, c.known_at)) return;
    std::pair<int, std::uint64_t> key{in_force(meta, r, c) ? 1 : 0, meta.version(r)};
    if (!found || key > best) { best = key; found = true; }
  });
  return found;
}

// Is `row` part of its stem's winning version?
inline bool is_stem_winner(std::uint32_t row, const StemRows& stems, std::uint32_t stem,
                           const MetaTable& meta, const TimeContext& c) {
  std::pair<int, std::uint64_t> best;
  if (!stem_winner_key(stems, stem, meta, c, best)) return false;
  return meta.known_at(row, c.known_at) && best == std::make_pair(in_force(meta, row, c) ? 1 : 0, meta.version(row));
}

}  // namespace chrono

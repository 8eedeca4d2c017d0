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

// Does the item count as "in force" for the mode (before penalties)?
inline bool in_force(const Meta& m, const TimeContext& c) {
  switch (c.mode) {
    case Mode::Latest: return m.valid_at(c.t) && !m.deprecated;
    case Mode::AsOf: return m.valid_at(c.t);
    case Mode::Window: return m.overlaps(c.win_start, c.win_end);
    case Mode::All: return true;
  }
  return true;
}

// The winning version of a stem: among rows known at known_at, the maximum of
// (in force for the mode, version). Every row (chunk) of that version wins; rows of a stem
// are few (1-5 versions, a few chunks each). Returns false if no row of the stem is known.
inline bool stem_winner_key(const std::vector<std::uint32_t>& rows, const std::vector<Meta>& meta,
                            const TimeContext& c, std::pair<int, std::uint64_t>& best) {
  bool found = false;
  for (std::uint32_t r : rows) {
    const Meta& m = meta[r];
    if (!m.known_at(c.known_at)) continue;
    std::pair<int, std::uint64_t> key{in_force(m, c) ? 1 : 0, m.version};
    if (!found || key > best) { best = key; found = true; }
  }
  return found;
}

// Is `row` part of its stem's winning version?
inline bool is_stem_winner(std::uint32_t row, const std::vector<std::uint32_t>& rows, const std::vector<Meta>& meta,
                           const TimeContext& c) {
  std::pair<int, std::uint64_t> best;
  if (!stem_winner_key(rows, meta, c, best)) return false;
  const Meta& m = meta[row];
  return m.known_at(c.known_at) && best == std::make_pair(in_force(m, c) ? 1 : 0, m.version);
}

}  // namespace chrono

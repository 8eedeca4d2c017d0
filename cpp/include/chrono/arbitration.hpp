// Per-stem arbitration (tombstone pruning): one version per document lineage.
//
// The winner of a stem depends only on metadata and the query's (mode, T, known_at,
// window), never on similarity, so it acts as a filter. It is checked lazily: only for an
// item that would otherwise enter the top-k, which keeps it off the hot path.
#pragma once
#include <cstdint>
#include <tuple>
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

// The winner of a stem: among versions known at known_at, the maximum of
// (in force for the mode, version, valid_from, row). Rows of a stem are few (1-5 typically).
inline std::int64_t stem_winner(const std::vector<std::uint32_t>& rows, const std::vector<Meta>& meta,
                                const TimeContext& c) {
  std::int64_t best = -1;
  std::tuple<int, std::uint64_t, micros, std::uint32_t> best_key{};
  for (std::uint32_t r : rows) {
    const Meta& m = meta[r];
    if (!m.known_at(c.known_at)) continue;
    auto key = std::make_tuple(in_force(m, c) ? 1 : 0, m.version, m.valid_from, r);
    if (best < 0 || key > best_key) { best = r; best_key = key; }
  }
  return best;
}

}  // namespace chrono

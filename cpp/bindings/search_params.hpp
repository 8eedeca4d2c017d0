// _core.SearchParams: one search's description as the planner takes it, made once per set
// of options and passed whole to Store.search_one and Store.search_batch. Its fields are
// checked when it is made (register_search_params.cpp) and read-only afterwards, so the
// search calls trust them.
#pragma once
#include <cstddef>
#include <memory>
#include "chrono/searcher.hpp"

namespace chrono_bind {

struct BoundSearchParams {
  // Every per-query option; the times (time.t, known_at, win_start, win_end) stay zero
  // here and are set on each query's copy.
  chrono::SearchParams core;
  // search_batch: queries sorted by T are cut into groups of this many (0 counts as 1, at
  // most 64) that share candidates and vector loads; a lone search ignores it.
  std::size_t group = 64;
  // The where= filter (a _core.Filter), resolved to rows under the store's lock at each
  // search (Store::filter_rows); null: none.
  std::shared_ptr<const chrono::FilterProgram> filter;
};

}  // namespace chrono_bind

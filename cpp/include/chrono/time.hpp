// Time conventions of the core: int64 microseconds since the Unix epoch, UTC.
#pragma once
#include <cstdint>
#include <limits>

namespace chrono {

using micros = std::int64_t;

// Open interval ends are the int64 extremes, so comparisons need no special cases.
constexpr micros kOpenEnd = std::numeric_limits<micros>::max();
constexpr micros kOpenStart = std::numeric_limits<micros>::min();
constexpr double kMicrosPerDay = 86400.0 * 1e6;

inline double age_days(micros t_query, micros t_observed) {
  // Differences are taken in double directly: int64 subtraction could overflow for
  // extreme (open-ended) values, and a day count needs no more than double precision.
  return (static_cast<double>(t_query) - static_cast<double>(t_observed)) / kMicrosPerDay;
}

}  // namespace chrono

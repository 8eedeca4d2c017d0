// Per-item temporal metadata, one cache line per item.
//
// Arrow is the interchange and on-disk format (columns); inside the core every hot access
// is random (HNSW filter callbacks, candidate checks), so the numeric fields of one item
// are packed into a single 64-byte record: one cache miss per item instead of eight.
#pragma once
#include <cstdint>
#include <vector>
#include "time.hpp"

namespace chrono {

struct alignas(64) Meta {
  micros valid_from;
  micros valid_to;       // kOpenEnd = open
  micros observed_at;    // t_e: decay is measured from here
  micros ingested_at;    // transaction time: known from
  micros retracted_at;   // transaction time: believed until (kOpenEnd = never)
  std::uint64_t version; // packed numeric version (16 bits per component)
  float reliability;     // q_e in (0, 1]
  std::int32_t stem;     // lineage index, -1 = none
  std::uint16_t fact_type;
  std::uint8_t deprecated;
  std::uint8_t pad_[5];

  bool valid_at(micros t) const { return valid_from <= t && t < valid_to; }
  bool overlaps(micros a, micros b) const { return valid_from < b && valid_to > a; }
  bool known_at(micros k) const { return ingested_at <= k && k < retracted_at; }
};
static_assert(sizeof(Meta) == 64, "Meta must be one cache line");

// Column-wise input for ingest (borrowed pointers; n rows).
struct MetaColumns {
  std::size_t n = 0;
  const micros* valid_from = nullptr;
  const micros* valid_to = nullptr;
  const micros* observed_at = nullptr;
  const micros* ingested_at = nullptr;
  const micros* retracted_at = nullptr;
  const std::uint64_t* version = nullptr;
  const float* reliability = nullptr;
  const std::int32_t* stem = nullptr;
  const std::uint16_t* fact_type = nullptr;
  const std::uint8_t* deprecated = nullptr;
  const std::uint64_t* ids = nullptr;  // null: assign
};

}  // namespace chrono

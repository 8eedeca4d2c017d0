// Per-item temporal metadata in three arrays, each field in only the bytes it needs:
//   - times: the four times every query reads (valid_from, valid_to, observed_at,
//     ingested_at), exact int64 microseconds, one 32-byte aligned record per item (never
//     split across cache lines);
//   - info: reliability (float32), fact type (14 bits) with the deprecated and retracted
//     flags, and a 16-bit version code, 8 bytes per item;
//   - stem (int32), read only by arbitration.
// retracted_at, set on few items, is a flag bit plus a sparse map (row -> time). The packed
// numeric version (16 bits per component) is kept once per distinct value; rows hold a
// code into that dictionary (widened to a 32-bit column if a store ever sees more than
// 65,535 distinct versions).
// 44 bytes per item (48 past 65,535 distinct versions), against a 64-byte record before;
// a row read at random costs two cache lines instead of one.
#pragma once
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>
#include "time.hpp"

namespace chrono {

// Make room for n elements: exactly n the first time, else at least double the capacity
// (amortised O(1) appends without the 2x slack of a first large batch).
template <class T>
void grow_capacity(std::vector<T>& v, std::size_t n) {
  if (v.capacity() >= n) return;
  v.reserve(v.capacity() == 0 ? n : std::max(n, 2 * v.capacity()));
}

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

class MetaTable {
 public:
  using row_t = std::uint32_t;
  static constexpr std::uint16_t kTypeMask = 0x3fff, kDeprecated = 0x4000, kRetracted = 0x8000;
  static constexpr std::size_t kMaxTypes = std::size_t{kTypeMask} + 1;  // fact type codes < 16,384

  std::size_t size() const { return times_.size(); }
  bool empty() const { return times_.empty(); }

  struct alignas(32) Times {
    micros valid_from, valid_to;  // kOpenEnd = open
    micros observed_at;           // t_e: decay is measured from here
    micros ingested_at;           // transaction time: known from
  };
  struct Info {
    float reliability;            // q_e in (0, 1]
    std::uint16_t type_flags;     // fact type | kDeprecated | kRetracted
    std::uint16_t version16;      // version code while the codes fit 16 bits
  };
  static_assert(sizeof(Times) == 32 && sizeof(Info) == 8, "metadata layout");

  micros valid_from(std::size_t r) const { return times_[r].valid_from; }
  micros valid_to(std::size_t r) const { return times_[r].valid_to; }
  micros observed_at(std::size_t r) const { return times_[r].observed_at; }
  micros ingested_at(std::size_t r) const { return times_[r].ingested_at; }
  micros retracted_at(std::size_t r) const {
    return retracted(r) ? retracted_.find(static_cast<row_t>(r))->second : kOpenEnd;
  }
  std::uint64_t version(std::size_t r) const { return vdict_[wide_ ? v32_[r] : info_[r].version16]; }
  float reliability(std::size_t r) const { return info_[r].reliability; }
  std::int32_t stem(std::size_t r) const { return stem_[r]; }
  std::uint16_t fact_type(std::size_t r) const { return info_[r].type_flags & kTypeMask; }
  bool deprecated(std::size_t r) const { return (info_[r].type_flags & kDeprecated) != 0; }
  bool retracted(std::size_t r) const { return (info_[r].type_flags & kRetracted) != 0; }

  bool valid_at(std::size_t r, micros t) const { return times_[r].valid_from <= t && t < times_[r].valid_to; }
  bool overlaps(std::size_t r, micros a, micros b) const { return times_[r].valid_from < b && times_[r].valid_to > a; }
  bool known_at(std::size_t r, micros k) const { return times_[r].ingested_at <= k && k < retracted_at(r); }

  // Raw arrays, for kernels and indexes (valid until the next append).
  const Times* times_data() const { return times_.data(); }
  const Info* info_data() const { return info_.data(); }

  // Throws if a row's fact type code does not fit the 14 bits it is stored in.
  static void check_types(const MetaColumns& c) {
    for (std::size_t i = 0; i < c.n; ++i)
      if (c.fact_type[i] >= kMaxTypes)
        throw std::invalid_argument("fact type code " + std::to_string(c.fact_type[i]) + " at row " + std::to_string(i) +
                                    ": a store holds at most 16,384 fact types");
  }

  // Append n rows (the caller validated them, check_types included). Either every row is
  // appended or, on an exception (allocation), none is.
  void append(const MetaColumns& c) {
    const std::size_t first = size();
    try {
      reserve(first + c.n);
      for (std::size_t i = 0; i < c.n; ++i) {
        times_.push_back(Times{c.valid_from[i], c.valid_to[i], c.observed_at[i], c.ingested_at[i]});
        stem_.push_back(c.stem[i]);
        std::uint16_t tf = static_cast<std::uint16_t>(c.fact_type[i] & kTypeMask);
        if (c.deprecated[i]) tf |= kDeprecated;
        if (c.retracted_at[i] != kOpenEnd) {
          tf |= kRetracted;
          retracted_[static_cast<row_t>(first + i)] = c.retracted_at[i];
        }
        const std::uint32_t code = version_code(c.version[i]);
        info_.push_back(Info{c.reliability[i], tf, static_cast<std::uint16_t>(wide_ ? 0 : code)});
        if (wide_) v32_.push_back(code);
      }
    } catch (...) {
      truncate(first);
      throw;
    }
  }

  void set_valid_to(std::size_t r, micros t) { times_[r].valid_to = t; }
  void set_deprecated(std::size_t r, bool d) {
    std::uint16_t& tf = info_[r].type_flags;
    tf = static_cast<std::uint16_t>(d ? (tf | kDeprecated) : (tf & ~kDeprecated));
  }
  void set_retracted_at(std::size_t r, micros t) {
    std::uint16_t& tf = info_[r].type_flags;
    if (t == kOpenEnd) {
      retracted_.erase(static_cast<row_t>(r));
      tf = static_cast<std::uint16_t>(tf & ~kRetracted);
    } else {
      retracted_[static_cast<row_t>(r)] = t;
      tf = static_cast<std::uint16_t>(tf | kRetracted);
    }
  }

  std::size_t memory_bytes() const {
    constexpr std::size_t node = sizeof(void*) + sizeof(std::pair<row_t, micros>) + sizeof(std::size_t);
    return times_.capacity() * sizeof(Times) + info_.capacity() * sizeof(Info) +
           stem_.capacity() * sizeof(std::int32_t) + v32_.capacity() * sizeof(std::uint32_t) + vdict_.capacity() * sizeof(std::uint64_t) +
           vcode_.size() * (node + sizeof(std::uint64_t)) + vcode_.bucket_count() * sizeof(void*) +
           retracted_.size() * node + retracted_.bucket_count() * sizeof(void*);
  }

 private:
  // The dictionary code of packed version v (added if new).
  std::uint32_t version_code(std::uint64_t v) {
    auto it = vcode_.find(v);
    std::uint32_t code;
    if (it != vcode_.end()) {
      code = it->second;
    } else {
      code = static_cast<std::uint32_t>(vdict_.size());
      vdict_.push_back(v);
      try {
        vcode_.emplace(v, code);
      } catch (...) {
        vdict_.pop_back();
        throw;
      }
    }
    if (!wide_ && code > 0xffffu) {  // the 65,536th distinct version: a 32-bit column from now on
      v32_.reserve(std::max(times_.capacity(), info_.size() + 1));
      for (const Info& x : info_) v32_.push_back(x.version16);
      wide_ = true;
    }
    return code;
  }

  void reserve(std::size_t n) {
    grow_capacity(times_, n); grow_capacity(info_, n); grow_capacity(stem_, n);
    if (wide_) grow_capacity(v32_, n);
  }

  // Drop rows from `n` on (undoes a failed append; dictionary entries may stay, unused).
  void truncate(std::size_t n) {
    for (std::size_t r = n; r < times_.size(); ++r) retracted_.erase(static_cast<row_t>(r));
    times_.resize(std::min(times_.size(), n));
    info_.resize(std::min(info_.size(), n));
    stem_.resize(std::min(stem_.size(), n));
    v32_.resize(std::min(v32_.size(), n));
  }

  std::vector<Times> times_;
  std::vector<Info> info_;
  std::vector<std::int32_t> stem_;
  std::vector<std::uint32_t> v32_;  // version codes once they outgrow 16 bits (wide_)
  bool wide_ = false;
  std::vector<std::uint64_t> vdict_;  // distinct packed versions, in order of first use
  std::unordered_map<std::uint64_t, std::uint32_t> vcode_;
  std::unordered_map<row_t, micros> retracted_;
};

}  // namespace chrono

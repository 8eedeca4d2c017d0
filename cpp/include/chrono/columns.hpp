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
//
// Lifecycle events are facts in transaction time, never edits of the row: an *amendment*
// (a supersede closing the row, a deprecation) brings valid_to forward and/or deprecates
// the row from a valid time, as known from its transaction time tx. The row's own columns
// keep what was ingested, which is the widest interval and the fewest deprecations any view
// can see, so every index and bound built on them stays a superset / upper bound for every
// known_at; the exact tests (valid_to_known, deprecated_known) apply the amendments known
// at the view's transaction time. Rows without amendments cost one comparison more.
#pragma once
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>
#include "huge_pages.hpp"
#include "time.hpp"

namespace chrono {

// Make room for n elements: exactly n the first time, else at least double the capacity
// (amortised O(1) appends without the 2x slack of a first large batch).
template <class V>
void grow_capacity(V& v, std::size_t n) {
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

  // The row's columns as ingested (the widest interval any view sees; see the header).
  bool valid_at(std::size_t r, micros t) const { return times_[r].valid_from <= t && t < times_[r].valid_to; }
  bool overlaps(std::size_t r, micros a, micros b) const { return times_[r].valid_from < b && times_[r].valid_to > a; }
  bool known_at(std::size_t r, micros k) const { return times_[r].ingested_at <= k && k < retracted_at(r); }

  // ----- amendments (lifecycle events in transaction time)
  struct Amendment {
    micros tx;         // transaction time: known from here
    micros valid_to;   // the end it sets (kOpenEnd: the end is not changed)
    micros dep_from;   // deprecated from this valid time (kOpenEnd: not deprecated)
    std::uint32_t next;  // the row's earlier amendment (kNoAmendment: none)
    std::uint32_t row;   // the row amended (fills the record's padding)
  };
  static constexpr std::uint32_t kNoAmendment = 0xffffffffu;
  static constexpr std::size_t kMaxAmendments = 64;  // per row: bounds the exact tests' cost

  bool amended(std::size_t r) const { return r < amend_head_.size() && amend_head_[r] != kNoAmendment; }
  // Calls f(const Amendment&) for each amendment of row r, newest first.
  template <class F>
  void for_each_amendment(std::size_t r, F&& f) const {
    if (!amended(r)) return;
    for (std::uint32_t i = amend_head_[r]; i != kNoAmendment; i = amends_[i].next) f(amends_[i]);
  }
  std::size_t amendment_count(std::size_t r) const {
    std::size_t n = 0;
    for_each_amendment(r, [&](const Amendment&) { ++n; });
    return n;
  }
  std::size_t amendments() const { return amends_.size(); }
  // Calls f(row) once for each row with amendments: O(amendments), not O(rows).
  template <class F>
  void for_each_amended_row(F&& f) const {
    for (std::size_t i = 0; i < amends_.size(); ++i)
      if (amend_head_[amends_[i].row] == i) f(amends_[i].row);  // the row's newest: once per row
  }
  // The row as known at transaction time k: its end of validity (ends only come forward,
  // so the earliest end known at k) and the valid time it is deprecated from (kOpenStart:
  // always, as a row ingested deprecated; kOpenEnd: never).
  void known(std::size_t r, micros k, micros& valid_to, micros& dep_from) const {
    valid_to = times_[r].valid_to;
    dep_from = deprecated(r) ? kOpenStart : kOpenEnd;
    for_each_amendment(r, [&](const Amendment& a) {
      if (a.tx > k) return;
      valid_to = std::min(valid_to, a.valid_to);
      dep_from = std::min(dep_from, a.dep_from);
    });
  }
  bool valid_at_known(std::size_t r, micros t, micros k) const {
    if (!valid_at(r, t)) return false;
    if (!amended(r)) return true;
    micros vt, dep;
    known(r, k, vt, dep);
    return t < vt;
  }
  bool overlaps_known(std::size_t r, micros a, micros b, micros k) const {
    if (!overlaps(r, a, b)) return false;
    if (!amended(r)) return true;
    micros vt, dep;
    known(r, k, vt, dep);
    return vt > a;
  }
  // Valid at t and not deprecated at t, as known at k (latest mode's "in force").
  bool live_at_known(std::size_t r, micros t, micros k) const {
    if (!valid_at(r, t)) return false;
    if (!amended(r)) return !deprecated(r);
    micros vt, dep;
    known(r, k, vt, dep);
    return t < vt && t < dep;
  }
  // Room for n more amendments while the table has up to `rows` rows (may throw; changes
  // nothing else), so that amend() then cannot fail.
  void reserve_amendments(std::size_t n, std::size_t rows) {
    grow_capacity(amends_, amends_.size() + n);
    grow_capacity(amend_head_, rows);
  }
  // Append amendments of rows[i] (the caller checked them: rows exist, each row stays
  // within kMaxAmendments; and reserved room: reserve_amendments).
  void amend(const std::uint32_t* rows, const micros* tx, const micros* valid_to, const micros* dep_from, std::size_t n) {
    reserve_amendments(n, size());  // a no-op after the caller's reserve
    const std::size_t first = amends_.size();
    if (amend_head_.size() < size()) amend_head_.resize(size(), kNoAmendment);
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t r = rows[i];
      amends_.push_back(Amendment{tx[i], valid_to[i], dep_from[i], amend_head_[r], r});
      amend_head_[r] = static_cast<std::uint32_t>(first + i);
    }
  }

  // Ask for a row's times and info ahead of reading them (rows visited in an order that
  // is not storage order: a cluster's members, an index's output).
  void prefetch(std::size_t r) const {
    __builtin_prefetch(times_.data() + r);
    __builtin_prefetch(info_.data() + r);
  }

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
           retracted_.size() * node + retracted_.bucket_count() * sizeof(void*) +
           amends_.capacity() * sizeof(Amendment) + amend_head_.capacity() * sizeof(std::uint32_t);
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
    if (amend_head_.size() > n) amend_head_.resize(n);  // new rows have no amendments
    times_.resize(std::min(times_.size(), n));
    info_.resize(std::min(info_.size(), n));
    stem_.resize(std::min(stem_.size(), n));
    v32_.resize(std::min(v32_.size(), n));
  }

  // read a row at a time in random order by every scan: on 2 MiB pages where the kernel
  // allows (huge_pages.hpp; a lone search at 1% in force, 200k rows: ~2.5% less time)
  huge_vector<Times> times_;
  huge_vector<Info> info_;
  huge_vector<std::int32_t> stem_;
  std::vector<std::uint32_t> v32_;  // version codes once they outgrow 16 bits (wide_)
  bool wide_ = false;
  std::vector<std::uint64_t> vdict_;  // distinct packed versions, in order of first use
  std::unordered_map<std::uint64_t, std::uint32_t> vcode_;
  std::unordered_map<row_t, micros> retracted_;
  std::vector<Amendment> amends_;         // in order of arrival
  std::vector<std::uint32_t> amend_head_;  // per row: its newest amendment (sized at the first one)
};

}  // namespace chrono

// User metadata columns (tenant, department, access groups, source, ...) beside the
// temporal metadata, and the `where=` filter compiled over them.
//
// Columns are append-only: a row's metadata never changes once stored (a new version of a
// document is a new row). Each kind keeps only what it needs per row:
//   string        int32 code into the column's dictionary (NameTable), -1 = null: 4 B
//   int64         int64 value: 8 B                            (timestamp: µs, the same)
//   float64       double: 8 B (NaN is refused by the Python layer)
//   bool          one byte: 0, 1, or 2 = null: 1 B
//   list<string>  uint32 offset per row + int32 code per element: 4 B + 4 B per element
// Nullable numeric and list columns add one validity byte per row once they hold a null.
//
// A filter (FilterProgram) is a postfix program of leaves (value in a set, value in a range,
// value present) and combinators (and, or, not), made by the Python layer from the
// Chroma / LangChain dict form (chrono_engine/search/filters.py). String constants stay
// strings here and are resolved to codes when the program is evaluated, under the store's
// lock, so a value that first appears after the program was made is still matched.
// Evaluation gives a RowSet: one bit per row of rows [0, n). Null semantics: a null (or
// an empty list) matches no `in` and no range; `not` complements, so `$ne` / `$nin`
// (not-in) match nulls. A list matches `in` when any of its elements is in the set.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>
#include "columns.hpp"
#include "kernels.hpp"
#include "names.hpp"

namespace chrono {

enum class UserKind : std::uint8_t { String = 0, Int64 = 1, Float64 = 2, Bool = 3, Timestamp = 4, StringList = 5 };
inline constexpr int kUserKinds = 6;

inline const char* user_kind_name(UserKind k) {
  switch (k) {
    case UserKind::String: return "string";
    case UserKind::Int64: return "int64";
    case UserKind::Float64: return "float64";
    case UserKind::Bool: return "bool";
    case UserKind::Timestamp: return "timestamp";
    case UserKind::StringList: return "list<string>";
  }
  return "?";
}

// One user column. Rows are appended by UserColumns (all columns advance together).
struct UserColumn {
  std::string name;
  UserKind kind = UserKind::String;
  NameTable dict;                     // string, list<string>: the distinct values
  std::vector<std::int32_t> codes;    // string: per row; list<string>: per element
  std::vector<std::uint32_t> offsets{0};  // list<string>: n + 1 element offsets
  std::vector<std::int64_t> i64;      // int64, timestamp
  std::vector<double> f64;            // float64
  std::vector<std::uint8_t> b;        // bool: 0, 1, 2 = null
  std::vector<std::uint8_t> valid;    // int64, timestamp, float64, list: empty while no row is null

  bool numeric() const { return kind == UserKind::Int64 || kind == UserKind::Timestamp || kind == UserKind::Float64; }
  bool text() const { return kind == UserKind::String || kind == UserKind::StringList; }
  std::size_t rows() const {
    switch (kind) {
      case UserKind::String: return codes.size();
      case UserKind::Int64: case UserKind::Timestamp: return i64.size();
      case UserKind::Float64: return f64.size();
      case UserKind::Bool: return b.size();
      case UserKind::StringList: return offsets.size() - 1;
    }
    return 0;
  }
  bool is_valid(std::size_t r) const {
    switch (kind) {
      case UserKind::String: return codes[r] >= 0;
      case UserKind::Bool: return b[r] != 2;
      default: return valid.empty() || valid[r] != 0;
    }
  }
  std::size_t memory_bytes() const {
    return dict.memory_bytes() + codes.capacity() * 4 + offsets.capacity() * 4 + i64.capacity() * 8 +
           f64.capacity() * 8 + b.capacity() + valid.capacity();
  }
  // Back to its first n rows (undoes a rejected append).
  void truncate(std::size_t n) {
    if (n >= rows()) return;
    switch (kind) {
      case UserKind::String: codes.resize(n); break;
      case UserKind::Int64: case UserKind::Timestamp: i64.resize(n); break;
      case UserKind::Float64: f64.resize(n); break;
      case UserKind::Bool: b.resize(n); break;
      case UserKind::StringList: codes.resize(offsets[n]); offsets.resize(n + 1); break;
    }
    if (valid.size() > n) valid.resize(n);
  }
  // n null rows.
  void append_nulls(std::size_t n) {
    if (n == 0) return;
    switch (kind) {
      case UserKind::String: grow_capacity(codes, codes.size() + n); codes.insert(codes.end(), n, -1); return;
      case UserKind::Bool: grow_capacity(b, b.size() + n); b.insert(b.end(), n, 2); return;
      default: break;
    }
    const std::size_t before = rows();
    if (valid.empty()) valid.assign(before, 1);
    if (kind == UserKind::Float64) f64.insert(f64.end(), n, 0.0);
    else if (kind == UserKind::StringList) offsets.insert(offsets.end(), n, offsets.back());
    else i64.insert(i64.end(), n, 0);
    valid.insert(valid.end(), n, 0);
  }
  // Validity of appended rows: `v` null means every one is valid.
  void append_validity(const std::uint8_t* v, std::size_t n) {
    const std::size_t before = rows() - n;  // rows already appended
    bool any_null = false;
    if (v) for (std::size_t i = 0; i < n && !any_null; ++i) any_null = v[i] == 0;
    if (!any_null && valid.empty()) return;
    if (valid.empty()) valid.assign(before, 1);
    grow_capacity(valid, valid.size() + n);
    if (v) for (std::size_t i = 0; i < n; ++i) valid.push_back(v[i] != 0);
    else valid.insert(valid.end(), n, 1);
  }
};

// One column's rows to append, as the binding passes them (borrowed pointers).
struct UserAppend {
  std::size_t col = 0;
  // string / list<string>: dictionary indices (-1: null) into `dict_values`; list<string>:
  // `list_offsets` (n + 1, from 0) delimit each row's elements in `idx`
  const std::int32_t* idx = nullptr;
  std::size_t n_idx = 0;
  std::vector<std::string_view> dict_values;
  const std::int64_t* list_offsets = nullptr;
  const std::int64_t* i64 = nullptr;    // int64, timestamp
  const double* f64 = nullptr;          // float64
  const std::uint8_t* b = nullptr;      // bool: 0 / 1
  const std::uint8_t* valid = nullptr;  // null: all valid
};

// The filter result: one bit per row of [0, n).
struct RowSet {
  std::vector<std::uint64_t> bits;
  std::size_t n = 0;
  std::size_t count = 0;
  // The rows in order when they are few (count <= n / kListShare; set by index_rows): a
  // lone query's walk over a 0.1% filter's bits was a third of its core (200k rows, 3,125
  // words for ~200 rows).
  std::vector<std::uint32_t> list;
  static constexpr std::size_t kListShare = 32;
  bool test(std::uint32_t r) const { return r < n && ((bits[r >> 6] >> (r & 63)) & 1u); }
  // count from bits, and list where the rows are few (at most n / 8 bytes, as the bits).
  void index_rows() {
    count = 0;
    for (std::uint64_t w : bits) count += static_cast<std::size_t>(__builtin_popcountll(w));
    list.clear();
    if (count * kListShare > n) return;
    list.reserve(count);
    walk_bits([&](std::uint32_t r) { list.push_back(r); });
  }
  template <class F>
  void for_each(F&& f) const {
    if (!list.empty() || count == 0) {
      for (std::uint32_t r : list) f(r);
      return;
    }
    walk_bits(f);
  }
  template <class F>
  void walk_bits(F&& f) const {
    for (std::size_t w = 0; w < bits.size(); ++w) {
      std::uint64_t x = bits[w];
      while (x) {
        const int t = __builtin_ctzll(x);
        f(static_cast<std::uint32_t>(w * 64 + static_cast<std::size_t>(t)));
        x &= x - 1;
      }
    }
  }
  std::size_t memory_bytes() const { return bits.capacity() * 8 + list.capacity() * 4 + sizeof(RowSet); }
};

// A compiled filter: postfix operations; see the header comment.
struct FilterOp {
  enum Code : std::uint8_t { In = 0, Range = 1, FRange = 2, Exists = 3, And = 4, Or = 5, Not = 6, Const = 7 };
  Code code = Const;
  std::uint32_t col = 0;
  std::uint32_t n = 0;                 // And / Or: operands; Const: 0 or 1
  UserKind kind = UserKind::String;    // the leaf's column kind, as compiled
  std::vector<std::string> strs;       // In on string / list<string>
  std::vector<std::int64_t> ints;      // In on int64 / timestamp / bool, sorted and unique
  std::vector<double> dbls;            // In on float64, sorted and unique
  std::int64_t lo = 0, hi = 0;         // Range: lo <= v <= hi
  double flo = 0, fhi = 0;             // FRange
  bool flo_incl = true, fhi_incl = true;
};

struct FilterProgram {
  std::vector<FilterOp> ops;
  std::string key;  // canonical bytes (the cache's key; equal programs, equal keys)
  std::size_t depth = 0;
};

class UserColumns {
 public:
  static constexpr std::size_t kMaxColumns = 1024;
  std::size_t size() const { return cols_.size(); }
  std::size_t rows() const { return rows_; }
  const UserColumn& column(std::size_t c) const { return cols_.at(c); }

  // A new column (null for every row so far); returns its index.
  std::size_t add(const std::string& name, UserKind kind) {
    if (static_cast<int>(kind) >= kUserKinds) throw std::invalid_argument("unknown metadata kind");
    for (const auto& c : cols_)
      if (c.name == name) throw std::invalid_argument("metadata column '" + name + "' exists");
    if (cols_.size() >= kMaxColumns) throw std::length_error("at most 1024 metadata columns");
    UserColumn c;
    c.name = name;
    c.kind = kind;
    c.append_nulls(rows_);
    cols_.push_back(std::move(c));
    return cols_.size() - 1;
  }
  // Forget columns added after the first n (undoes a rejected batch's new columns).
  void drop_columns_from(std::size_t n) { if (n < cols_.size()) cols_.resize(n); }

  // Append n rows: the given columns' values, null in every other column. Every input is
  // checked before anything changes; on any failure all columns are back where they were.
  void append(std::size_t n, const std::vector<UserAppend>& parts) {
    std::vector<char> given(cols_.size(), 0);
    for (const UserAppend& a : parts) {
      if (a.col >= cols_.size()) throw std::out_of_range("metadata column index out of range");
      if (given[a.col]) throw std::invalid_argument("metadata column '" + cols_[a.col].name + "' given twice");
      given[a.col] = 1;
      check(cols_[a.col], a, n);
    }
    std::vector<std::size_t> dict_sizes;
    for (const auto& c : cols_) dict_sizes.push_back(c.dict.size());
    try {
      for (const UserAppend& a : parts) put(cols_[a.col], a, n);
      for (std::size_t c = 0; c < cols_.size(); ++c) if (!given[c]) cols_[c].append_nulls(n);
    } catch (...) {
      for (std::size_t c = 0; c < cols_.size(); ++c) { cols_[c].truncate(rows_); cols_[c].dict.truncate(dict_sizes[c]); }
      throw;
    }
    rows_ += n;
  }
  // Back to the first n rows (a batch the core then refused); dictionaries keep any new
  // values (harmless: codes no row holds).
  void truncate(std::size_t n) {
    if (n >= rows_) return;
    for (auto& c : cols_) c.truncate(n);
    rows_ = n;
  }
  std::size_t memory_bytes() const {
    std::size_t s = 0;
    for (const auto& c : cols_) s += c.memory_bytes();
    return s;
  }

  // Rows [lo, hi) of the program's result as bits (lo a multiple of 64; bit i of word w is
  // row lo + 64 w + i). Throws std::invalid_argument when a leaf's column does not exist or
  // is of another kind than the program was compiled for.
  std::vector<std::uint64_t> eval(const FilterProgram& p, std::size_t lo, std::size_t hi) const {
    if (lo % 64 != 0 || hi < lo || hi > rows_) throw std::logic_error("filter rows out of range");
    const std::size_t words = (hi - lo + 63) / 64;
    std::vector<std::vector<std::uint64_t>> stack;
    stack.reserve(p.depth + 1);
    for (const FilterOp& op : p.ops) {
      switch (op.code) {
        case FilterOp::And: case FilterOp::Or: {
          if (op.n == 0 || stack.size() < op.n) throw std::logic_error("filter program stack underflow");
          auto& first = stack[stack.size() - op.n];
          for (std::size_t k = stack.size() - op.n + 1; k < stack.size(); ++k) {
            const auto& other = stack[k];
            if (op.code == FilterOp::And) for (std::size_t w = 0; w < words; ++w) first[w] &= other[w];
            else for (std::size_t w = 0; w < words; ++w) first[w] |= other[w];
          }
          stack.resize(stack.size() - op.n + 1);
          break;
        }
        case FilterOp::Not: {
          if (stack.empty()) throw std::logic_error("filter program stack underflow");
          for (auto& w : stack.back()) w = ~w;
          trim(stack.back(), hi - lo);
          break;
        }
        case FilterOp::Const: {
          stack.emplace_back(words, op.n ? ~std::uint64_t{0} : 0);
          trim(stack.back(), hi - lo);
          break;
        }
        default: {
          if (op.col >= cols_.size()) throw std::invalid_argument("filter: metadata column " + std::to_string(op.col) + " does not exist");
          const UserColumn& c = cols_[op.col];
          if (c.kind != op.kind)
            throw std::invalid_argument("filter: column '" + c.name + "' is " + user_kind_name(c.kind) + ", not " + user_kind_name(op.kind));
          stack.emplace_back(words, 0);
          leaf(c, op, lo, hi, stack.back());
        }
      }
    }
    if (stack.size() != 1) throw std::logic_error("filter program leaves " + std::to_string(stack.size()) + " results");
    return std::move(stack.back());
  }

 private:
  static void trim(std::vector<std::uint64_t>& w, std::size_t n) {
    if (n % 64 && !w.empty()) w.back() &= (std::uint64_t{1} << (n % 64)) - 1;
  }
  // Fill bits of rows [lo, hi) where pred(row).
  template <class P>
  static void fill(std::size_t lo, std::size_t hi, std::vector<std::uint64_t>& out, P&& pred) {
    const std::size_t n = hi - lo;
    for (std::size_t w = 0; w * 64 < n; ++w) {
      const std::size_t base = lo + w * 64, end = std::min(hi, base + 64);
      std::uint64_t x = 0;
      for (std::size_t r = base; r < end; ++r) x |= static_cast<std::uint64_t>(pred(r) ? 1 : 0) << (r - base);
      out[w] = x;
    }
  }
  static void leaf(const UserColumn& c, const FilterOp& op, std::size_t lo, std::size_t hi, std::vector<std::uint64_t>& out) {
    const bool nulls = !c.valid.empty();
    if (op.code == FilterOp::Exists) {
      fill(lo, hi, out, [&](std::size_t r) { return c.is_valid(r); });
      return;
    }
    if (c.text()) {
      if (op.code != FilterOp::In) throw std::invalid_argument("filter: a range on text column '" + c.name + "'");
      std::vector<std::int32_t> want;
      for (const auto& s : op.strs) {
        const std::int64_t code = c.dict.find(s);
        if (code >= 0) want.push_back(static_cast<std::int32_t>(code));
      }
      if (want.empty()) return;  // no stored row holds any of the values
      const std::int32_t* codes = c.codes.data();
      if (c.kind == UserKind::String) {  // the dispatched kernels (kernels.hpp: AVX2 where the CPU has it)
        if (want.size() == 1) {
          kernels().bits_eq_i32(codes + lo, hi - lo, want[0], out.data());
        } else {
          std::vector<std::uint8_t> tbl(c.dict.size(), 0);
          for (auto w : want) tbl[static_cast<std::size_t>(w)] = 1;
          kernels().bits_lut_i32(codes + lo, hi - lo, tbl.data(), out.data());
        }
        return;
      }
      std::vector<std::uint8_t> tbl(c.dict.size(), 0);
      for (auto w : want) tbl[static_cast<std::size_t>(w)] = 1;
      // Without a branch per element: a running count of the matching elements, then a row
      // passes where its elements' count grew (a loop per row that returned at its first
      // match mispredicted on every other row where half the rows match: 1.6 ms at 200k
      // rows of ~2.5 tags, against 0.26 ms when few match).
      const std::uint32_t* off = c.offsets.data();
      const std::uint32_t e0 = off[lo], e1 = off[hi];
      thread_local std::vector<std::uint32_t> run;  // kept: a fresh 2 MB buffer cost its page faults per call
      run.resize(static_cast<std::size_t>(e1 - e0) + 1);
      std::uint32_t acc = 0, *rp = run.data();  // the count in a register, not reloaded from the store just made
      rp[0] = 0;
      for (std::uint32_t e = e0; e < e1; ++e) {
        acc += tbl[static_cast<std::size_t>(codes[e])];
        rp[e - e0 + 1] = acc;
      }
      const std::uint32_t* rc = run.data();
      fill(lo, hi, out, [&](std::size_t r) { return rc[off[r + 1] - e0] > rc[off[r] - e0]; });
      return;
    }
    const std::uint8_t* v = nulls ? c.valid.data() : nullptr;
    switch (c.kind) {
      case UserKind::Bool: {
        if (op.code != FilterOp::In) throw std::invalid_argument("filter: a range on bool column '" + c.name + "'");
        bool t = false, f = false;
        for (auto x : op.ints) { t |= x == 1; f |= x == 0; }
        const std::uint8_t* bv = c.b.data();
        fill(lo, hi, out, [&](std::size_t r) { return (bv[r] == 1 && t) || (bv[r] == 0 && f); });
        return;
      }
      case UserKind::Int64: case UserKind::Timestamp: {
        const std::int64_t* x = c.i64.data();
        if (op.code == FilterOp::Range) {
          kernels().bits_range_i64(x + lo, v ? v + lo : nullptr, hi - lo, op.lo, op.hi, out.data());
        } else if (op.code == FilterOp::In) {
          const auto& s = op.ints;
          if (s.empty()) return;
          if (s.size() == 1) {
            const std::int64_t a = s[0];
            fill(lo, hi, out, [&](std::size_t r) { return (!v || v[r]) && x[r] == a; });
          } else {
            fill(lo, hi, out, [&](std::size_t r) { return (!v || v[r]) && std::binary_search(s.begin(), s.end(), x[r]); });
          }
        } else {
          throw std::invalid_argument("filter: a float range on integer column '" + c.name + "'");
        }
        return;
      }
      case UserKind::Float64: {
        const double* x = c.f64.data();
        if (op.code == FilterOp::FRange) {
          const double a = op.flo, b = op.fhi;
          const bool ai = op.flo_incl, bi = op.fhi_incl;
          fill(lo, hi, out, [&](std::size_t r) {
            if (v && !v[r]) return false;
            const double y = x[r];
            return (ai ? y >= a : y > a) && (bi ? y <= b : y < b);
          });
        } else if (op.code == FilterOp::In) {
          const auto& s = op.dbls;
          if (s.empty()) return;
          fill(lo, hi, out, [&](std::size_t r) { return (!v || v[r]) && std::binary_search(s.begin(), s.end(), x[r]); });
        } else {
          throw std::invalid_argument("filter: an integer range on float column '" + c.name + "'");
        }
        return;
      }
      default: break;
    }
    throw std::logic_error("filter: unhandled column kind");
  }

  // Checks one column's input of n rows (nothing changes).
  static void check(const UserColumn& c, const UserAppend& a, std::size_t n) {
    auto fail = [&](const std::string& what) { throw std::invalid_argument("metadata column '" + c.name + "': " + what); };
    switch (c.kind) {
      case UserKind::String: case UserKind::StringList: {
        const std::size_t nd = a.dict_values.size();
        std::size_t ne = n;
        if (c.kind == UserKind::StringList) {
          if (!a.list_offsets) fail("list offsets missing");
          if (a.list_offsets[0] != 0) fail("list offsets must start at 0");
          for (std::size_t i = 0; i < n; ++i)
            if (a.list_offsets[i + 1] < a.list_offsets[i]) fail("list offsets decrease at row " + std::to_string(i));
          ne = static_cast<std::size_t>(a.list_offsets[n]);
          if (c.codes.size() + ne > 0xffffffffu) fail("more than 2^32 list elements");
        }
        if (a.n_idx != ne) fail("expected " + std::to_string(ne) + " indices, got " + std::to_string(a.n_idx));
        if (ne && !a.idx) fail("indices missing");
        for (std::size_t i = 0; i < ne; ++i) {
          const std::int32_t x = a.idx[i];
          if (x < -1 || (x >= 0 && static_cast<std::size_t>(x) >= nd)) fail("dictionary index out of range");
          if (x < 0 && c.kind == UserKind::StringList) fail("a null inside a list");
        }
        return;
      }
      case UserKind::Int64: case UserKind::Timestamp: if (!a.i64) fail("values missing"); return;
      case UserKind::Float64:
        if (!a.f64) fail("values missing");
        for (std::size_t i = 0; i < n; ++i)
          if (std::isnan(a.f64[i]) && (!a.valid || a.valid[i])) fail("NaN at row " + std::to_string(i));
        return;
      case UserKind::Bool:
        if (!a.b) fail("values missing");
        for (std::size_t i = 0; i < n; ++i) if (a.b[i] > 1) fail("bool value not 0 or 1");
        return;
    }
  }
  static void put(UserColumn& c, const UserAppend& a, std::size_t n) {
    switch (c.kind) {
      case UserKind::String: case UserKind::StringList: {
        std::vector<std::int32_t> remap(a.dict_values.size());
        for (std::size_t i = 0; i < remap.size(); ++i) remap[i] = static_cast<std::int32_t>(c.dict.add(a.dict_values[i]));
        if (c.kind == UserKind::String) {
          grow_capacity(c.codes, c.codes.size() + n);
          for (std::size_t i = 0; i < n; ++i) {
            const std::int32_t x = a.idx[i];
            c.codes.push_back(x < 0 || (a.valid && !a.valid[i]) ? -1 : remap[static_cast<std::size_t>(x)]);
          }
          return;
        }
        const std::size_t ne = static_cast<std::size_t>(a.list_offsets[n]);
        const std::uint32_t base = c.offsets.back();
        grow_capacity(c.codes, c.codes.size() + ne);
        grow_capacity(c.offsets, c.offsets.size() + n);
        for (std::size_t i = 0; i < ne; ++i) c.codes.push_back(remap[static_cast<std::size_t>(a.idx[i])]);
        for (std::size_t i = 0; i < n; ++i) c.offsets.push_back(base + static_cast<std::uint32_t>(a.list_offsets[i + 1]));
        c.append_validity(a.valid, n);
        return;
      }
      case UserKind::Int64: case UserKind::Timestamp:
        grow_capacity(c.i64, c.i64.size() + n);
        c.i64.insert(c.i64.end(), a.i64, a.i64 + n);
        c.append_validity(a.valid, n);
        return;
      case UserKind::Float64:
        grow_capacity(c.f64, c.f64.size() + n);
        c.f64.insert(c.f64.end(), a.f64, a.f64 + n);
        c.append_validity(a.valid, n);
        return;
      case UserKind::Bool:
        grow_capacity(c.b, c.b.size() + n);
        for (std::size_t i = 0; i < n; ++i) c.b.push_back(a.valid && !a.valid[i] ? 2 : a.b[i]);
        return;
    }
  }

  std::vector<UserColumn> cols_;
  std::size_t rows_ = 0;
};

}  // namespace chrono

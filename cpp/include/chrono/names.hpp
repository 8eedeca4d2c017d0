// Interned names (the stem ids behind the core's stem codes): code -> name from one
// character buffer and a 4-byte offset per name; name -> code through an open-addressing
// table of 4-byte codes at load <= 1/2 (linear probing, FNV-1a hashes). About
// len + 4 + 8..16 bytes per name, where a Python list and dict of str took ~90.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace chrono {

class NameTable {
 public:
  std::size_t size() const { return offsets_.size() - 1; }

  std::string_view name(std::size_t code) const {
    if (code >= size()) throw std::out_of_range("name code " + std::to_string(code) + " out of range");
    return {chars_.data() + offsets_[code], offsets_[code + 1] - offsets_[code]};
  }

  // Code of `s`, or -1.
  std::int64_t find(std::string_view s) const {
    if (slots_.empty()) return -1;
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = hash(s) & mask;; i = (i + 1) & mask) {
      const std::uint32_t c = slots_[i];
      if (c == 0) return -1;
      if (name(c - 1) == s) return c - 1;
    }
  }

  // Code of `s`, added if new (codes are given in order of first addition).
  std::uint32_t add(std::string_view s) {
    const std::int64_t c = find(s);
    if (c >= 0) return static_cast<std::uint32_t>(c);
    if (chars_.size() + s.size() > 0xffffffffu) throw std::length_error("names exceed 4 GiB");
    if (size() >= 0xfffffffeu) throw std::length_error("too many names");
    if (2 * (size() + 1) > slots_.size()) rehash(slots_.empty() ? 16 : 2 * slots_.size());
    const std::uint32_t code = static_cast<std::uint32_t>(size());
    chars_.insert(chars_.end(), s.begin(), s.end());
    offsets_.push_back(static_cast<std::uint32_t>(chars_.size()));
    place(code);
    return code;
  }

  // Forget the names with codes >= n (undoes additions of a rejected batch).
  void truncate(std::size_t n) {
    if (n >= size()) return;
    chars_.resize(offsets_[n]);
    offsets_.resize(n + 1);
    rehash(slots_.size());
  }

  std::size_t memory_bytes() const {
    return chars_.capacity() + offsets_.capacity() * sizeof(std::uint32_t) + slots_.capacity() * sizeof(std::uint32_t);
  }

 private:
  static std::size_t hash(std::string_view s) {
    std::uint64_t h = 1469598103934665603ull;
    for (unsigned char ch : s) { h ^= ch; h *= 1099511628211ull; }
    return static_cast<std::size_t>(h ^ (h >> 29));
  }
  void place(std::uint32_t code) {
    const std::size_t mask = slots_.size() - 1;
    std::size_t i = hash(name(code)) & mask;
    while (slots_[i] != 0) i = (i + 1) & mask;
    slots_[i] = code + 1;
  }
  void rehash(std::size_t n_slots) {
    slots_.assign(n_slots, 0);
    for (std::size_t c = 0; c < size(); ++c) place(static_cast<std::uint32_t>(c));
  }

  std::vector<char> chars_;
  std::vector<std::uint32_t> offsets_{0};
  std::vector<std::uint32_t> slots_;  // code + 1; 0 = empty; a power of two in size
};

}  // namespace chrono

// String columns stored as Arrow string arrays (int32 offsets), each split in the same
// consecutive parts, viewed for reading by row: what _core.take_strings gathers from and
// Store.search_one reads a lone search's hits from (the store's title, version and content,
// chrono_engine/_state.py). `columns` holds, per column, one (offsets, data, validity, bit
// offset) tuple per part (part p's offsets: its rows + 1 values into its data; validity:
// the part's Arrow validity bitmap as uint8, or None when no row is null, and the bit of
// its first row); `starts` the first row of every part, then the row count. Checked when
// made; the arrays are kept referenced. Offsets not ascending within their data, a bitmap
// too short and rows out of range are errors, never a read out of bounds.
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>
#include "common.hpp"

namespace chrono_bind {

class StringColumns {
 public:
  // `who` names the caller in error messages.
  StringColumns(const py::sequence& columns, const carray<std::int64_t>& st, const char* who) : who_(who) {
    using Offsets = py::array_t<std::int32_t, py::array::c_style>;
    using Bytes = py::array_t<std::uint8_t, py::array::c_style>;
    starts_.assign(st.data(), st.data() + st.size());
    const std::size_t n_parts = starts_.empty() ? 0 : starts_.size() - 1;
    for (std::size_t p = 0; p < n_parts; ++p)
      if (starts_[p] > starts_[p + 1] || starts_[0] != 0) fail("part starts must ascend from 0");
    for (py::handle col : columns) {
      const py::sequence parts = py::reinterpret_borrow<py::sequence>(col);
      if (static_cast<std::size_t>(parts.size()) != n_parts) fail("one tuple per part");
      std::vector<Part> ps(n_parts);
      for (std::size_t p = 0; p < n_parts; ++p) {
        const py::tuple t = py::reinterpret_borrow<py::tuple>(parts[p]);
        if (!py::isinstance<py::tuple>(parts[p]) || t.size() != 4 || !py::isinstance<Offsets>(t[0]) ||
            !py::isinstance<Bytes>(t[1]) || !(t[2].is_none() || py::isinstance<Bytes>(t[2])))
          fail("each part is (int32 offsets, uint8 data, uint8 bitmap or None, bit offset), C-contiguous");
        auto o = py::reinterpret_borrow<Offsets>(t[0]);
        auto d = py::reinterpret_borrow<Bytes>(t[1]);
        const std::size_t len = static_cast<std::size_t>(starts_[p + 1] - starts_[p]);
        if (o.ndim() != 1 || d.ndim() != 1 || static_cast<std::size_t>(o.size()) != len + 1)
          fail("part " + std::to_string(p) + " has the wrong number of offsets");
        ps[p] = Part{o.data(), d.data(), static_cast<std::size_t>(d.size()), nullptr, 0};
        keep_.push_back(o);
        keep_.push_back(d);
        if (!t[2].is_none()) {
          auto b = py::reinterpret_borrow<Bytes>(t[2]);
          const auto bit0 = t[3].cast<std::int64_t>();
          if (b.ndim() != 1 || bit0 < 0 || static_cast<std::size_t>(b.size()) * 8 < static_cast<std::size_t>(bit0) + len)
            fail("part " + std::to_string(p) + " has a bitmap too short");
          ps[p].bits = b.data();
          ps[p].bit0 = static_cast<std::size_t>(bit0);
          keep_.push_back(b);
        }
      }
      cols_.push_back(std::move(ps));
    }
  }

  std::size_t columns() const { return cols_.size(); }
  std::int64_t rows() const { return starts_.empty() ? 0 : starts_.back(); }

  // Column c's value at row r (0 <= r < rows()): false when null; damaged offsets throw.
  bool get(std::size_t c, std::int64_t r, std::string_view& out) const {
    const Part& x = part(c, r);
    const std::size_t j = static_cast<std::size_t>(r - starts_[part_of(r)]);
    const std::int32_t a = x.off[j], b = x.off[j + 1];
    if (a < 0 || b < a || static_cast<std::size_t>(b) > x.bytes) fail("damaged offsets at row " + std::to_string(r));
    out = std::string_view(reinterpret_cast<const char*>(x.data) + a, static_cast<std::size_t>(b - a));
    if (x.bits == nullptr) return true;
    const std::size_t bit = x.bit0 + j;
    return (x.bits[bit >> 3] >> (bit & 7)) & 1u;
  }

  // Per column, (offsets, data, valid) of a new string array of `rows` in order: valid a
  // bool array, or None when every row taken is valid (a null slot's bytes, empty or not,
  // are copied as they are). A row out of range is an IndexError.
  py::list take(const carray<std::int64_t>& rows) const {
    const std::size_t nr = static_cast<std::size_t>(rows.size());
    const std::int64_t* r = rows.data();
    for (std::size_t i = 0; i < nr; ++i)
      if (r[i] < 0 || r[i] >= this->rows())
        throw py::index_error(who_ + ": row " + std::to_string(r[i]) + " out of range");
    py::list out;
    for (std::size_t c = 0; c < cols_.size(); ++c) {
      py::array_t<std::int32_t> offsets(static_cast<py::ssize_t>(nr + 1));
      std::int32_t* oo = offsets.mutable_data();
      std::vector<std::string_view> v(nr);
      std::vector<std::uint8_t> ok(nr);
      std::size_t total = 0, nulls = 0;
      oo[0] = 0;
      for (std::size_t i = 0; i < nr; ++i) {
        ok[i] = get(c, r[i], v[i]);
        nulls += ok[i] == 0;
        total += v[i].size();
        if (total > 0x7fffffffu) throw std::length_error(who_ + ": the strings exceed 2 GiB");
        oo[i + 1] = static_cast<std::int32_t>(total);
      }
      py::array_t<std::uint8_t> data(static_cast<py::ssize_t>(total));
      std::uint8_t* dd = data.mutable_data();
      {
        py::gil_scoped_release nogil;
        for (std::size_t i = 0; i < nr; ++i)
          if (!v[i].empty()) std::memcpy(dd + oo[i], v[i].data(), v[i].size());
      }
      py::object valid = py::none();
      if (nulls) {
        py::array_t<bool> b(static_cast<py::ssize_t>(nr));
        std::copy(ok.begin(), ok.end(), reinterpret_cast<std::uint8_t*>(b.mutable_data()));
        valid = b;
      }
      out.append(py::make_tuple(offsets, data, valid));
    }
    return out;
  }

 private:
  struct Part {
    const std::int32_t* off; const std::uint8_t* data; std::size_t bytes;
    const std::uint8_t* bits; std::size_t bit0;  // bits == nullptr: no null
  };
  [[noreturn]] void fail(const std::string& what) const { throw std::invalid_argument(who_ + ": " + what); }
  std::size_t part_of(std::int64_t r) const {
    return static_cast<std::size_t>(std::upper_bound(starts_.begin(), starts_.end(), r) - starts_.begin()) - 1;
  }
  const Part& part(std::size_t c, std::int64_t r) const { return cols_[c][part_of(r)]; }

  std::string who_;
  std::vector<std::vector<Part>> cols_;
  std::vector<std::int64_t> starts_;
  std::vector<py::object> keep_;
};

}  // namespace chrono_bind

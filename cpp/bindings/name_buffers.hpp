// The names behind dictionary codes as Arrow string buffers: Names.take (the stem names)
// and Store.user_take (a metadata string column's dictionary) read them this one way.
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include "chrono/names.hpp"

namespace py = pybind11;

namespace chrono_bind {

// (int32 offsets, uint8 data) of the names of codes[0..n); code -1 gives an empty slot (the
// caller marks it null); any other code outside the table is an IndexError.
inline py::tuple name_buffers(const chrono::NameTable& t, const std::int32_t* c, std::size_t n) {
  py::array_t<std::int32_t> offsets(static_cast<py::ssize_t>(n + 1));
  std::int32_t* o = offsets.mutable_data();
  std::size_t total = 0;
  o[0] = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (c[i] < -1 || (c[i] >= 0 && static_cast<std::size_t>(c[i]) >= t.size()))
      throw py::index_error("name code " + std::to_string(c[i]) + " out of range");
    if (c[i] >= 0) total += t.name(static_cast<std::size_t>(c[i])).size();
    if (total > 0x7fffffffu) throw std::length_error("names exceed 2 GiB");
    o[i + 1] = static_cast<std::int32_t>(total);
  }
  py::array_t<std::uint8_t> data(static_cast<py::ssize_t>(total));
  char* d = reinterpret_cast<char*>(data.mutable_data());
  for (std::size_t i = 0; i < n; ++i)
    if (c[i] >= 0) {
      const std::string_view v = t.name(static_cast<std::size_t>(c[i]));
      std::copy(v.begin(), v.end(), d + o[i]);
    }
  return py::make_tuple(offsets, data);
}

}  // namespace chrono_bind

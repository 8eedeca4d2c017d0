// A record batch built natively, exported through the Arrow C data interface as
// _core.record_batch exports one (register_arrow.cpp): for a binding that makes a result's
// columns itself (Store.search_one) instead of taking NumPy arrays from Python.
#pragma once
#include <pybind11/pybind11.h>
#include <cstdint>
#include <string>
#include <vector>

namespace py = pybind11;

namespace chrono_arrow {

// One column: its name and C data interface format ("i", "L", "g", "f", "b", "tsu:UTC",
// "u"); `values` the fixed-width values (one byte per row for "b"; int32 offsets, n + 1 of
// them, for "u"); `data` a string column's bytes; `valid` one byte per row (0: null), or
// empty when no row is null.
struct OwnedColumn {
  std::string name, format;
  std::vector<std::uint8_t> values, data, valid;
};

// The columns (each of n rows; moved from) as record_batch(columns, with_schema) returns
// them: the two capsules, or the array's capsule and its address.
py::tuple export_batch(std::vector<OwnedColumn>& columns, std::size_t n, bool with_schema);

}  // namespace chrono_arrow

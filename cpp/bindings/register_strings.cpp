// _core.StringColumns and take_strings: a store's string columns (Arrow buffers in parts,
// string_columns.hpp) viewed for reading by row.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <cstdint>
#include "common.hpp"
#include "register.hpp"
#include "string_columns.hpp"

using chrono_bind::StringColumns;

namespace {

// The strings of `rows` from string columns split in parts, viewed for this one call.
py::list take_strings(const py::sequence& columns, carray<std::int64_t> starts, carray<std::int64_t> rows) {
  return StringColumns(columns, starts, "take_strings").take(rows);
}

}  // namespace

void register_strings(py::module_& m) {
  py::class_<StringColumns>(m, "StringColumns")
      .def(py::init([](const py::sequence& columns, carray<std::int64_t> starts) {
        return StringColumns(columns, starts, "StringColumns");
      }), py::arg("columns"), py::arg("starts"))
      .def_property_readonly("rows", &StringColumns::rows)
      .def("take", &StringColumns::take, py::arg("rows"));
  m.def("take_strings", &take_strings, py::arg("columns"), py::arg("starts"), py::arg("rows"));
}

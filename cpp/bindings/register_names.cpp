// _core.Names: the stem names, an append-only table of UTF-8 names with dense int32 codes
// (chrono/names.hpp). The GIL stays held in every method: a table is read and extended
// under it only.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include "chrono/names.hpp"
#include "common.hpp"
#include "name_buffers.hpp"
#include "register.hpp"

using namespace chrono;

namespace {

std::string_view utf8(const py::handle& h, const char* what) {
  if (!PyUnicode_Check(h.ptr())) throw py::type_error(std::string(what) + " must be str");
  Py_ssize_t len = 0;
  const char* p = PyUnicode_AsUTF8AndSize(h.ptr(), &len);
  if (p == nullptr) throw py::error_already_set();
  return {p, static_cast<std::size_t>(len)};
}

py::str to_py(std::string_view s) { return py::str(s.data(), s.size()); }

// The names of `codes` as Arrow string buffers (name_buffers.hpp).
py::tuple take(const NameTable& t, carray<std::int32_t> codes) {
  return chrono_bind::name_buffers(t, codes.data(), static_cast<std::size_t>(codes.size()));
}

// take's (offsets, data) and the validity (false for code -1), None when every code names
// a stem: a result table's stem_id column in one call.
py::tuple take_valid(const NameTable& t, carray<std::int32_t> codes) {
  py::tuple od = take(t, codes);
  const std::int32_t* c = codes.data();
  const auto n = static_cast<std::size_t>(codes.size());
  const bool none = std::any_of(c, c + n, [](std::int32_t x) { return x < 0; });
  return py::make_tuple(od[0], od[1], validity(n, none, [&](std::size_t i) { return c[i] >= 0; }));
}

// The codes of `names`, adding the new ones in order; all or nothing.
py::array_t<std::int32_t> add_all(NameTable& t, const py::sequence& names) {
  const std::size_t n0 = t.size();
  py::array_t<std::int32_t> out(static_cast<py::ssize_t>(names.size()));
  try {
    for (std::size_t i = 0; i < names.size(); ++i) {
      const std::uint32_t c = t.add(utf8(names[i], "name"));
      if (c > 0x7fffffffu) throw std::length_error("more than 2^31 - 1 stems");
      out.mutable_data()[i] = static_cast<std::int32_t>(c);
    }
  } catch (...) {
    t.truncate(n0);
    throw;
  }
  return out;
}

py::str name_of(const NameTable& t, std::int64_t code) {
  if (code < 0 || static_cast<std::size_t>(code) >= t.size()) throw py::index_error("name code out of range");
  return to_py(t.name(static_cast<std::size_t>(code)));
}

py::list tolist(const NameTable& t) {
  py::list out(t.size());
  for (std::size_t i = 0; i < t.size(); ++i) out[i] = to_py(t.name(i));
  return out;
}

}  // namespace

void register_names(py::module_& m) {
  py::class_<NameTable>(m, "Names")
      .def(py::init<>())
      .def("__len__", &NameTable::size)
      .def("__getitem__", &name_of, py::arg("code"))
      .def("find", [](const NameTable& t, py::handle s) { return t.find(utf8(s, "name")); }, py::arg("name"))
      .def("add_all", &add_all, py::arg("names"))
      .def("take", &take, py::arg("codes"))
      .def("take_valid", &take_valid, py::arg("codes"))
      .def("truncate", &NameTable::truncate, py::arg("n"))
      .def("tolist", &tolist)
      .def("memory_bytes", &NameTable::memory_bytes);
}

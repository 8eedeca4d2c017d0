// Small helpers shared by the binding files: typed array access with clear errors.
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>
#include "chrono/decay.hpp"
#include "chrono/kernels.hpp"

namespace py = pybind11;

template <class T>
using carray = py::array_t<T, py::array::c_style | py::array::forcecast>;

template <class T>
const T* checked(const std::optional<carray<T>>& a, std::size_t n, const char* name) {
  if (!a) return nullptr;
  if (static_cast<std::size_t>(a->size()) != n)
    throw std::invalid_argument(std::string(name) + ": expected " + std::to_string(n) + " values, got " + std::to_string(a->size()));
  return a->data();
}

template <class T>
const T* checked(const carray<T>& a, std::size_t n, const char* name) {
  if (static_cast<std::size_t>(a.size()) != n)
    throw std::invalid_argument(std::string(name) + ": expected " + std::to_string(n) + " values, got " + std::to_string(a.size()));
  return a.data();
}

// An output array of n values: a fresh one when the caller passes None, else the caller's,
// which must be float32 (no conversion, which would write into a copy), C-contiguous,
// writable, 1-d and of n values.
template <class T>
py::array_t<T> output_array(const py::object& o, std::size_t n, const char* name) {
  if (o.is_none()) return py::array_t<T>(static_cast<py::ssize_t>(n));
  // checked before any conversion: a converted copy would take the results, not the caller's array
  if (!py::isinstance<py::array_t<T, py::array::c_style>>(o))
    throw std::invalid_argument(std::string(name) + ": expected a C-contiguous array of the output type");
  auto a = py::reinterpret_borrow<py::array_t<T>>(o);
  if (!a.writeable() || a.ndim() != 1 || static_cast<std::size_t>(a.size()) != n)
    throw std::invalid_argument(std::string(name) + ": expected a writable 1-d array of " + std::to_string(n) +
                                " values");
  return a;
}

// A compiled kernel variant by name ("" = the one chosen at run time), for tests.
inline const chrono::Kernels& variant(const std::string& name) {
  if (name.empty()) return chrono::kernels();
  const chrono::Kernels* v[4];
  int n = chrono::kernel_variants(v, 4);
  for (int i = 0; i < n; ++i) if (name == v[i]->name) return *v[i];
  throw std::invalid_argument("kernel variant '" + name + "' is not available on this CPU/build");
}

// An Arrow validity as NumPy bools, valid(i) per row, or None when no row is null
// (any_null false): the result tables' form of a nullable column.
template <class Valid>
py::object validity(std::size_t n, bool any_null, Valid&& valid) {
  if (!any_null) return py::none();
  py::array_t<bool> v(static_cast<py::ssize_t>(n));
  for (std::size_t i = 0; i < n; ++i) v.mutable_data()[i] = valid(i);
  return std::move(v);
}

inline std::vector<chrono::DecaySpec> specs_from(const carray<double>& table) {
  if (table.ndim() != 2 || table.shape(1) != 5) throw std::invalid_argument("decay table must have shape (types, 5)");
  std::vector<chrono::DecaySpec> out;
  const double* p = table.data();
  for (py::ssize_t i = 0; i < table.shape(0); ++i)
    out.push_back(chrono::make_spec(p[i * 5], p[i * 5 + 1], p[i * 5 + 2], p[i * 5 + 3], p[i * 5 + 4]));
  if (out.empty()) throw std::invalid_argument("decay table is empty");
  return out;
}


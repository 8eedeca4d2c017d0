// _core.Filter: a where= filter compiled by the Python layer (chrono_engine/search/filters.py)
// into postfix operations over the store's metadata columns (chrono/user_columns.hpp). Made
// once per distinct filter and held by a _core.SearchParams; every operation is checked here
// (ValueError naming it), so the planner trusts the program's shape.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>
#include "chrono/user_columns.hpp"
#include "common.hpp"
#include "register.hpp"

using namespace chrono;

namespace {

[[noreturn]] void refuse(std::size_t i, const std::string& what) {
  throw std::invalid_argument("Filter: operation " + std::to_string(i) + ": " + what);
}

template <class T>
void put(std::string& key, T v) { key.append(reinterpret_cast<const char*>(&v), sizeof(T)); }

UserKind kind_of(py::handle h, std::size_t i) {
  const int k = py::cast<int>(h);
  if (k < 0 || k >= kUserKinds) refuse(i, "unknown column kind " + std::to_string(k));
  return static_cast<UserKind>(k);
}

// ops: a sequence of tuples, in postfix order:
//   ("in", col, kind, values)       values: str for string / list<string>, int for
//                                    int64 / timestamp / bool (0, 1), float for float64
//   ("range", col, kind, lo, hi)    int64 / timestamp: lo <= v <= hi
//   ("frange", col, lo, lo_incl, hi, hi_incl)   float64
//   ("exists", col, kind)
//   ("and", n), ("or", n)           n >= 1 results before it
//   ("not",), ("const", bool)
std::shared_ptr<FilterProgram> make(const py::sequence& ops) {
  auto p = std::make_shared<FilterProgram>();
  std::size_t depth = 0;
  p->ops.reserve(ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    py::tuple t = py::cast<py::tuple>(ops[i]);
    if (t.size() == 0) refuse(i, "empty");
    const std::string name = py::cast<std::string>(t[0]);
    FilterOp op;
    auto need = [&](std::size_t n) { if (t.size() != n) refuse(i, "'" + name + "' takes " + std::to_string(n - 1) + " fields"); };
    auto col = [&](py::handle h) {
      const std::int64_t c = py::cast<std::int64_t>(h);
      if (c < 0 || c >= static_cast<std::int64_t>(UserColumns::kMaxColumns)) refuse(i, "column index out of range");
      return static_cast<std::uint32_t>(c);
    };
    if (name == "in") {
      need(4);
      op.code = FilterOp::In; op.col = col(t[1]); op.kind = kind_of(t[2], i);
      py::sequence vals = py::cast<py::sequence>(t[3]);
      switch (op.kind) {
        case UserKind::String: case UserKind::StringList:
          for (py::handle v : vals) op.strs.push_back(py::cast<std::string>(v));
          std::sort(op.strs.begin(), op.strs.end());
          op.strs.erase(std::unique(op.strs.begin(), op.strs.end()), op.strs.end());
          break;
        case UserKind::Float64:
          for (py::handle v : vals) {
            const double x = py::cast<double>(v);
            if (std::isnan(x)) refuse(i, "NaN in a set");
            op.dbls.push_back(x == 0.0 ? 0.0 : x);
          }
          std::sort(op.dbls.begin(), op.dbls.end());
          op.dbls.erase(std::unique(op.dbls.begin(), op.dbls.end()), op.dbls.end());
          break;
        default:
          for (py::handle v : vals) op.ints.push_back(py::cast<std::int64_t>(v));
          std::sort(op.ints.begin(), op.ints.end());
          op.ints.erase(std::unique(op.ints.begin(), op.ints.end()), op.ints.end());
          if (op.kind == UserKind::Bool)
            for (auto x : op.ints) if (x != 0 && x != 1) refuse(i, "a bool column's values are 0 and 1");
      }
      ++depth;
    } else if (name == "range") {
      need(5);
      op.code = FilterOp::Range; op.col = col(t[1]); op.kind = kind_of(t[2], i);
      if (op.kind != UserKind::Int64 && op.kind != UserKind::Timestamp) refuse(i, "'range' is for int64 and timestamp columns");
      op.lo = py::cast<std::int64_t>(t[3]); op.hi = py::cast<std::int64_t>(t[4]);
      ++depth;
    } else if (name == "frange") {
      need(6);
      op.code = FilterOp::FRange; op.col = col(t[1]); op.kind = UserKind::Float64;
      op.flo = py::cast<double>(t[2]); op.flo_incl = py::cast<bool>(t[3]);
      op.fhi = py::cast<double>(t[4]); op.fhi_incl = py::cast<bool>(t[5]);
      if (std::isnan(op.flo) || std::isnan(op.fhi)) refuse(i, "NaN bound");
      ++depth;
    } else if (name == "exists") {
      need(3);
      op.code = FilterOp::Exists; op.col = col(t[1]); op.kind = kind_of(t[2], i);
      ++depth;
    } else if (name == "and" || name == "or") {
      need(2);
      op.code = name == "and" ? FilterOp::And : FilterOp::Or;
      const std::int64_t n = py::cast<std::int64_t>(t[1]);
      if (n < 1 || static_cast<std::size_t>(n) > depth) refuse(i, "'" + name + "' of " + std::to_string(n) + " with " + std::to_string(depth) + " results before it");
      op.n = static_cast<std::uint32_t>(n);
      depth -= op.n - 1;
    } else if (name == "not") {
      need(1);
      if (depth == 0) refuse(i, "'not' of nothing");
      op.code = FilterOp::Not;
    } else if (name == "const") {
      need(2);
      op.code = FilterOp::Const; op.n = py::cast<bool>(t[1]) ? 1 : 0;
      ++depth;
    } else {
      refuse(i, "unknown operation '" + name + "'");
    }
    p->depth = std::max(p->depth, depth);
    // the canonical key
    put(p->key, static_cast<std::uint8_t>(op.code)); put(p->key, op.col); put(p->key, op.n);
    put(p->key, static_cast<std::uint8_t>(op.kind));
    put(p->key, op.lo); put(p->key, op.hi); put(p->key, op.flo); put(p->key, op.fhi);
    put(p->key, static_cast<std::uint8_t>(op.flo_incl * 2 + op.fhi_incl));
    put(p->key, static_cast<std::uint64_t>(op.strs.size()));
    for (const auto& s : op.strs) { put(p->key, static_cast<std::uint64_t>(s.size())); p->key += s; }
    put(p->key, static_cast<std::uint64_t>(op.ints.size()));
    for (auto x : op.ints) put(p->key, x);
    put(p->key, static_cast<std::uint64_t>(op.dbls.size()));
    for (auto x : op.dbls) put(p->key, x);
    p->ops.push_back(std::move(op));
  }
  if (depth != 1) throw std::invalid_argument("Filter: the operations leave " + std::to_string(depth) + " results, not 1");
  return p;
}

}  // namespace

void register_filter(py::module_& m) {
  py::class_<FilterProgram, std::shared_ptr<FilterProgram>>(m, "Filter")
      .def(py::init(&make), py::arg("ops"))
      .def_property_readonly("key", [](const FilterProgram& p) { return py::bytes(p.key); })
      .def("__len__", [](const FilterProgram& p) { return p.ops.size(); })
      .def("__eq__", [](const FilterProgram& a, const FilterProgram& b) { return a.key == b.key; }, py::arg("other"),
           py::is_operator())
      .def("__hash__", [](const FilterProgram& p) { return std::hash<std::string>{}(p.key); })
      .def("__repr__", [](const FilterProgram& p) { return "Filter(<" + std::to_string(p.ops.size()) + " operations>)"; });
}

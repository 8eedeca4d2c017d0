// Store's user metadata columns (chrono/user_columns.hpp): adding a column, the metadata
// of rows about to be ingested, reading rows back as Arrow buffers, and the where= filter's
// rows. Appends take the store's lock exclusively with the GIL released.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include "chrono/user_columns.hpp"
#include "common.hpp"
#include "name_buffers.hpp"
#include "store_binding.hpp"

using namespace chrono;
using chrono_bind::PyStore;
using chrono_bind::StoreClass;

namespace {

using opt_i32 = std::optional<carray<std::int32_t>>;
using opt_i64 = std::optional<carray<std::int64_t>>;
using opt_u8 = std::optional<carray<std::uint8_t>>;
using opt_f64 = std::optional<carray<double>>;

// One column's input, with the arrays it borrows kept alive.
struct Part {
  opt_i32 idx, dict_offsets;
  opt_u8 dict_data, b, valid;
  opt_i64 list_offsets, i64;
  opt_f64 f64;
  UserAppend a;
};

// parts: (col, idx, dict_offsets, dict_data, list_offsets, i64, f64, b, valid) per column,
// None where a kind has no such array (user_columns.hpp UserAppend).
std::vector<Part> parts_of(const py::list& parts, std::size_t n) {
  std::vector<Part> out(parts.size());
  for (std::size_t k = 0; k < parts.size(); ++k) {
    py::tuple t = py::cast<py::tuple>(parts[k]);
    if (t.size() != 9) throw std::invalid_argument("append_user: a part has 9 fields");
    Part& p = out[k];
    const std::int64_t col = py::cast<std::int64_t>(t[0]);
    if (col < 0) throw std::invalid_argument("append_user: negative column index");
    p.a.col = static_cast<std::size_t>(col);
    p.idx = py::cast<opt_i32>(t[1]);
    p.dict_offsets = py::cast<opt_i32>(t[2]);
    p.dict_data = py::cast<opt_u8>(t[3]);
    p.list_offsets = py::cast<opt_i64>(t[4]);
    p.i64 = py::cast<opt_i64>(t[5]);
    p.f64 = py::cast<opt_f64>(t[6]);
    p.b = py::cast<opt_u8>(t[7]);
    p.valid = py::cast<opt_u8>(t[8]);
    if (p.idx) { p.a.idx = p.idx->data(); p.a.n_idx = static_cast<std::size_t>(p.idx->size()); }
    if (p.dict_offsets) {
      const std::int32_t* o = p.dict_offsets->data();
      const auto m = static_cast<std::size_t>(p.dict_offsets->size());
      if (m == 0 || !p.dict_data) throw std::invalid_argument("append_user: dictionary offsets without data");
      const auto bytes = static_cast<std::size_t>(p.dict_data->size());
      const char* d = reinterpret_cast<const char*>(p.dict_data->data());
      for (std::size_t i = 0; i + 1 < m; ++i) {
        if (o[i] < 0 || o[i + 1] < o[i] || static_cast<std::size_t>(o[i + 1]) > bytes)
          throw std::invalid_argument("append_user: dictionary offsets out of range");
        p.a.dict_values.emplace_back(d + o[i], static_cast<std::size_t>(o[i + 1] - o[i]));
      }
    }
    if (p.list_offsets) p.a.list_offsets = checked(*p.list_offsets, n + 1, "append_user list offsets");
    if (p.i64) p.a.i64 = checked(*p.i64, n, "append_user values");
    if (p.f64) p.a.f64 = checked(*p.f64, n, "append_user values");
    if (p.b) p.a.b = checked(*p.b, n, "append_user values");
    if (p.valid) p.a.valid = checked(*p.valid, n, "append_user validity");
  }
  return out;
}

void append_user(PyStore& s, std::int64_t first, std::int64_t n, const py::list& parts) {
  if (first < 0 || n < 0) throw std::invalid_argument("append_user: negative row count");
  std::vector<Part> ps = parts_of(parts, static_cast<std::size_t>(n));
  std::vector<UserAppend> as;
  for (auto& p : ps) as.push_back(p.a);
  py::gil_scoped_release nogil;
  s.s->append_user(static_cast<std::size_t>(first), static_cast<std::size_t>(n), as);
}

std::vector<std::uint32_t> rows_in(const carray<std::int64_t>& rows, std::size_t n) {
  std::vector<std::uint32_t> out(static_cast<std::size_t>(rows.size()));
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::int64_t r = rows.data()[i];
    if (r < 0 || static_cast<std::size_t>(r) >= n) throw py::index_error("row " + std::to_string(r) + " out of range");
    out[i] = static_cast<std::uint32_t>(r);
  }
  return out;
}

py::tuple strings_of(const NameTable& dict, const std::vector<std::int32_t>& codes) {
  return chrono_bind::name_buffers(dict, codes.data(), codes.size());
}

// Column `col` of `rows` (int64, in range): (kind, values, validity or None) where values
// is, per kind: string (offsets, data); list<string> (list offsets int32, offsets, data);
// int64 / timestamp int64; float64 float64; bool bool.
py::tuple user_take(const PyStore& s, std::int64_t col, const carray<std::int64_t>& rows) {
  std::shared_lock<std::shared_mutex> g(s.s->mutex());
  const UserColumns& u = s.s->user();
  if (col < 0 || static_cast<std::size_t>(col) >= u.size()) throw py::index_error("metadata column out of range");
  const UserColumn& c = u.column(static_cast<std::size_t>(col));
  const std::vector<std::uint32_t> r = rows_in(rows, s.s->meta().size());
  const std::size_t n = r.size();
  bool any_null = false;
  for (std::uint32_t x : r) any_null |= !c.is_valid(x);
  py::object valid = validity(n, any_null, [&](std::size_t i) { return c.is_valid(r[i]); });
  py::object values;
  switch (c.kind) {
    case UserKind::String: {
      std::vector<std::int32_t> codes(n);
      for (std::size_t i = 0; i < n; ++i) codes[i] = c.codes[r[i]];
      values = strings_of(c.dict, codes);
      break;
    }
    case UserKind::StringList: {
      py::array_t<std::int32_t> lo(static_cast<py::ssize_t>(n + 1));
      std::vector<std::int32_t> codes;
      lo.mutable_data()[0] = 0;
      for (std::size_t i = 0; i < n; ++i) {
        for (std::uint32_t e = c.offsets[r[i]]; e < c.offsets[r[i] + 1]; ++e) codes.push_back(c.codes[e]);
        if (codes.size() > 0x7fffffffu) throw std::length_error("too many list elements");
        lo.mutable_data()[i + 1] = static_cast<std::int32_t>(codes.size());
      }
      py::tuple sd = strings_of(c.dict, codes);
      values = py::make_tuple(lo, sd[0], sd[1]);
      break;
    }
    case UserKind::Int64: case UserKind::Timestamp: {
      py::array_t<std::int64_t> v(static_cast<py::ssize_t>(n));
      for (std::size_t i = 0; i < n; ++i) v.mutable_data()[i] = c.i64[r[i]];
      values = v;
      break;
    }
    case UserKind::Float64: {
      py::array_t<double> v(static_cast<py::ssize_t>(n));
      for (std::size_t i = 0; i < n; ++i) v.mutable_data()[i] = c.f64[r[i]];
      values = v;
      break;
    }
    case UserKind::Bool: {
      py::array_t<bool> v(static_cast<py::ssize_t>(n));
      for (std::size_t i = 0; i < n; ++i) v.mutable_data()[i] = c.b[r[i]] == 1;
      values = v;
      break;
    }
  }
  return py::make_tuple(static_cast<int>(c.kind), values, valid);
}

py::list user_columns(const PyStore& s) {
  std::shared_lock<std::shared_mutex> g(s.s->mutex());
  py::list out;
  const UserColumns& u = s.s->user();
  for (std::size_t c = 0; c < u.size(); ++c) out.append(py::make_tuple(u.column(c).name, static_cast<int>(u.column(c).kind)));
  return out;
}

// The rows (ascending, uint32) that pass `filter` now, and the count.
py::array_t<std::uint32_t> filter_rows(const PyStore& s, const FilterProgram& filter) {
  std::shared_ptr<const RowSet> rs;
  {
    py::gil_scoped_release nogil;
    std::shared_lock<std::shared_mutex> g(s.s->mutex());
    rs = s.s->filter_rows(filter);
  }
  py::array_t<std::uint32_t> out(static_cast<py::ssize_t>(rs->count));
  std::size_t j = 0;
  rs->for_each([&](std::uint32_t r) { out.mutable_data()[j++] = r; });
  return out;
}

std::size_t filter_count(const PyStore& s, const FilterProgram& filter) {
  py::gil_scoped_release nogil;
  std::shared_lock<std::shared_mutex> g(s.s->mutex());
  return s.s->filter_rows(filter)->count;
}

}  // namespace

void register_store_user(StoreClass& cls) {
  cls.def("add_user_column", [](PyStore& s, const std::string& name, int kind) {
        if (kind < 0 || kind >= kUserKinds) throw std::invalid_argument("unknown metadata kind " + std::to_string(kind));
        return s.s->add_user_column(name, static_cast<UserKind>(kind));
      }, py::arg("name"), py::arg("kind"))
      .def("drop_user_columns_from", [](PyStore& s, std::size_t n) { s.s->drop_user_columns_from(n); }, py::arg("n"))
      .def("append_user", &append_user, py::arg("first"), py::arg("n"), py::arg("parts"))
      .def("truncate_user", [](PyStore& s) { s.s->truncate_user(); })
      .def("user_columns", &user_columns)
      .def("user_take", &user_take, py::arg("col"), py::arg("rows"))
      .def("user_bytes", [](const PyStore& s) { return s.s->user_bytes(); })
      .def("filter_rows", &filter_rows, py::arg("filter"))
      .def("filter_count", &filter_count, py::arg("filter"))
      .def("filter_cache_bytes", [](const PyStore& s) { return s.s->filter_cache_bytes(); });
}

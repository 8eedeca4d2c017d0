// chrono_engine._core.record_batch: a small Arrow record batch from NumPy columns, exported
// through the Arrow C data interface as the two PyCapsules of the Arrow PyCapsule
// interface ("arrow_schema", "arrow_array"; pyarrow imports them in one call), or the
// array alone with its address (schema=False: search.result_table imports it against a
// schema it kept, so pyarrow parses no schema per call). A lone
// search's result table costs ~15 pyarrow calls otherwise, each a few µs and several times
// that with the caches cold after the core's scan (chrono_engine/search.py, to_table).
// The builder copies what it is given (the result tables it is for are small) and knows
// nothing of the engine: columns are (name, format, values, valid) with the C data
// interface's format strings for the types the result tables use.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>
#include "arrow_export.hpp"
#include "register.hpp"

namespace py = pybind11;

#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE
#define ARROW_FLAG_NULLABLE 2
struct ArrowSchema {
  const char* format;
  const char* name;
  const char* metadata;
  int64_t flags;
  int64_t n_children;
  struct ArrowSchema** children;
  struct ArrowSchema* dictionary;
  void (*release)(struct ArrowSchema*);
  void* private_data;
};
struct ArrowArray {
  int64_t length;
  int64_t null_count;
  int64_t offset;
  int64_t n_buffers;
  int64_t n_children;
  const void** buffers;
  struct ArrowArray** children;
  struct ArrowArray* dictionary;
  void (*release)(struct ArrowArray*);
  void* private_data;
};
#endif

namespace {

// Every exported struct owns its private data; releasing it deletes that data (whose
// destructor releases the children it still holds) and marks the struct released.
template <class Struct, class Data>
void release_private(Struct* s) {
  if (s == nullptr || s->release == nullptr) return;
  delete static_cast<Data*>(s->private_data);
  s->release = nullptr;
}

// Releases the children the consumer has not moved out (a moved child has release == nullptr).
template <class Struct>
void release_children(std::vector<Struct>& children) {
  for (Struct& c : children)
    if (c.release != nullptr) c.release(&c);
}

// ---------------------------------------------------------------- schema
struct SchemaData {
  std::string format, name;
  std::vector<ArrowSchema> children;
  std::vector<ArrowSchema*> child_ptrs;
  ~SchemaData() { release_children(children); }
};

void init_schema(ArrowSchema* s, SchemaData* d, int64_t flags) {
  s->format = d->format.c_str();
  s->name = d->name.c_str();
  s->metadata = nullptr;
  s->flags = flags;
  s->n_children = static_cast<int64_t>(d->children.size());
  s->children = d->child_ptrs.empty() ? nullptr : d->child_ptrs.data();
  s->dictionary = nullptr;
  s->release = &release_private<ArrowSchema, SchemaData>;
  s->private_data = d;
}

// ---------------------------------------------------------------- arrays
alignas(64) const std::uint8_t kEmpty[64] = {0};

struct ColumnData {
  std::vector<std::uint8_t> validity, values, data;  // data: a string column's bytes
  const void* buffers[3] = {nullptr, nullptr, nullptr};
};

struct BatchData {
  std::vector<ArrowArray> children;
  std::vector<ArrowArray*> child_ptrs;
  const void* buffers[1] = {nullptr};
  ~BatchData() { release_children(children); }
};

const void* buf(const std::vector<std::uint8_t>& v) { return v.empty() ? kEmpty : v.data(); }

// The values of a 1-d C-contiguous array of dtype T and n elements, as bytes.
template <class T>
std::vector<std::uint8_t> raw(const py::handle& h, std::size_t n, const std::string& name,
                              const char* who = "record_batch") {
  if (!py::isinstance<py::array_t<T, py::array::c_style>>(h))
    throw std::invalid_argument(std::string(who) + ": column '" + name + "' must be a C-contiguous array of " +
                                std::string(py::str(py::dtype::of<T>())));
  auto a = py::reinterpret_borrow<py::array_t<T, py::array::c_style>>(h);
  if (a.ndim() != 1 || static_cast<std::size_t>(a.size()) != n)
    throw std::invalid_argument(std::string(who) + ": column '" + name + "' must hold " + std::to_string(n) + " values");
  std::vector<std::uint8_t> out(n * sizeof(T));
  if (n) std::memcpy(out.data(), a.data(), n * sizeof(T));
  return out;
}

// Bit-packs a bool array (LSB first); returns how many are false.
std::size_t pack_bits(const std::vector<std::uint8_t>& b, std::vector<std::uint8_t>& out) {
  const std::size_t n = b.size();
  out.assign((n + 7) / 8, 0);
  std::size_t zeros = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (b[i]) out[i >> 3] |= static_cast<std::uint8_t>(1u << (i & 7));
    else ++zeros;
  }
  return zeros;
}

std::unique_ptr<ColumnData> column(const std::string& name, const std::string& fmt, const py::handle& values,
                                   const py::handle& valid, std::size_t n, std::int64_t& null_count,
                                   std::int64_t& n_buffers, const char* who = "record_batch") {
  auto c = std::make_unique<ColumnData>();
  null_count = 0;
  if (!valid.is_none()) {
    std::vector<std::uint8_t> v = raw<bool>(valid, n, name + " (validity)", who);
    const std::size_t zeros = pack_bits(v, c->validity);
    if (zeros == 0) c->validity.clear();
    null_count = static_cast<std::int64_t>(zeros);
  }
  n_buffers = 2;
  if (fmt == "i") c->values = raw<std::int32_t>(values, n, name, who);
  else if (fmt == "l" || fmt.rfind("tsu:", 0) == 0) c->values = raw<std::int64_t>(values, n, name, who);
  else if (fmt == "L") c->values = raw<std::uint64_t>(values, n, name, who);
  else if (fmt == "g") c->values = raw<double>(values, n, name, who);
  else if (fmt == "f") c->values = raw<float>(values, n, name, who);
  else if (fmt == "b") pack_bits(raw<bool>(values, n, name, who), c->values);
  else if (fmt == "u" && py::isinstance<py::list>(values)) {  // Python strings (None: an empty slot)
    const py::list l = py::reinterpret_borrow<py::list>(values);
    if (static_cast<std::size_t>(l.size()) != n)
      throw std::invalid_argument(std::string(who) + ": column '" + name + "' must hold " + std::to_string(n) + " values");
    std::vector<std::int32_t> o(n + 1, 0);
    for (std::size_t i = 0; i < n; ++i) {
      PyObject* v = l[i].ptr();
      if (v != Py_None) {
        if (!PyUnicode_Check(v)) throw std::invalid_argument(std::string(who) + ": column '" + name + "' holds a non-string");
        Py_ssize_t len = 0;
        const char* p = PyUnicode_AsUTF8AndSize(v, &len);
        if (p == nullptr) throw py::error_already_set();
        if (c->data.size() + static_cast<std::size_t>(len) > 0x7fffffffu)
          throw std::length_error(std::string(who) + ": column '" + name + "' exceeds 2 GiB");
        c->data.insert(c->data.end(), p, p + len);
      }
      o[i + 1] = static_cast<std::int32_t>(c->data.size());
    }
    c->values.resize((n + 1) * sizeof(std::int32_t));
    std::memcpy(c->values.data(), o.data(), c->values.size());
    n_buffers = 3;
  } else if (fmt == "u") {  // (int32 offsets, uint8 data)
    const py::tuple pair = py::reinterpret_borrow<py::tuple>(values);
    if (!py::isinstance<py::tuple>(values) || pair.size() != 2)
      throw std::invalid_argument(std::string(who) + ": string column '" + name + "' takes (offsets, data)");
    c->values = raw<std::int32_t>(pair[0], n + 1, name + " (offsets)", who);
    const auto* o = reinterpret_cast<const std::int32_t*>(c->values.data());
    auto d = py::reinterpret_borrow<py::array_t<std::uint8_t, py::array::c_style>>(pair[1]);
    if (!py::isinstance<py::array_t<std::uint8_t, py::array::c_style>>(pair[1]) || d.ndim() != 1)
      throw std::invalid_argument(std::string(who) + ": string column '" + name + "' data must be 1-d uint8");
    const auto bytes = static_cast<std::size_t>(d.size());
    if (o[0] != 0) throw std::invalid_argument(std::string(who) + ": string column '" + name + "' offsets must start at 0");
    for (std::size_t i = 0; i < n; ++i)
      if (o[i + 1] < o[i] || static_cast<std::size_t>(o[i + 1]) > bytes)
        throw std::invalid_argument(std::string(who) + ": string column '" + name + "' has offsets out of order or range");
    c->data.assign(d.data(), d.data() + o[n]);
    n_buffers = 3;
  } else {
    throw std::invalid_argument(std::string(who) + ": column '" + name + "' has an unsupported format '" + fmt + "'");
  }
  c->buffers[0] = c->validity.empty() ? nullptr : c->validity.data();
  c->buffers[1] = buf(c->values);
  c->buffers[2] = buf(c->data);
  return c;
}

// One column as the callers give it: (name, format, values, valid or None).
struct ColumnSpec {
  py::tuple t;
  std::string name, fmt;
};

ColumnSpec column_spec(const py::handle& h, const char* who) {
  if (!py::isinstance<py::tuple>(h) || py::len(h) != 4)
    throw std::invalid_argument(std::string(who) + ": each column is (name, format, values, valid)");
  const py::tuple t = py::reinterpret_borrow<py::tuple>(h);
  return ColumnSpec{t, t[0].cast<std::string>(), t[1].cast<std::string>()};
}

// An exported struct and what it owns, freed (released first unless its consumer did).
template <class Struct>
void drop(Struct* s) {
  if (s->release != nullptr) s->release(s);
  delete s;
}

// A capsule's destructor: drops the struct it still holds.
template <class Struct>
void drop_capsule(PyObject* cap) {
  auto* s = static_cast<Struct*>(PyCapsule_GetPointer(cap, PyCapsule_GetName(cap)));
  if (s == nullptr) { PyErr_Clear(); return; }
  drop(s);
}

// The schema and batch of nc children, every child released by its parent until built.
void start_batch(std::unique_ptr<SchemaData>& sd, std::unique_ptr<BatchData>& bd, std::size_t nc) {
  sd = std::make_unique<SchemaData>();
  bd = std::make_unique<BatchData>();
  sd->format = "+s";
  sd->children.resize(nc);
  bd->children.resize(nc);
  for (std::size_t i = 0; i < nc; ++i) {
    sd->children[i].release = nullptr;
    bd->children[i].release = nullptr;
  }
}

// Child i of the batch: column c of n rows (and its schema with_schema).
void set_child(SchemaData& sd, BatchData& bd, std::size_t i, std::unique_ptr<ColumnData> c, const std::string& name,
               const std::string& fmt, std::size_t n, std::int64_t nulls, std::int64_t n_buffers, bool with_schema) {
  if (with_schema) {
    auto* cs = new SchemaData;
    cs->format = fmt;
    cs->name = name;
    init_schema(&sd.children[i], cs, ARROW_FLAG_NULLABLE);
  }
  ArrowArray& a = bd.children[i];
  a.length = static_cast<std::int64_t>(n);
  a.null_count = nulls;
  a.offset = 0;
  a.n_buffers = n_buffers;
  a.n_children = 0;
  a.buffers = c->buffers;
  a.children = nullptr;
  a.dictionary = nullptr;
  a.private_data = c.release();
  a.release = &release_private<ArrowArray, ColumnData>;
}

py::tuple finish_batch(std::unique_ptr<SchemaData> sd, std::unique_ptr<BatchData> bd, std::size_t n, bool with_schema);

// columns: a sequence of (name, format, values, valid or None), all of one length.
py::tuple record_batch(const py::sequence& columns, bool with_schema) {
  const std::size_t nc = static_cast<std::size_t>(columns.size());
  std::unique_ptr<SchemaData> sd;
  std::unique_ptr<BatchData> bd;
  start_batch(sd, bd, nc);
  std::size_t n = 0;
  for (std::size_t i = 0; i < nc; ++i) {
    const ColumnSpec spec = column_spec(columns[i], "record_batch");
    const py::tuple& col = spec.t;
    const std::string &name = spec.name, &fmt = spec.fmt;
    if (i == 0) {  // the row count, from the first column: (offsets, data) holds n + 1 offsets
      if (fmt == "u" && py::isinstance<py::tuple>(col[2]) && py::len(col[2]) == 2) {
        const std::size_t offsets = static_cast<std::size_t>(py::len(col[2][py::int_(0)]));
        if (offsets == 0) throw std::invalid_argument("record_batch: string column '" + name + "' has no offsets");
        n = offsets - 1;
      } else {
        n = static_cast<std::size_t>(py::len(col[2]));
      }
    }
    std::int64_t nulls = 0, n_buffers = 0;
    std::unique_ptr<ColumnData> c = column(name, fmt, col[2], col[3], n, nulls, n_buffers);
    set_child(*sd, *bd, i, std::move(c), name, fmt, n, nulls, n_buffers, with_schema);
  }
  return finish_batch(std::move(sd), std::move(bd), n, with_schema);
}

py::tuple finish_batch(std::unique_ptr<SchemaData> sd, std::unique_ptr<BatchData> bd, std::size_t n, bool with_schema) {
  const std::size_t nc = bd->children.size();
  for (std::size_t i = 0; i < nc; ++i) {
    sd->child_ptrs.push_back(&sd->children[i]);
    bd->child_ptrs.push_back(&bd->children[i]);
  }
  auto* array = new ArrowArray;
  array->length = static_cast<std::int64_t>(n);
  array->null_count = 0;
  array->offset = 0;
  array->n_buffers = 1;
  array->n_children = static_cast<std::int64_t>(nc);
  BatchData* b = bd.release();
  array->buffers = b->buffers;
  array->children = b->child_ptrs.empty() ? nullptr : b->child_ptrs.data();
  array->dictionary = nullptr;
  array->release = &release_private<ArrowArray, BatchData>;
  array->private_data = b;
  if (!with_schema) {  // the array alone, and its address for pyarrow's _import_from_c
    PyObject* a = PyCapsule_New(array, "arrow_array", &drop_capsule<ArrowArray>);
    if (a == nullptr) {
      drop(array);
      throw py::error_already_set();
    }
    return py::make_tuple(py::reinterpret_steal<py::object>(a), reinterpret_cast<std::uintptr_t>(array));
  }
  auto* schema = new ArrowSchema;
  init_schema(schema, sd.release(), 0);
  PyObject* s = PyCapsule_New(schema, "arrow_schema", &drop_capsule<ArrowSchema>);
  if (s == nullptr) {
    drop(schema);
    drop(array);
    throw py::error_already_set();
  }
  py::object so = py::reinterpret_steal<py::object>(s);  // owns the schema from here
  PyObject* a = PyCapsule_New(array, "arrow_array", &drop_capsule<ArrowArray>);
  if (a == nullptr) {
    drop(array);
    throw py::error_already_set();
  }
  return py::make_tuple(so, py::reinterpret_steal<py::object>(a));
}

// ---------------------------------------------------------------- JSON
// chrono_engine._core.json_rows: the same columns written as JSON objects, the rows of each
// range [starts[i], starts[i + 1]) as one body {"<key>": [{column: value, ...}, ...]}. A
// service answering a coalesced group in JSON otherwise makes a Python list per column, a
// dict per row and one orjson call per body (~0.1 ms a call in place). Values as the
// service's Python path writes them: numbers as orjson writes Python ints and floats (the
// shortest text that reads back as the same double; float32 widened to double first,
// non-finite ones null), UTC timestamps as datetime.isoformat() ("2024-03-01T00:00:00+00:00",
// microseconds only when not zero), nulls where a validity bit is clear. String bytes that
// are not UTF-8 (a damaged store) become U+FFFD, so every body is valid JSON.

// Whether byte c may be copied into a JSON string as it is (printable ASCII but " and \).
inline bool plain(std::uint8_t c) { return c >= 0x20 && c < 0x80 && c != '"' && c != '\\'; }

void put_escaped(std::string& o, const std::uint8_t* p, std::size_t len) {
  static const char* hex = "0123456789abcdef";
  o.push_back('"');
  std::size_t i = 0;
  while (i < len) {
    std::size_t j = i;
    while (j < len && plain(p[j])) ++j;  // a run copied at once
    if (j > i) { o.append(reinterpret_cast<const char*>(p + i), j - i); i = j; if (i == len) break; }
    const std::uint8_t c = p[i];
    if (c < 0x80) {
      switch (c) {
        case '"': o += "\\\""; break;
        case '\\': o += "\\\\"; break;
        case '\n': o += "\\n"; break;
        case '\r': o += "\\r"; break;
        case '\t': o += "\\t"; break;
        case '\b': o += "\\b"; break;
        case '\f': o += "\\f"; break;
        default: { const char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]}; o.append(u, 6); }
      }
      ++i;
      continue;
    }
    // a multi-byte sequence: its length, and the range of its second byte (no overlong
    // forms, no surrogates, nothing past U+10FFFF)
    std::size_t n = 0;
    std::uint8_t lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) n = 2;
    else if (c >= 0xE0 && c <= 0xEF) { n = 3; if (c == 0xE0) lo = 0xA0; else if (c == 0xED) hi = 0x9F; }
    else if (c >= 0xF0 && c <= 0xF4) { n = 4; if (c == 0xF0) lo = 0x90; else if (c == 0xF4) hi = 0x8F; }
    bool ok = n != 0 && i + n <= len && p[i + 1] >= lo && p[i + 1] <= hi;
    for (std::size_t k = 2; ok && k < n; ++k) ok = p[i + k] >= 0x80 && p[i + k] <= 0xBF;
    if (ok) { o.append(reinterpret_cast<const char*>(p + i), n); i += n; }
    else { o += "\xEF\xBF\xBD"; ++i; }  // U+FFFD for the byte that starts no valid sequence
  }
  o.push_back('"');
}

void put_double(std::string& o, double v) {
  if (!std::isfinite(v)) { o += "null"; return; }
  char b[32];
  const auto r = std::to_chars(b, b + sizeof b, v);
  o.append(b, r.ptr);
  if (std::find_if(b, r.ptr, [](char ch) { return ch == '.' || ch == 'e'; }) == r.ptr) o += ".0";
}

template <class T>
void put_int(std::string& o, T v) {
  char b[24];
  const auto r = std::to_chars(b, b + sizeof b, v);
  o.append(b, r.ptr);
}

// Two decimal digits of v (0..99) at p.
inline void two(char* p, std::int64_t v) { p[0] = static_cast<char>('0' + v / 10); p[1] = static_cast<char>('0' + v % 10); }

// UTC microseconds as datetime.isoformat() writes them (civil date from days: H. Hinnant);
// years outside 1..9999 (no stored time is) as NumPy would not matter: written with their sign.
void put_iso(std::string& o, std::int64_t us) {
  std::int64_t days = us / 86400000000LL, rem = us % 86400000000LL;
  if (rem < 0) { rem += 86400000000LL; --days; }
  const std::int64_t z = days + 719468, era = (z >= 0 ? z : z - 146096) / 146097;
  const std::int64_t doe = z - era * 146097, yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
  const std::int64_t d = doy - (153 * mp + 2) / 5 + 1, m = mp < 10 ? mp + 3 : mp - 9;
  const std::int64_t y = yoe + era * 400 + (m <= 2);
  const std::int64_t sec = rem / 1000000, frac = rem % 1000000;
  o.push_back('"');
  if (y >= 0 && y <= 9999) {
    char b[4];
    two(b, y / 100);
    two(b + 2, y % 100);
    o.append(b, 4);
  } else {
    put_int(o, y);
  }
  char b[33] = {'-', 0, 0, '-', 0, 0, 'T', 0, 0, ':', 0, 0, ':', 0, 0, '.'};
  two(b + 1, m);
  two(b + 4, d);
  two(b + 7, sec / 3600);
  two(b + 10, sec / 60 % 60);
  two(b + 13, sec % 60);
  std::size_t len = 15;
  if (frac) {
    two(b + 16, frac / 10000);
    two(b + 18, frac / 100 % 100);
    two(b + 20, frac % 100);
    len = 22;
  }
  o.append(b, len);
  o += "+00:00\"";
}

struct JsonColumn {
  std::string key;  // "name": escaped, with its colon
  char kind;        // i l L g f b t u
  std::unique_ptr<ColumnData> c;
};

void put_value(std::string& o, const JsonColumn& col, std::size_t r) {
  const ColumnData& c = *col.c;
  if (!c.validity.empty() && !(c.validity[r >> 3] & (1u << (r & 7)))) { o += "null"; return; }
  const std::uint8_t* v = c.values.data();
  switch (col.kind) {
    case 'i': { std::int32_t x; std::memcpy(&x, v + r * 4, 4); put_int(o, x); break; }
    case 'l': { std::int64_t x; std::memcpy(&x, v + r * 8, 8); put_int(o, x); break; }
    case 'L': { std::uint64_t x; std::memcpy(&x, v + r * 8, 8); put_int(o, x); break; }
    case 'g': { double x; std::memcpy(&x, v + r * 8, 8); put_double(o, x); break; }
    case 'f': { float x; std::memcpy(&x, v + r * 4, 4); put_double(o, static_cast<double>(x)); break; }
    case 'b': o += (v[r >> 3] & (1u << (r & 7))) ? "true" : "false"; break;
    case 't': { std::int64_t x; std::memcpy(&x, v + r * 8, 8); put_iso(o, x); break; }
    default: {
      std::int32_t a, b;
      std::memcpy(&a, v + r * 4, 4);
      std::memcpy(&b, v + r * 4 + 4, 4);
      put_escaped(o, c.data.data() + a, static_cast<std::size_t>(b - a));
    }
  }
}

// columns: (name, format, values, valid) as record_batch takes them (timestamps UTC only);
// starts: int64, ascending, from 0 to the row count. Returns one bytes object per range.
py::list json_rows(const py::sequence& columns, py::array_t<std::int64_t, py::array::c_style> starts,
                   const std::string& key) {
  if (starts.ndim() != 1 || starts.size() < 1) throw std::invalid_argument("json_rows: starts must be 1-d and not empty");
  const std::int64_t* st = starts.data();
  const std::size_t n_out = static_cast<std::size_t>(starts.size()) - 1;
  if (st[0] != 0) throw std::invalid_argument("json_rows: starts must begin at 0");
  for (std::size_t i = 0; i < n_out; ++i)
    if (st[i + 1] < st[i]) throw std::invalid_argument("json_rows: starts must be ascending");
  const std::size_t n = static_cast<std::size_t>(st[n_out]);
  std::vector<JsonColumn> cols;
  for (const py::handle& h : columns) {
    const ColumnSpec spec = column_spec(h, "json_rows");
    const py::tuple& col = spec.t;
    const std::string &name = spec.name, &fmt = spec.fmt;
    char kind = fmt.size() == 1 ? fmt[0] : 0;
    if (fmt.rfind("tsu:", 0) == 0) {
      if (fmt != "tsu:UTC" && fmt != "tsu:+00:00")
        throw std::invalid_argument("json_rows: column '" + name + "' must hold UTC timestamps");
      kind = 't';
    }
    std::int64_t nulls = 0, n_buffers = 0;
    JsonColumn jc{std::string(), kind, column(name, fmt, col[2], col[3], n, nulls, n_buffers, "json_rows")};
    put_escaped(jc.key, reinterpret_cast<const std::uint8_t*>(name.data()), name.size());
    jc.key.push_back(':');
    cols.push_back(std::move(jc));
  }
  std::string head;
  put_escaped(head, reinterpret_cast<const std::uint8_t*>(key.data()), key.size());
  head = "{" + head + ":[";
  std::vector<std::string> bodies(n_out);
  {
    py::gil_scoped_release nogil;
    for (std::size_t i = 0; i < n_out; ++i) {
      std::string& o = bodies[i];
      o.reserve(head.size() + 2 + static_cast<std::size_t>(st[i + 1] - st[i]) * 256);
      o += head;
      for (auto r = static_cast<std::size_t>(st[i]); r < static_cast<std::size_t>(st[i + 1]); ++r) {
        o += r == static_cast<std::size_t>(st[i]) ? "{" : ",{";
        for (std::size_t j = 0; j < cols.size(); ++j) {
          if (j) o.push_back(',');
          o += cols[j].key;
          put_value(o, cols[j], r);
        }
        o.push_back('}');
      }
      o += "]}";
    }
  }
  py::list out(n_out);
  for (std::size_t i = 0; i < n_out; ++i) out[i] = py::bytes(bodies[i]);
  return out;
}

}  // namespace

namespace chrono_arrow {

py::tuple export_batch(std::vector<OwnedColumn>& columns, std::size_t n, bool with_schema) {
  std::unique_ptr<SchemaData> sd;
  std::unique_ptr<BatchData> bd;
  start_batch(sd, bd, columns.size());
  for (std::size_t i = 0; i < columns.size(); ++i) {
    OwnedColumn& oc = columns[i];
    auto c = std::make_unique<ColumnData>();
    std::int64_t nulls = 0;
    if (!oc.valid.empty()) {
      if (oc.valid.size() != n) throw std::logic_error("export_batch: column '" + oc.name + "' validity size");
      const std::size_t zeros = pack_bits(oc.valid, c->validity);
      if (zeros == 0) c->validity.clear();
      nulls = static_cast<std::int64_t>(zeros);
    }
    const bool text = oc.format == "u";
    if (oc.format == "b") {
      if (oc.values.size() != n) throw std::logic_error("export_batch: column '" + oc.name + "' size");
      pack_bits(oc.values, c->values);
    } else {
      c->values = std::move(oc.values);
      c->data = std::move(oc.data);
    }
    c->buffers[0] = c->validity.empty() ? nullptr : c->validity.data();
    c->buffers[1] = buf(c->values);
    c->buffers[2] = buf(c->data);
    set_child(*sd, *bd, i, std::move(c), oc.name, oc.format, n, nulls, text ? 3 : 2, with_schema);
  }
  return finish_batch(std::move(sd), std::move(bd), n, with_schema);
}

}  // namespace chrono_arrow

void register_arrow(py::module_& m) {
  m.def("record_batch", &record_batch, py::arg("columns"), py::arg("schema") = true);
  m.def("json_rows", &json_rows, py::arg("columns"), py::arg("starts"), py::arg("key"));
}

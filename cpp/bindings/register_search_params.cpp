// _core.SearchParams (search_params.hpp): made from keywords, every field checked once
// (ValueError naming it), then read-only; repr, equality and hash over every field.
#include <pybind11/stl.h>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>
#include "common.hpp"
#include "register.hpp"
#include "search_params.hpp"

using chrono_bind::BoundSearchParams;
using namespace chrono;

namespace {

// The Python layer's bounds: counts are size_t in the core, where the graph walk's width
// may grow to 4k (so 2^62 bounds them all); ranks are int32; fact-type codes uint16.
constexpr std::int64_t kCountMax = std::int64_t{1} << 62;
constexpr std::int64_t kMaxK = 0x7fffffff;
constexpr py::ssize_t kMaxTypes = 65536;

[[noreturn]] void refuse(const char* field, const std::string& rule, const std::string& got) {
  throw std::invalid_argument(std::string("SearchParams: ") + field + " must be " + rule + ", got " + got);
}

int code(int value, int hi, const char* field, const char* codes) {
  if (value < 0 || value > hi) refuse(field, std::string("one of the codes ") + codes, std::to_string(value));
  return value;
}

double unit(double value, const char* field) {
  if (!(value >= 0.0 && value <= 1.0)) refuse(field, "in [0, 1]", py::repr(py::float_(value)));  // NaN fails too
  return value;
}

std::size_t count(std::int64_t value, std::int64_t lo, std::int64_t hi, const char* field) {
  if (value < lo || value > hi)
    refuse(field, "in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]", std::to_string(value));
  return static_cast<std::size_t>(value);
}

// None: every fact type; else one flag (0 or 1) per fact-type code.
std::vector<std::uint8_t> type_flags(const std::optional<carray<std::uint8_t>>& mask) {
  if (!mask) return {};
  const py::ssize_t n = mask->size();
  if (mask->ndim() != 1 || n == 0 || n > kMaxTypes)
    refuse("type_mask", "None or a 1-d array of 1 to 65536 flags, one per fact-type code",
           "an array of shape " + py::str(py::tuple(py::cast(mask->request().shape))).cast<std::string>());
  const std::uint8_t* f = mask->data();
  for (py::ssize_t i = 0; i < n; ++i)
    if (f[i] > 1) refuse("type_mask", "flags 0 or 1", std::to_string(f[i]) + " for code " + std::to_string(i));
  return {f, f + n};
}

BoundSearchParams make(int mode, int fusion, double alpha, double tau, int deprecated, int future,
                       double deprecation_penalty, bool arbitrate, const std::optional<carray<std::uint8_t>>& type_mask,
                       std::int64_t k, bool exact, std::int64_t ef, std::int64_t ef_max, std::int64_t scan_limit,
                       std::int64_t seed_ef, std::int64_t seed_min, std::int64_t group, int scan,
                       const std::shared_ptr<FilterProgram>& filter) {
  BoundSearchParams b;
  SearchParams& p = b.core;
  p.time.mode = static_cast<Mode>(code(mode, 3, "mode", "0 latest, 1 as_of, 2 window, 3 all"));
  p.fusion = static_cast<Fusion>(code(fusion, 1, "fusion", "0 product, 1 linear"));
  p.alpha = unit(alpha, "alpha");
  p.tau = unit(tau, "tau");
  p.invalid = static_cast<InvalidPolicy>(code(deprecated, 2, "deprecated", "0 penalize, 1 exclude, 2 include"));
  p.future = static_cast<InvalidPolicy>(code(future, 2, "future", "0 penalize, 1 exclude, 2 include"));
  p.penalty = unit(deprecation_penalty, "deprecation_penalty");
  p.arbitrate = arbitrate;
  p.type_mask = type_flags(type_mask);
  p.k = count(k, 1, kMaxK, "k");
  p.exact = exact;
  p.ef = count(ef, 1, kCountMax, "ef");
  p.ef_max = count(ef_max, 1, kCountMax, "ef_max");
  p.scan_limit = count(scan_limit, 0, kCountMax, "scan_limit");
  p.seed_ef = count(seed_ef, 0, kCountMax, "seed_ef");
  p.seed_min = count(seed_min, 0, kCountMax, "seed_min");
  b.group = count(group, 0, kCountMax, "group");
  p.scan = static_cast<ScanOrder>(code(scan, 2, "scan", "0 auto, 1 bounds, 2 similarity"));
  b.filter = filter;
  return b;
}

py::object type_mask_of(const BoundSearchParams& b) {
  const auto& m = b.core.type_mask;
  if (m.empty()) return py::none();
  return py::array_t<std::uint8_t>(static_cast<py::ssize_t>(m.size()), m.data());
}

py::str repr(const BoundSearchParams& b) {
  const SearchParams& p = b.core;
  const auto& m = p.type_mask;
  std::size_t set = 0;
  py::list flags;
  for (std::uint8_t f : m) {
    set += f;
    if (m.size() <= 16) flags.append(static_cast<int>(f));
  }
  const py::object mask = m.empty() ? py::object(py::str("None"))
                          : m.size() <= 16 ? py::object(flags)
                                           : py::object(py::str("<{} flags, {} set>").format(m.size(), set));
  return py::str("SearchParams(mode={}, fusion={}, alpha={!r}, tau={!r}, deprecated={}, future={}, "
                 "deprecation_penalty={!r}, arbitrate={}, type_mask={}, k={}, exact={}, ef={}, ef_max={}, "
                 "scan_limit={}, seed_ef={}, seed_min={}, group={}, scan={}, filter={})")
      .format(static_cast<int>(p.time.mode), static_cast<int>(p.fusion), p.alpha, p.tau, static_cast<int>(p.invalid),
              static_cast<int>(p.future), p.penalty, p.arbitrate, mask, p.k, p.exact, p.ef, p.ef_max, p.scan_limit,
              p.seed_ef, p.seed_min, b.group, static_cast<int>(p.scan),
              b.filter ? "<" + std::to_string(b.filter->ops.size()) + " operations>" : std::string("None"));
}

bool same_filter(const BoundSearchParams& a, const BoundSearchParams& b) {
  if (!a.filter || !b.filter) return !a.filter && !b.filter;
  return a.filter->key == b.filter->key;
}

bool same(const BoundSearchParams& a, const BoundSearchParams& b) {
  const SearchParams &x = a.core, &y = b.core;
  return x.time.mode == y.time.mode && x.fusion == y.fusion && x.alpha == y.alpha && x.tau == y.tau &&
         x.invalid == y.invalid && x.future == y.future && x.penalty == y.penalty && x.arbitrate == y.arbitrate &&
         x.type_mask == y.type_mask && x.k == y.k && x.exact == y.exact && x.ef == y.ef && x.ef_max == y.ef_max &&
         x.scan_limit == y.scan_limit && x.seed_ef == y.seed_ef && x.seed_min == y.seed_min && a.group == b.group &&
         x.scan == y.scan && same_filter(a, b);
}

std::size_t hash(const BoundSearchParams& b) {
  const SearchParams& p = b.core;
  std::size_t h = 0;
  auto mix = [&h](std::size_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
  auto real = [](double x) { return std::hash<double>{}(x == 0.0 ? 0.0 : x); };  // -0.0 == 0.0
  mix(static_cast<std::size_t>(p.time.mode)); mix(static_cast<std::size_t>(p.fusion)); mix(real(p.alpha));
  mix(real(p.tau)); mix(static_cast<std::size_t>(p.invalid)); mix(static_cast<std::size_t>(p.future));
  mix(real(p.penalty)); mix(p.arbitrate); mix(p.k); mix(p.exact); mix(p.ef); mix(p.ef_max); mix(p.scan_limit);
  mix(p.seed_ef); mix(p.seed_min); mix(b.group); mix(static_cast<std::size_t>(p.scan));
  for (std::uint8_t f : p.type_mask) mix(f);
  mix(p.type_mask.size());
  mix(b.filter ? std::hash<std::string>{}(b.filter->key) : 0);
  return h;
}

using Class = py::class_<BoundSearchParams>;

// Every field read-only, as the constructor's keyword names it.
void def_fields(Class& c) {
  c.def_property_readonly("mode", [](const BoundSearchParams& b) { return static_cast<int>(b.core.time.mode); })
      .def_property_readonly("fusion", [](const BoundSearchParams& b) { return static_cast<int>(b.core.fusion); })
      .def_property_readonly("alpha", [](const BoundSearchParams& b) { return b.core.alpha; })
      .def_property_readonly("tau", [](const BoundSearchParams& b) { return b.core.tau; })
      .def_property_readonly("deprecated", [](const BoundSearchParams& b) { return static_cast<int>(b.core.invalid); })
      .def_property_readonly("future", [](const BoundSearchParams& b) { return static_cast<int>(b.core.future); })
      .def_property_readonly("deprecation_penalty", [](const BoundSearchParams& b) { return b.core.penalty; })
      .def_property_readonly("arbitrate", [](const BoundSearchParams& b) { return b.core.arbitrate; })
      .def_property_readonly("type_mask", &type_mask_of)
      .def_property_readonly("k", [](const BoundSearchParams& b) { return b.core.k; })
      .def_property_readonly("exact", [](const BoundSearchParams& b) { return b.core.exact; })
      .def_property_readonly("ef", [](const BoundSearchParams& b) { return b.core.ef; })
      .def_property_readonly("ef_max", [](const BoundSearchParams& b) { return b.core.ef_max; })
      .def_property_readonly("scan_limit", [](const BoundSearchParams& b) { return b.core.scan_limit; })
      .def_property_readonly("seed_ef", [](const BoundSearchParams& b) { return b.core.seed_ef; })
      .def_property_readonly("seed_min", [](const BoundSearchParams& b) { return b.core.seed_min; })
      .def_property_readonly("group", [](const BoundSearchParams& b) { return b.group; })
      .def_property_readonly("scan", [](const BoundSearchParams& b) { return static_cast<int>(b.core.scan); })
      .def_property_readonly("filter", [](const BoundSearchParams& b) -> py::object {
        if (!b.filter) return py::none();
        return py::cast(std::const_pointer_cast<FilterProgram>(b.filter));
      });
}

}  // namespace

void register_search_params(py::module_& m) {
  const SearchParams d;  // the defaults are the core's
  Class c(m, "SearchParams");
  c.def(py::init(&make), py::kw_only(), py::arg("mode") = static_cast<int>(d.time.mode),
        py::arg("fusion") = static_cast<int>(d.fusion), py::arg("alpha") = d.alpha, py::arg("tau") = d.tau,
        py::arg("deprecated") = static_cast<int>(d.invalid), py::arg("future") = static_cast<int>(d.future),
        py::arg("deprecation_penalty") = d.penalty, py::arg("arbitrate") = d.arbitrate,
        py::arg("type_mask") = py::none(), py::arg("k") = static_cast<std::int64_t>(d.k), py::arg("exact") = d.exact,
        py::arg("ef") = static_cast<std::int64_t>(d.ef), py::arg("ef_max") = static_cast<std::int64_t>(d.ef_max),
        py::arg("scan_limit") = static_cast<std::int64_t>(d.scan_limit),
        py::arg("seed_ef") = static_cast<std::int64_t>(d.seed_ef),
        py::arg("seed_min") = static_cast<std::int64_t>(d.seed_min),
        py::arg("group") = static_cast<std::int64_t>(BoundSearchParams{}.group),
        py::arg("scan") = static_cast<int>(d.scan), py::arg("filter") = std::shared_ptr<FilterProgram>());
  def_fields(c);
  c.def("__repr__", &repr)
      .def("__eq__", [](const BoundSearchParams& a, const BoundSearchParams& b) { return same(a, b); },
           py::arg("other"), py::is_operator())
      .def("__hash__", &hash);
}

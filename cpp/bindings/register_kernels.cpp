// The stateless kernels by variant ("" = the one chosen at run time): the decay (the Python
// layer's decay values, chrono_engine/_state.py) and the float dot product.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <string>
#include "chrono/kernels.hpp"
#include "common.hpp"
#include "register.hpp"

using namespace chrono;

namespace {

using farray = py::array_t<double, py::array::c_style | py::array::forcecast>;

py::array_t<double> decay_eval(farray ages, farray spec, const std::string& which) {
  if (spec.size() != 5) throw std::invalid_argument("spec must have 5 numbers");
  const double* sp = spec.data();
  const DecaySpec s = make_spec(sp[0], sp[1], sp[2], sp[3], sp[4]);
  const Kernels& k = variant(which);
  py::array_t<double> out(ages.request().shape);
  const double* a = ages.data();
  double* o = out.mutable_data();
  const std::size_t n = static_cast<std::size_t>(ages.size());
  {
    py::gil_scoped_release nogil;
    k.decay(s, a, o, n);
  }
  return out;
}

float dot(carray<float> a, carray<float> b, const std::string& which) {
  if (a.size() != b.size()) throw std::invalid_argument("length mismatch");
  return variant(which).dot(a.data(), b.data(), static_cast<std::size_t>(a.size()));
}

}  // namespace

void register_kernels(py::module_& m) {
  m.def("decay_eval", &decay_eval, py::arg("ages"), py::arg("spec"), py::arg("variant") = "");
  m.def("dot", &dot, py::arg("a"), py::arg("b"), py::arg("variant") = "");
}

// Decay families D(age), as one small parameter record per fact type.
//
// The Python layer (chrono_engine/decay/families.py) converts every family to this record with
// `_kernel_spec()`; `decay.evaluate_spec` there is the NumPy reference of the kernels'
// decay (src/kernels_impl.hpp, decay_one).
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace chrono {

enum class DecayCode : std::int32_t { None = 0, Exponential = 1, Gaussian = 2, Linear = 3, PowerLaw = 4, Weibull = 5 };

struct DecaySpec {
  DecayCode code = DecayCode::None;
  double p0 = 0.0;       // beta | sigma | rate | exponent | shape
  double p1 = 0.0;       // offset | offset | offset | - | scale (lambda)
  double scale = 1.0;    // converts an age in days to the family's unit (24 for hours)
  bool symmetric = false;  // |T - t_e| instead of max(0, T - t_e)
};

inline DecaySpec make_spec(double code, double p0, double p1, double scale, double symmetric) {
  if (!(code >= 0 && code <= 5) || code != std::floor(code)) throw std::invalid_argument("unknown decay family code");
  return DecaySpec{static_cast<DecayCode>(static_cast<int>(code)), p0, p1, scale, symmetric != 0.0};
}

}  // namespace chrono

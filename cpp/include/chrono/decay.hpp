// Decay families D(age) (DESIGN.md, "Scoring"), as one small parameter record per fact type.
//
// The Python layer (chrono_engine/decay.py) converts every family to this record with
// `_kernel_spec()`; `decay.evaluate_spec` there is the NumPy reference of `decay_scalar`.
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

// Plain libm version: the scalar reference inside the core (the batched kernels in
// kernels.hpp use polynomial exp/log that agree with it to ~1e-15 relative).
inline double decay_scalar(const DecaySpec& s, double age_days) {
  if (std::isnan(age_days)) return age_days;
  double a = (s.symmetric ? std::fabs(age_days) : (age_days > 0 ? age_days : 0.0)) * s.scale;
  switch (s.code) {
    case DecayCode::None: return 1.0;
    case DecayCode::Exponential: { double x = a - s.p1; return std::exp(-s.p0 * (x > 0 ? x : 0.0)); }
    case DecayCode::Gaussian: { double x = a - s.p1; x = x > 0 ? x : 0.0; return std::exp(-(x * x) / (2.0 * s.p0 * s.p0)); }
    case DecayCode::Linear: { double x = a - s.p1; double v = 1.0 - s.p0 * (x > 0 ? x : 0.0); return v > 0 ? v : 0.0; }
    case DecayCode::PowerLaw: return std::pow(1.0 + a, -s.p0);
    case DecayCode::Weibull: return a <= 0 ? 1.0 : std::exp(-std::pow(a / s.p1, s.p0));
  }
  return 1.0;
}

}  // namespace chrono

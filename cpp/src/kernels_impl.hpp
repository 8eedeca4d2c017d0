// Kernel bodies, included by one translation unit per instruction set. The including file
// defines CHRONO_KNS (the namespace) and compiles with that ISA's flags.
#include <cmath>
#if defined(__AVX2__)
#include <immintrin.h>
#endif
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>
#include "chrono/columns.hpp"
#include "chrono/kernels.hpp"
#include "chrono/time.hpp"

namespace chrono {
namespace CHRONO_KNS {

// __builtin_bit_cast (GCC 11+, clang 9+) keeps these in registers, so loops vectorise;
// a memcpy through memory does not.
static inline std::int64_t bits_of(double x) { return __builtin_bit_cast(std::int64_t, x); }
static inline double from_bits(std::int64_t i) { return __builtin_bit_cast(double, i); }

// static_cast<double>(x) for any int64, in operations AVX2 has (it lacks vcvtqq2pd): the
// high half converts as int32, the low half through the mantissa; one rounding in the sum,
// so the result is the correctly rounded value, as the cast gives.
__attribute__((always_inline)) static inline double i64_to_f64(std::int64_t x) {
  const double hi = static_cast<double>(static_cast<std::int32_t>(x >> 32));
  const std::int64_t lo = x & 0xffffffffLL;
  const double dl = from_bits(0x4330000000000000LL | lo) - 4503599627370496.0;  // exact
  return hi * 4294967296.0 + dl;
}

// exp(x) for double, branch-free: k = round(x/ln2) via the 1.5*2^52 trick, r = x - k ln2,
// a degree-12 Taylor polynomial on |r| <= ln2/2 (relative error < 2e-16), scaled by 2^k.
// x < -708 flushes towards 0 (subnormals are not needed for decay values), NaN stays NaN.
__attribute__((always_inline)) static inline double vexp(double x) {
  const double lo = -708.0, hi = 709.0;
  double xc = x < lo ? lo : (x > hi ? hi : x);
  const double magic = 6755399441055744.0;  // 1.5 * 2^52
  double kd = xc * 1.4426950408889634 + magic;
  std::int64_t ki = bits_of(kd) - bits_of(magic);
  kd -= magic;
  double r = xc - kd * 6.93147180369123816490e-01;
  r = r - kd * 1.90821492927058770002e-10;
  double p = 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  // 2^k into the exponent: shifted as unsigned (a negative k shifted as signed is undefined
  // before C++20; the bits are the same)
  double y = from_bits(bits_of(p) + static_cast<std::int64_t>(static_cast<std::uint64_t>(ki) << 52));
  y = x < -745.0 ? 0.0 : y;
  return x != x ? x : y;
}

// log(x) for x > 0 (finite); x == 0 -> -inf, x < 0 or NaN -> NaN. m in [sqrt(.5), sqrt(2)),
// log(m) = 2 atanh(s), s = (m-1)/(m+1), odd series to s^23.
__attribute__((always_inline)) static inline double vlog(double x) {
  // subnormals: scale into the normal range first (2^54), correct the exponent after
  bool sub = x > 0.0 && x < 2.2250738585072014e-308;
  double xs = sub ? x * 18014398509481984.0 : x;
  std::int64_t b = bits_of(xs);
  std::int64_t e = ((b >> 52) & 0x7ff) - 1023 - (sub ? 54 : 0);
  double m = from_bits((b & 0x000fffffffffffffLL) | 0x3ff0000000000000LL);
  bool big = m > 1.4142135623730951;
  m = big ? m * 0.5 : m;
  e = big ? e + 1 : e;
  double s = (m - 1.0) / (m + 1.0);
  double s2 = s * s;
  double p = 1.0 / 23;
  p = p * s2 + 1.0 / 21; p = p * s2 + 1.0 / 19; p = p * s2 + 1.0 / 17; p = p * s2 + 1.0 / 15;
  p = p * s2 + 1.0 / 13; p = p * s2 + 1.0 / 11; p = p * s2 + 1.0 / 9;  p = p * s2 + 1.0 / 7;
  p = p * s2 + 1.0 / 5;  p = p * s2 + 1.0 / 3;  p = p * s2 + 1.0;
  // e (|e| < 1100) to double through the mantissa (AVX2 has no int64 -> double convert)
  const double magic = 6755399441055744.0;  // 1.5 * 2^52
  double ed = from_bits(bits_of(magic) + e) - magic;
  double r = 2.0 * s * p + ed * 0.6931471805599453;
  r = x == 0.0 ? -std::numeric_limits<double>::infinity() : r;
  r = x == std::numeric_limits<double>::infinity() ? x : r;
  return (x < 0.0 || x != x) ? std::numeric_limits<double>::quiet_NaN() : r;
}

template <bool Sym>
static inline double clamp_age(double scale, double age) {
  double a = Sym ? std::fabs(age) : (age > 0.0 ? age : 0.0);
  a = age != age ? age : a;
  return a * scale;
}

static inline double decay_one(DecayCode code, double p0, double p1, double a) {
  // a: clamped, scaled age. Written as selects so that a loop over one family vectorises.
  switch (code) {
    case DecayCode::None: return a != a ? a : 1.0;
    case DecayCode::Exponential: { double x = a - p1; x = x > 0.0 ? x : 0.0; x = a != a ? a : x; return vexp(-p0 * x); }
    case DecayCode::Gaussian: { double x = a - p1; x = x > 0.0 ? x : 0.0; x = a != a ? a : x; return vexp(-(x * x) / (2.0 * p0 * p0)); }
    case DecayCode::Linear: { double x = a - p1; x = x > 0.0 ? x : 0.0; double v = 1.0 - p0 * x; v = v > 0.0 ? v : 0.0; return a != a ? a : v; }
    case DecayCode::PowerLaw: return vexp(-p0 * vlog(1.0 + a));
    case DecayCode::Weibull: { double v = vexp(-vexp(p0 * vlog(a / p1))); return a == 0.0 ? 1.0 : v; }
  }
  return 1.0;
}

// One family's loop, specialised on the (loop-invariant) symmetry, so that it vectorises.
template <bool Sym>
static void decay_loop(DecayCode code, double p0, double p1, double scale, const double* __restrict age,
                       double* __restrict out, std::size_t n) {
  switch (code) {
#define CHRONO_DECAY_LOOP(C) \
    case C: for (std::size_t i = 0; i < n; ++i) out[i] = decay_one(C, p0, p1, clamp_age<Sym>(scale, age[i])); break;
    CHRONO_DECAY_LOOP(DecayCode::None)
    CHRONO_DECAY_LOOP(DecayCode::Exponential)
    CHRONO_DECAY_LOOP(DecayCode::Gaussian)
    CHRONO_DECAY_LOOP(DecayCode::Linear)
    CHRONO_DECAY_LOOP(DecayCode::PowerLaw)
    CHRONO_DECAY_LOOP(DecayCode::Weibull)
#undef CHRONO_DECAY_LOOP
  }
}

static void decay_batch(const DecaySpec& s, const double* __restrict age, double* __restrict out, std::size_t n) {
  // parameters copied to locals: `out` could alias `s` as far as the compiler knows
  const double p0 = s.p0, p1 = s.p1, scale = s.scale;
  if (s.symmetric) decay_loop<true>(s.code, p0, p1, scale, age, out, n);
  else decay_loop<false>(s.code, p0, p1, scale, age, out, n);
}

// See Kernels::validities: decay_batch's operations (clamp_age, decay_one) per row, each
// row with its own family, in blocks of kBlock rows whose metadata is gathered first. A
// block whose families are all exponential and asymmetric (the common policy) runs one
// loop over the gathered rates, offsets and scales that vectorises across rows (decay_one
// with a constant family is selects only); any other block goes row by row. Both are
// decay_one's operations, so the same bits as Kernels::decay (tests/test_bound_pass.py).
static void validities(const DecaySpec* specs, const MetaTable* meta, const std::uint32_t* rows, std::size_t n,
                       std::int64_t t, double* out) {
  const double td = static_cast<double>(t);
  constexpr std::size_t kBlock = 64;
  alignas(64) double AGE[kBlock], P0[kBlock], P1[kBlock], SC[kBlock], REL[kBlock];
  const DecaySpec* SP[kBlock];
  for (std::size_t b = 0; b < n; b += kBlock) {
    const std::size_t m = n - b < kBlock ? n - b : kBlock;
    bool exp_only = true;
    for (std::size_t i = 0; i < m; ++i) {
      const std::uint32_t r = rows[b + i];
      const DecaySpec& s = specs[meta->fact_type(r)];
      exp_only = exp_only && s.code == DecayCode::Exponential && !s.symmetric;
      AGE[i] = (td - static_cast<double>(meta->observed_at(r))) / kMicrosPerDay;
      P0[i] = s.p0; P1[i] = s.p1; SC[i] = s.scale; SP[i] = &s;
      REL[i] = static_cast<double>(meta->reliability(r));
    }
    double* __restrict o = out + b;
    if (exp_only) {
      for (std::size_t i = 0; i < m; ++i)
        o[i] = REL[i] * decay_one(DecayCode::Exponential, P0[i], P1[i], clamp_age<false>(SC[i], AGE[i]));
      continue;
    }
    for (std::size_t i = 0; i < m; ++i) {
      const DecaySpec& s = *SP[i];
      const double a = s.symmetric ? clamp_age<true>(s.scale, AGE[i]) : clamp_age<false>(s.scale, AGE[i]);
      o[i] = REL[i] * decay_one(s.code, s.p0, s.p1, a);
    }
  }
}

// The similarity every plan uses: 16 lanes, summed in a fixed order.
static float dot(const float* a, const float* b, std::size_t d) {
  float acc[16] = {0};
  std::size_t i = 0;
  for (; i + 16 <= d; i += 16)
    for (int j = 0; j < 16; ++j) acc[j] += a[i + j] * b[i + j];
  float s = 0;
  for (; i < d; ++i) s += a[i] * b[i];
  for (int j = 0; j < 16; ++j) s += acc[j];
  return s;
}

// <q, x> for an int8 vector x, converting as it goes (dot_i8_some's path for one query)
static float dot_i8(const float* q, const std::int8_t* x, std::size_t d) {
  float acc[16] = {0};
  std::size_t i = 0;
  for (; i + 16 <= d; i += 16)
    for (int j = 0; j < 16; ++j) acc[j] += q[i + j] * static_cast<float>(x[i + j]);
  float s = 0;
  for (; i < d; ++i) s += q[i] * static_cast<float>(x[i]);
  for (int j = 0; j < 16; ++j) s += acc[j];
  return s;
}

// out[j] = dot_i8(Q + which[j] * d, x, d) for j < n: x is converted once for all of them
// (the conversions are most of a single dot_i8's instructions). Float rounding may differ
// from dot_i8 in the last bits; the compact copy's error term covers any summation order.
static void dot_i8_some(const std::int8_t* x, const float* Q, const std::uint32_t* which, std::size_t n,
                        std::size_t d, float* out) {
  constexpr std::size_t kMax = 4096;
  if (d > kMax || n < 2) {
    for (std::size_t j = 0; j < n; ++j) out[j] = dot_i8(Q + which[j] * d, x, d);
    return;
  }
  alignas(64) float xf[kMax];
  for (std::size_t i = 0; i < d; ++i) xf[i] = static_cast<float>(x[i]);
  for (std::size_t j = 0; j < n; ++j) out[j] = dot(Q + which[j] * d, xf, d);
}

// A float no smaller than x >= 0 (or NaN): the next float up is one ulp (bits + 1) for
// finite non-negative values.
__attribute__((always_inline)) static inline float round_up_nonneg(double x) {
  float f = static_cast<float>(x);
  std::uint32_t u = __builtin_bit_cast(std::uint32_t, f);
  return static_cast<double>(f) < x ? __builtin_bit_cast(float, u + 1u) : f;
}

// See BoundArgs. Each per-query loop below is a straight line over Gp lanes (selects, no
// branches, one element width per loop), so it vectorises.
static std::size_t bound_rows(const BoundArgs& A, const MetaTable* meta, const std::uint32_t* rows, std::size_t n) {
  constexpr std::size_t kMax = 64;
  const std::size_t Gp = A.Gp;
  if (Gp == 0 || Gp > kMax || Gp % 8 != 0) return 0;
  alignas(64) double ages[kMax], v[kMax], bb[kMax], pp[kMax];
  const double ninf = -std::numeric_limits<double>::infinity();
  const double* __restrict T = A.t;
  const std::int64_t* __restrict K = A.known_at;
  const std::int64_t* __restrict X1 = A.x1;
  const std::int64_t* __restrict X2 = A.x2;
  const double* __restrict TH = A.theta;
  const double* __restrict Ac = A.a;
  const double* __restrict Bc = A.b;
  const double tau = A.tau, out_pen = A.out_pen, fut_pen = A.fut_pen;
  const double max_pen = out_pen > fut_pen ? out_pen : fut_pen;
  std::uint32_t* __restrict cnt = A.cnt;
  std::size_t nk = 0;
  // Exponential decay (not symmetric, offset p1 >= 0) factorises. With c = p0 * scale,
  //   D = exp(-p0 max(0, scale age - p1)) = min(1, exp(-c age + p0 p1))
  //     = min(1, E[g] * F),  E[g] = exp(-c (t[g] - t[0]) / day),
  //                          F = exp(-c (t[0] - observed_at) / day + p0 p1),
  // so a row costs one exp instead of one per query. A type takes this path when every
  // query's exponent in E is within +-700, a row when its exponent in F is. The product is
  // raised by kUp before the min: the factorised and the direct form round differently, by
  // at most ~3e-12 relative for such exponents and |p0 p1| <= 50; kTiny covers products
  // that underflow into subnormals. So the value is an upper bound of the direct one.
  // Validities within that margin of tau are recomputed directly, so tau is exact.
  constexpr double kUp = 1.0 + 1e-11, kDown = 1.0 - 3e-11, kLim = 700.0, kTiny = 1e-300;
  constexpr std::size_t kFastTypes = 256;
  const std::size_t n_fast = std::min(A.n_specs, kFastTypes);
  const std::size_t G = A.G == 0 ? Gp : std::min(A.G, Gp);
  thread_local std::vector<double> E, Emax;
  thread_local std::vector<signed char> fast;  // per type: 0 not looked at, 1 factorised, -1 direct
  fast.assign(n_fast, 0);
  if (E.size() < n_fast * kMax) E.resize(n_fast * kMax);
  if (Emax.size() < n_fast) Emax.resize(n_fast);
  const double t0 = T[0];
  // A row-level test before the per-query loops, for factorised rows: every lane's bound
  // (Ac + Bc val) p is at most (maxA + maxB rel Dmax) pmax, with Dmax = min(1, Emax F +
  // kTiny) computed by the same monotone operations as each lane's v (Emax = the type's
  // largest E over the queries) and pmax = max(out_pen, fut_pen) when the row is out of force for every
  // query of the group (its interval misses [min X2, max X1]), else 1. Below the least
  // theta the row is kept by no query, so it is dropped without its Gp-lane loops (most
  // rows of a latest-mode stage 1 or a steep product search). Valid only when every Ac
  // and Bc is >= 0 (then each step is monotone); otherwise the test is off.
  double maxA = 0.0, maxB = 0.0, minTH = std::numeric_limits<double>::infinity();
  std::int64_t maxX1 = std::numeric_limits<std::int64_t>::min(), minX2 = std::numeric_limits<std::int64_t>::max();
  bool quick = true;
  for (std::size_t g = 0; g < G; ++g) {
    quick = quick && Ac[g] >= 0.0 && Bc[g] >= 0.0;
    maxA = std::max(maxA, Ac[g]);
    maxB = std::max(maxB, Bc[g]);
    minTH = std::min(minTH, TH[g]);
    maxX1 = std::max(maxX1, X1[g]);
    minX2 = std::min(minX2, X2[g]);
  }
  quick = quick && std::isfinite(maxA) && std::isfinite(maxB) && !(minTH != minTH) && out_pen >= 0.0 && out_pen <= 1.0 &&
          fut_pen >= 0.0 && fut_pen <= 1.0;
  auto factorised = [&](std::size_t j) {
    if (fast[j] != 0) return fast[j] > 0;
    const DecaySpec& s = A.specs[j];
    bool ok = s.code == DecayCode::Exponential && !s.symmetric && std::isfinite(s.p0) && s.p0 >= 0.0 &&
              std::isfinite(s.scale) && s.scale > 0.0 && std::isfinite(s.p1) && s.p1 >= 0.0 && s.p0 * s.p1 <= 50.0;
    if (ok) {
      const double c = s.p0 * s.scale;
      double* __restrict e = E.data() + j * kMax;
      for (std::size_t g = 0; g < Gp; ++g) {
        const double x = g < G ? -c * ((T[g] - t0) / kMicrosPerDay) : 0.0;  // padding: any finite value
        ok = ok && x >= -kLim && x <= kLim;
        e[g] = vexp(x < -kLim ? -kLim : (x > kLim ? kLim : x));
      }
      double mx = e[0];
      for (std::size_t g = 1; g < G; ++g) mx = e[g] > mx ? e[g] : mx;  // padding lanes are not queries
      Emax[j] = mx;
    }
    fast[j] = ok ? 1 : -1;
    return ok;
  };
  constexpr std::size_t AHEAD = 16;
  const MetaTable::Times* __restrict times = meta->times_data();
  const MetaTable::Info* __restrict info = meta->info_data();
  for (std::size_t i = 0; i < n; ++i) {
    if (i + AHEAD < n) {
      __builtin_prefetch(times + rows[i + AHEAD]);
      __builtin_prefetch(info + rows[i + AHEAD]);
    }
    const std::uint32_t row = rows[i];
    const std::uint16_t type = meta->fact_type(row);
    const bool deprecated = meta->deprecated(row);
    if (A.type_mask && (type >= A.mask_n || !A.type_mask[type])) continue;
    const double obs = static_cast<double>(meta->observed_at(row));
    const double rel = static_cast<double>(meta->reliability(row));
    bool direct = true;
    if (type < n_fast && factorised(type)) {
      const DecaySpec& s = A.specs[type];
      const double y = -(s.p0 * s.scale) * ((t0 - obs) / kMicrosPerDay) + s.p0 * s.p1;
      direct = !(y >= -kLim && y <= kLim);
      if (!direct) {
        const double F = vexp(y) * kUp;
        if (quick) {
          const double xm = Emax[type] * F + kTiny;
          const double dmax = xm < 1.0 ? xm : 1.0;
          const bool out_all = meta->valid_from(row) > maxX1 || meta->valid_to(row) <= minX2 || (A.latest && deprecated);
          const double bm = (maxA + maxB * (rel * dmax)) * (out_all ? max_pen : 1.0);
          if (bm < minTH) continue;
        }
        const double* __restrict e = E.data() + type * kMax;
        for (std::size_t g = 0; g < Gp; ++g) { const double x = e[g] * F + kTiny; v[g] = x < 1.0 ? x : 1.0; }
      }
      if (!direct && tau > 0.0) {  // a validity within the margin of tau: this row takes the direct path
        std::int64_t near = 0;
        for (std::size_t g = 0; g < Gp; ++g) {
          const double val = rel * v[g];
          near |= static_cast<std::int64_t>((val >= tau) & (val * kDown < tau));
        }
        direct = near != 0;
      }
    }
    if (direct) {
      for (std::size_t g = 0; g < Gp; ++g) ages[g] = (T[g] - obs) / kMicrosPerDay;  // = age_days
      decay_batch(A.specs[type], ages, v, Gp);
    }
    const std::int64_t live = (A.latest && deprecated) ? 0 : 1;
    const std::int64_t vf = meta->valid_from(row), vt = meta->valid_to(row), ing = meta->ingested_at(row),
                       ret = meta->retracted_at(row);
    for (std::size_t g = 0; g < Gp; ++g) {
      const std::int64_t known = (ing <= K[g]) & (K[g] < ret);
      const std::int64_t inf = (vf <= X1[g]) & (vt > X2[g]) & live;
      double p = inf ? 1.0 : (vf > X1[g] ? fut_pen : out_pen);
      p = known ? p : 0.0;
      const double val = rel * v[g];
      p = (val < tau) | (val != val) ? 0.0 : p;
      const double b = (Ac[g] + Bc[g] * val) * p;
      const bool ok = (p > 0.0) & (b >= TH[g]);
      bb[g] = ok ? b : ninf;
      pp[g] = ok ? p : 0.0;
      v[g] = val;
    }
    double mx[8];
    for (std::size_t j = 0; j < 8; ++j) mx[j] = bb[j];
    for (std::size_t g = 8; g < Gp; g += 8)
      for (std::size_t j = 0; j < 8; ++j) mx[j] = bb[g + j] > mx[j] ? bb[g + j] : mx[j];
    double top = mx[0];
    for (std::size_t j = 1; j < 8; ++j) top = mx[j] > top ? mx[j] : top;
    if (top == ninf) continue;
    float* __restrict V = A.val + nk * Gp;
    float* __restrict P = A.pen + nk * Gp;
    for (std::size_t g = 0; g < Gp; ++g) V[g] = round_up_nonneg(v[g]);
    for (std::size_t g = 0; g < Gp; ++g) P[g] = round_up_nonneg(pp[g]);
    for (std::size_t g = 0; g < Gp; ++g) cnt[g] += bb[g] != ninf;
    A.kept[nk] = rows[i];
    A.best[nk] = top;
    ++nk;
  }
  return nk;
}

// dot_qt_i8 for a fixed Gp and R rows at once: each query column of QT is loaded once for
// the R rows (QT is d * Gp floats, 48 KB at d = 384, Gp = 32: more than L1 holds, so its
// loads, not the FMAs, bound a one-row loop). R * Gp / lanes independent accumulators.
#if defined(__AVX2__) && !defined(__AVX512F__) && defined(__GNUC__)
// With AVX2 the accumulators are written as 8-lane vectors and every loop is unrolled:
// GCC 12 compiled the plain loops below for Gp = 16 (groups of 9 to 16 queries) into code
// 3.6x slower per row than for Gp = 24 (903 against 253 ns a row at d = 384, two rows at a
// time), and a group of 16 cost twice a group of 24. Each lane sums in the same order, so
// the dots are the same bits. Rows per pass (of the scans' batches of 4): 4 while the
// accumulators fit the 16 registers (Gp <= 24), else 2 (measured at d = 384: Gp 8 / 16 /
// 24 / 32 / 64: 191 / 239 / 289 / 437 / 938 ns a row).
typedef float QtVec __attribute__((vector_size(32)));
constexpr std::size_t kQtLanes = 8;

template <std::size_t Gp, std::size_t R>
static void dot_qt_i8_n(const std::int8_t* const* __restrict xs, const float* __restrict QT, std::size_t d,
                        float* __restrict out) {
  constexpr std::size_t J = Gp / kQtLanes;
  QtVec acc[R][J];
#pragma GCC unroll 8
  for (std::size_t r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (std::size_t j = 0; j < J; ++j) acc[r][j] = QtVec{};
  for (std::size_t i = 0; i < d; ++i) {
    QtVec q[J];
#pragma GCC unroll 8
    for (std::size_t j = 0; j < J; ++j) std::memcpy(&q[j], QT + i * Gp + j * kQtLanes, sizeof(QtVec));
#pragma GCC unroll 8
    for (std::size_t r = 0; r < R; ++r) {
      const float xv = static_cast<float>(xs[r][i]);
#pragma GCC unroll 8
      for (std::size_t j = 0; j < J; ++j) acc[r][j] += q[j] * xv;
    }
  }
#pragma GCC unroll 8
  for (std::size_t r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (std::size_t j = 0; j < J; ++j) std::memcpy(out + r * Gp + j * kQtLanes, &acc[r][j], sizeof(QtVec));
}

template <std::size_t Gp>
constexpr std::size_t qt_rows() { return Gp <= 24 ? 4 : 2; }
#else
template <std::size_t Gp, std::size_t R>
static void dot_qt_i8_n(const std::int8_t* const* __restrict xs, const float* __restrict QT, std::size_t d,
                        float* __restrict out) {
  alignas(64) float acc[R][Gp] = {};
  for (std::size_t i = 0; i < d; ++i) {
    const float* q = QT + i * Gp;
    for (std::size_t r = 0; r < R; ++r) {
      const float xv = static_cast<float>(xs[r][i]);
      for (std::size_t g = 0; g < Gp; ++g) acc[r][g] += q[g] * xv;
    }
  }
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t g = 0; g < Gp; ++g) out[r * Gp + g] = acc[r][g];
}

// Rows per pass: as many as the vector registers hold accumulators for.
template <std::size_t Gp>
constexpr std::size_t qt_rows() {
#if defined(__AVX512F__)
  return 4;
#else
  return 2;
#endif
}
#endif

template <std::size_t Gp>
static void dot_qt_i8_g(const std::int8_t* const* xs, std::size_t nx, const float* QT, std::size_t d, float* out) {
  constexpr std::size_t R = qt_rows<Gp>();
  std::size_t r = 0;
  for (; r + R <= nx; r += R) dot_qt_i8_n<Gp, R>(xs + r, QT, d, out + r * Gp);
  if constexpr (R > 2) {
    if (r + 2 <= nx) { dot_qt_i8_n<Gp, 2>(xs + r, QT, d, out + r * Gp); r += 2; }
  }
  for (; r < nx; ++r) dot_qt_i8_n<Gp, 1>(xs + r, QT, d, out + r * Gp);
}

// The group dots are compiled per padded group size: f(std::integral_constant<Gp>) for
// Gp in {8, 16, ..., 64}; false for any other Gp (callers pad to a multiple of 8).
template <class F>
static bool with_group_size(std::size_t Gp, F&& f) {
  switch (Gp) {
    case 8: f(std::integral_constant<std::size_t, 8>{}); return true;
    case 16: f(std::integral_constant<std::size_t, 16>{}); return true;
    case 24: f(std::integral_constant<std::size_t, 24>{}); return true;
    case 32: f(std::integral_constant<std::size_t, 32>{}); return true;
    case 40: f(std::integral_constant<std::size_t, 40>{}); return true;
    case 48: f(std::integral_constant<std::size_t, 48>{}); return true;
    case 56: f(std::integral_constant<std::size_t, 56>{}); return true;
    case 64: f(std::integral_constant<std::size_t, 64>{}); return true;
    default: return false;
  }
}

static void dot_qt_i8(const std::int8_t* const* xs, std::size_t nx, const float* QT, std::size_t Gp, std::size_t d,
                      float* out) {
  if (!with_group_size(Gp, [&](auto gp) { dot_qt_i8_g<decltype(gp)::value>(xs, nx, QT, d, out); }))
    for (std::size_t g = 0; g < nx * Gp; ++g) out[g] = 0.0f;
}

#if defined(__AVX2__)
// dot_s8_1 with AVX2 (no VNNI): one query's exact integer dots. vpmaddubsw multiplies
// unsigned by signed bytes and adds pairs into int16 with saturation, so the row's codes
// go in as |c| (vpsignb(c, c); -128 gives 128 read unsigned) and the query's as q8 sign(c)
// (vpsignb(q8, c); |q8| <= 127, so negating it stays in range): each pair is at most
// 2 * 128 * 127 = 32,512 < 2^15, no saturation; vpmaddwd with ones widens the pairs to
// int32. The last d % 32 dimensions are added one by one (nothing past d is read). Exact
// in int32 for d <= 65,536; q8_sum is not needed (no unsigned offset to take off).
static inline std::int32_t lane_sum8(__m256i v) {
  const __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  const __m128i t = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  return _mm_cvtsi128_si32(_mm_add_epi32(t, _mm_shuffle_epi32(t, 0xb1)));
}

static inline __m256i dot_s8_step(__m256i acc, __m256i x, __m256i q, __m256i ones) {
  const __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(x, x), _mm256_sign_epi8(q, x));
  return _mm256_add_epi32(acc, _mm256_madd_epi16(p, ones));
}

static void dot_s8_1_avx2(const std::int8_t* const* xs, std::size_t nx, const std::int8_t* q8, std::int32_t,
                          std::size_t d, std::size_t stride, std::int32_t* out) {
  const __m256i ones = _mm256_set1_epi16(1);
  const std::size_t full = d / 32 * 32;
  auto tail = [&](const std::int8_t* x) {
    std::int32_t s = 0;
    for (std::size_t i = full; i < d; ++i) s += static_cast<std::int32_t>(x[i]) * q8[i];
    return s;
  };
  // rows two at a time (each query load serves both; two accumulator chains overlap)
  std::size_t r = 0;
  for (; r + 2 <= nx; r += 2) {
    const std::int8_t* x0 = xs[r];
    const std::int8_t* x1 = xs[r + 1];
    __m256i a0 = _mm256_setzero_si256(), a1 = _mm256_setzero_si256();
    for (std::size_t i = 0; i < full; i += 32) {
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q8 + i));
      a0 = dot_s8_step(a0, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x0 + i)), q, ones);
      a1 = dot_s8_step(a1, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x1 + i)), q, ones);
    }
    out[r * stride] = lane_sum8(a0) + tail(x0);
    out[(r + 1) * stride] = lane_sum8(a1) + tail(x1);
  }
  if (r < nx) {
    const std::int8_t* x = xs[r];
    __m256i a = _mm256_setzero_si256();
    for (std::size_t i = 0; i < full; i += 32)
      a = dot_s8_step(a, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)),
                      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q8 + i)), ones);
    out[r * stride] = lane_sum8(a) + tail(x);
  }
}
#define CHRONO_DOT_S8_1_DEFAULT dot_s8_1_avx2
#else
#define CHRONO_DOT_S8_1_DEFAULT nullptr
#endif

static float l2sq(const float* a, const float* b, std::size_t d) {
  float acc[16] = {0};
  std::size_t i = 0;
  for (; i + 16 <= d; i += 16)
    for (int j = 0; j < 16; ++j) { float t = a[i + j] - b[i + j]; acc[j] += t * t; }
  float s = 0;
  for (; i < d; ++i) { float t = a[i] - b[i]; s += t * t; }
  for (int j = 0; j < 16; ++j) s += acc[j];
  return s;
}

// ce.score when every fact type decays exponentially (or not at all) and asymmetrically:
// one branch-free pass, the type's parameters gathered per row. The arithmetic is that of
// decay_one / clamp_age and of the general loop below, so both paths agree bit for bit.
// The multiplier of a row out of force under a policy code (0 penalize, 1 exclude, 2 include).
static inline double policy_penalty(int policy, double penalty) {
  return policy == 0 ? penalty : (policy == 1 ? 0.0 : 1.0);
}

template <bool Rel, bool Typ, bool Val, bool Dep, bool Lin, bool Uni>
static void score_exp(const ScoreArgs& A, std::size_t begin, std::size_t end, const double* __restrict P0,
                      const double* __restrict P1, const double* __restrict SC, double pen_bad, double pen_fut) {
  // Uni: every type has the same scale and offset (only the rate differs): one gather
  const double sc0 = SC[0], p10 = P1[0];
  const double t = static_cast<double>(A.t_query);
  const std::int64_t tq = A.t_query;
  const double ninf = -std::numeric_limits<double>::infinity();
  const double alpha = A.alpha, tau = A.tau;
  const float* __restrict sim = A.similarity;
  const std::int64_t* __restrict obs = A.observed;
  const float* __restrict rel = A.reliability;
  const std::int32_t* __restrict typ = A.type;
  const std::int64_t* __restrict vf = A.valid_from;
  const std::int64_t* __restrict vt = A.valid_to;
  const std::uint8_t* __restrict dep = A.deprecated;
  float* __restrict os = A.out_score;
  float* __restrict ov = A.out_validity;
  const std::uint32_t nt = static_cast<std::uint32_t>(A.n_types);
  std::uint32_t bad = 0, badr = 0;
  for (std::size_t i = begin; i < end; ++i) {
    const std::uint32_t u = Typ ? static_cast<std::uint32_t>(typ[i]) : 0u;
    bad |= Typ ? static_cast<std::uint32_t>(u >= nt) : 0u;
    const std::uint32_t j = u < nt ? u : 0u;  // clamped: never reads outside the tables
    const double age = (t - i64_to_f64(obs[i])) / kMicrosPerDay;
    double a = age > 0.0 ? age : 0.0;
    a = age != age ? age : a;
    a = a * (Uni ? sc0 : SC[j]);
    double x = a - (Uni ? p10 : P1[j]);
    x = x > 0.0 ? x : 0.0;
    x = a != a ? a : x;
    const double dec = vexp(-P0[j] * x);
    const double q = Rel ? static_cast<double>(rel[i]) : 1.0;
    badr |= Rel ? static_cast<std::uint32_t>(!((q > 0.0) & (q <= 1.0))) : 0u;
    const double v = q * dec;
    const double s = sim[i];
    double f;
    if (Lin) f = alpha * s + (1.0 - alpha) * v;
    else { const double sp = s < 0.0 ? 0.0 : (s > 1.0 ? 1.0 : s); f = sp * v; }
    bool ok = true;
    if (Val) ok = (vf[i] <= tq) & (tq < vt[i]);
    if (Dep) ok = ok & (dep[i] == 0);
    const double pen = ok ? 1.0 : ((Val && vf[i] > tq) ? pen_fut : pen_bad);
    f = pen == 0.0 ? ninf : f * pen;
    f = v < tau ? ninf : f;
    os[i] = static_cast<float>(f);
    ov[i] = static_cast<float>(v);
  }
  if ((bad || badr) && A.bad_type) *A.bad_type |= static_cast<unsigned char>((bad ? 1 : 0) | (badr ? 2 : 0));
}

template <bool Rel, bool Typ, bool Val, bool Dep>
static void score_exp_fusion(const ScoreArgs& A, std::size_t b, std::size_t e, const double* P0,
                             const double* P1, const double* SC, double pen_bad, double pen_fut) {
  bool uni = true;
  for (std::size_t j = 1; j < A.n_types; ++j) uni = uni && SC[j] == SC[0] && P1[j] == P1[0];
  if (A.fusion == 0) {
    if (uni) score_exp<Rel, Typ, Val, Dep, false, true>(A, b, e, P0, P1, SC, pen_bad, pen_fut);
    else score_exp<Rel, Typ, Val, Dep, false, false>(A, b, e, P0, P1, SC, pen_bad, pen_fut);
  } else {
    if (uni) score_exp<Rel, Typ, Val, Dep, true, true>(A, b, e, P0, P1, SC, pen_bad, pen_fut);
    else score_exp<Rel, Typ, Val, Dep, true, false>(A, b, e, P0, P1, SC, pen_bad, pen_fut);
  }
}

// true if the fast path ran
static bool score_fast(const ScoreArgs& A, std::size_t b, std::size_t e) {
  constexpr std::size_t kMaxTypes = 1024;
  if (A.n_types == 0 || A.n_types > kMaxTypes || A.out_validity == nullptr) return false;
  double P0[kMaxTypes], P1[kMaxTypes], SC[kMaxTypes];
  for (std::size_t j = 0; j < A.n_types; ++j) {
    const DecaySpec& s = A.specs[j];
    if (s.symmetric) return false;
    if (s.code == DecayCode::Exponential) { P0[j] = s.p0; P1[j] = s.p1; SC[j] = s.scale; }
    else if (s.code == DecayCode::None) { P0[j] = 0.0; P1[j] = 0.0; SC[j] = s.scale; }
    else return false;
  }
  const double pen_bad = policy_penalty(A.invalid_policy, A.penalty);
  const double pen_fut = policy_penalty(A.future_policy, A.penalty);
  const bool rel = A.reliability != nullptr, typ = A.type != nullptr && A.n_types > 1;
  const bool val = A.valid_from != nullptr, dep = A.deprecated != nullptr;
  const int key = (rel ? 8 : 0) | (typ ? 4 : 0) | (val ? 2 : 0) | (dep ? 1 : 0);
  switch (key) {
#define CHRONO_SCORE_CASE(K) \
    case K: score_exp_fusion<(K & 8) != 0, (K & 4) != 0, (K & 2) != 0, (K & 1) != 0>(A, b, e, P0, P1, SC, pen_bad, pen_fut); break;
    CHRONO_SCORE_CASE(0) CHRONO_SCORE_CASE(1) CHRONO_SCORE_CASE(2) CHRONO_SCORE_CASE(3)
    CHRONO_SCORE_CASE(4) CHRONO_SCORE_CASE(5) CHRONO_SCORE_CASE(6) CHRONO_SCORE_CASE(7)
    CHRONO_SCORE_CASE(8) CHRONO_SCORE_CASE(9) CHRONO_SCORE_CASE(10) CHRONO_SCORE_CASE(11)
    CHRONO_SCORE_CASE(12) CHRONO_SCORE_CASE(13) CHRONO_SCORE_CASE(14) CHRONO_SCORE_CASE(15)
#undef CHRONO_SCORE_CASE
  }
  return true;
}

// Rescoring kernel (ce.score): rows are processed in blocks; within a block each fact type's
// decay is evaluated by the vectorised family loop, then fused.
static void score(const ScoreArgs& A, std::size_t begin, std::size_t end) {
  if (score_fast(A, begin, end)) return;
  {  // the general path indexes tables by type: check codes (and reliabilities) first
    std::uint32_t bad = 0, badr = 0;
    if (A.type) for (std::size_t i = begin; i < end; ++i) bad |= static_cast<std::uint32_t>(A.type[i]) >= A.n_types;
    if (A.reliability)
      for (std::size_t i = begin; i < end; ++i) badr |= !((A.reliability[i] > 0.0f) & (A.reliability[i] <= 1.0f));
    if (bad || badr) {
      if (A.bad_type) *A.bad_type |= static_cast<unsigned char>((bad ? 1 : 0) | (badr ? 2 : 0));
      return;
    }
  }
  constexpr std::size_t B = 512;
  double age[B], dec[B];
  const double ninf = -std::numeric_limits<double>::infinity();
  for (std::size_t b0 = begin; b0 < end; b0 += B) {
    std::size_t m = end - b0 < B ? end - b0 : B;
    for (std::size_t i = 0; i < m; ++i)
      age[i] = (static_cast<double>(A.t_query) - static_cast<double>(A.observed[b0 + i])) / kMicrosPerDay;
    if (A.type == nullptr || A.n_types == 1) {
      decay_batch(A.specs[0], age, dec, m);
    } else {
      // Group the block's rows by fact type (counting sort), evaluate each type's decay
      // once over its rows with the vectorised family loop, scatter back.
      std::uint16_t idx[B];
      double g_age[B], g_dec[B];
      std::size_t count[257] = {0};
      const std::int32_t* ty = A.type + b0;
      const bool small = A.n_types <= 256;
      if (small) {
        for (std::size_t i = 0; i < m; ++i) ++count[ty[i] + 1];
        for (std::size_t t = 1; t <= A.n_types; ++t) count[t] += count[t - 1];
        std::size_t pos[257];
        for (std::size_t t = 0; t <= A.n_types; ++t) pos[t] = count[t];
        for (std::size_t i = 0; i < m; ++i) idx[pos[ty[i]]++] = static_cast<std::uint16_t>(i);
        for (std::size_t t = 0; t < A.n_types; ++t) {
          std::size_t lo = count[t], hi = count[t + 1];
          if (lo == hi) continue;
          for (std::size_t j = lo; j < hi; ++j) g_age[j - lo] = age[idx[j]];
          decay_batch(A.specs[t], g_age, g_dec, hi - lo);
          for (std::size_t j = lo; j < hi; ++j) dec[idx[j]] = g_dec[j - lo];
        }
      } else {
        for (std::size_t i = 0; i < m; ++i) decay_batch(A.specs[ty[i]], age + i, dec + i, 1);
      }
    }
    for (std::size_t i = 0; i < m; ++i) {
      std::size_t r = b0 + i;
      double q = A.reliability ? A.reliability[r] : 1.0;
      double v = q * dec[i];
      double s = A.similarity[r];
      double f;
      if (A.fusion == 0) { double sp = s < 0.0 ? 0.0 : (s > 1.0 ? 1.0 : s); f = sp * v; }
      else f = A.alpha * s + (1.0 - A.alpha) * v;
      bool ok = true;
      if (A.valid_from) ok = A.valid_from[r] <= A.t_query && A.t_query < A.valid_to[r];
      if (A.deprecated) ok = ok && !A.deprecated[r];
      const bool future = A.valid_from && A.valid_from[r] > A.t_query;
      double pen = ok ? 1.0 : policy_penalty(future ? A.future_policy : A.invalid_policy, A.penalty);
      f = pen == 0.0 ? ninf : f * pen;
      f = v < A.tau ? ninf : f;
      A.out_score[r] = static_cast<float>(f);
      if (A.out_validity) A.out_validity[r] = static_cast<float>(v);
    }
  }
}

// ----- filter leaves (Kernels::bits_*): one bit per row, 64 rows per word
template <class P>
inline void fill_bits(std::size_t n, std::uint64_t* out, P&& pred) {
  for (std::size_t w = 0; w * 64 < n; ++w) {
    const std::size_t base = w * 64, end = std::min(n, base + 64);
    std::uint64_t x = 0;
    for (std::size_t r = base; r < end; ++r) x |= static_cast<std::uint64_t>(pred(r) ? 1 : 0) << (r - base);
    out[w] = x;
  }
}

inline void bits_eq_i32(const std::int32_t* x, std::size_t n, std::int32_t w, std::uint64_t* out) {
  fill_bits(n, out, [&](std::size_t r) { return x[r] == w; });
}

inline void bits_lut_i32(const std::int32_t* x, std::size_t n, const std::uint8_t* tbl, std::uint64_t* out) {
  fill_bits(n, out, [&](std::size_t r) { return x[r] >= 0 && tbl[static_cast<std::size_t>(x[r])]; });
}

inline void bits_range_i64(const std::int64_t* x, const std::uint8_t* valid, std::size_t n, std::int64_t a,
                           std::int64_t b, std::uint64_t* out) {
  if (valid) fill_bits(n, out, [&](std::size_t r) { return valid[r] && x[r] >= a && x[r] <= b; });
  else fill_bits(n, out, [&](std::size_t r) { return x[r] >= a && x[r] <= b; });
}

// This instruction set's dispatch table, filled field by field (so that a reordering of
// Kernels cannot wire a pointer to the wrong slot). dot_qt_s8: null unless the CPU
// variant has one (kernels_v4.cpp).
constexpr Kernels make_kernels(const char* name, decltype(Kernels::dot_qt_s8) dot_qt_s8 = nullptr,
                               decltype(Kernels::dot_s8_1) dot_s8_1 = CHRONO_DOT_S8_1_DEFAULT) {
  static_assert(sizeof(Kernels) == 14 * sizeof(void*), "a new Kernels field must be set here");
  Kernels k{};
  k.name = name;
  k.dot = dot; k.dot_i8_some = dot_i8_some; k.l2sq = l2sq;             // similarities
  k.decay = decay_batch; k.score = score; k.bound_rows = bound_rows;  // validities and bounds
  k.validities = validities;
  k.dot_qt_i8 = dot_qt_i8; k.dot_qt_s8 = dot_qt_s8;                   // group dots
  k.dot_s8_1 = dot_s8_1;                                               // one query's
  k.bits_eq_i32 = bits_eq_i32; k.bits_lut_i32 = bits_lut_i32;          // filter leaves
  k.bits_range_i64 = bits_range_i64;
  return k;
}

}  // namespace CHRONO_KNS
}  // namespace chrono

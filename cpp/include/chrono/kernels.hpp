// Batched numeric kernels, compiled once per instruction set (src/kernels_*.cpp) and chosen
// at run time (src/dispatch.cpp). Everything here is plain, branch-free C++ that the
// compiler vectorises; no -ffast-math: exp/log are explicit polynomials, so NaN and inf
// behave and results do not change between builds.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include "decay.hpp"

namespace chrono {

class MetaTable;
struct BoundArgs;

struct Kernels {
  const char* name;
  // inner product of two float vectors of length d
  float (*dot)(const float* a, const float* b, std::size_t d);
  // out[j] = <Q[which[j]], x> for n of the G row-major queries Q (G x d) and an int8 vector
  // x (the compact copy; scaling is the caller's), converted once for all n
  void (*dot_i8_some)(const std::int8_t* x, const float* Q, const std::uint32_t* which, std::size_t n,
                      std::size_t d, float* out);
  // squared Euclidean distance
  float (*l2sq)(const float* a, const float* b, std::size_t d);
  // out[i] = D(age[i]) for one decay family
  void (*decay)(const DecaySpec& s, const double* age_days, double* out, std::size_t n);
  // out[i] = reliability * D_j(age_days(t, observed_at)) of rows[i], j its fact type (an
  // index into specs, as Searcher::eligibility reads it): that validity for n rows in one
  // call (a lone query's scan, scan_one.hpp), the same operations row by row
  void (*validities)(const DecaySpec* specs, const MetaTable* meta, const std::uint32_t* rows, std::size_t n,
                     std::int64_t t, double* out);
  // rescoring: validity v = q * D_j(age) with D_j chosen per row (j = type[i]), then the
  // fused score; see ScoreArgs.
  void (*score)(const struct ScoreArgs& a, std::size_t begin, std::size_t end);
  // The certified plan's metadata pass for a group of queries: see BoundArgs.
  std::size_t (*bound_rows)(const BoundArgs& a, const MetaTable* meta, const std::uint32_t* rows, std::size_t n);
  // out[r * Gp + g] = sum_i QT[i * Gp + g] * xs[r][i] for nx int8 vectors xs[r] and g < Gp
  // (Gp a multiple of 8, at most 64): the queries transposed (d x Gp), so one pass over
  // them serves several vectors and all the queries.
  void (*dot_qt_i8)(const std::int8_t* const* xs, std::size_t nx, const float* QT, std::size_t Gp, std::size_t d,
                    float* out);
  // Exact integer form of dot_qt_i8 for queries quantised to int8:
  //   out[r * Gp + g] = sum_i xs[r][i] * q8[g][i]
  // with the queries in QU as ceil(d / 4) blocks of Gp x 4 unsigned bytes, q8 + 128
  // (QU[(b * Gp + g) * 4 + j] = q8[g][4 b + j] + 128; 128 for lanes g >= G, 0 past d: see
  // transpose_queries_s8). Null unless the CPU has AVX512-VNNI (variant "x86-64-v4-vnni"):
  // 64 multiply-adds per instruction where the float form does 16.
  void (*dot_qt_s8)(const std::int8_t* const* xs, std::size_t nx, const std::uint8_t* QU, std::size_t Gp,
                    std::size_t d, std::int32_t* out);
  // The same exact integer dots for one query, its int8 codes q8 (in [-127, 127], as
  // quantise_queries makes them) read contiguously, with q8_sum = sum_i q8[i] (the
  // caller's, once per query):
  //   out[r * stride] = sum_i xs[r][i] * q8[i]
  // (a lone query's rows). With AVX512-VNNI one vpdpbusd per 64 dimensions where
  // dot_qt_s8 spends one per 4 on 8 lanes; with AVX2 (every x86-64-v3 variant, where
  // dot_qt_s8 is null) vpmaddubsw + vpmaddwd per 32. Null in a build without AVX2.
  void (*dot_s8_1)(const std::int8_t* const* xs, std::size_t nx, const std::int8_t* q8, std::int32_t q8_sum,
                   std::size_t d, std::size_t stride, std::int32_t* out);
  // A where= filter's commonest leaves (user_columns.hpp), one bit per row r < n into
  // out[r / 64] (words past n's left as they are; the last one's high bits zero):
  //   bits_eq_i32:    x[r] == w                          (a string column's codes, one value)
  //   bits_lut_i32:   x[r] >= 0 && tbl[x[r]]             (several values; tbl covers every code)
  //   bits_range_i64: (!valid || valid[r]) && a <= x[r] <= b   (int64 and timestamp ranges)
  // Dispatched because the baseline (x86-64-v2) compiles these loops without AVX2, 2.1-2.4x
  // slower at 200k rows.
  void (*bits_eq_i32)(const std::int32_t* x, std::size_t n, std::int32_t w, std::uint64_t* out);
  void (*bits_lut_i32)(const std::int32_t* x, std::size_t n, const std::uint8_t* tbl, std::uint64_t* out);
  void (*bits_range_i64)(const std::int64_t* x, const std::uint8_t* valid, std::size_t n, std::int64_t a,
                         std::int64_t b, std::uint64_t* out);
};

// The layout dot_qt_i8 reads: G row-major queries Q (G x d) transposed into QT (d x Gp),
// lanes g >= G zero.
inline void transpose_queries(const float* Q, std::size_t G, std::size_t d, std::size_t Gp, float* QT) {
  for (std::size_t i = 0; i < d * Gp; ++i) QT[i] = 0.0f;
  for (std::size_t g = 0; g < G; ++g)
    for (std::size_t i = 0; i < d; ++i) QT[i * Gp + g] = Q[g * d + i];
}

// The layout dot_qt_s8 reads: G row-major int8 queries q8 (G x d) into QU, ceil(d/4) blocks
// of Gp x 4 unsigned bytes q8 + 128 (the unsigned operand of vpdpbusd, so the rows are the
// signed one and are read straight from memory); lanes g >= G hold 128 (q8 = 0), bytes past
// d hold 0, so a row's filler there adds nothing and its sum is taken over d only.
inline void transpose_queries_s8(const std::int8_t* q8, std::size_t G, std::size_t d, std::size_t Gp,
                                 std::uint8_t* QU) {
  const std::size_t nb = (d + 3) / 4;
  for (std::size_t b = 0; b < nb; ++b)
    for (std::size_t g = 0; g < Gp; ++g)
      for (std::size_t j = 0; j < 4; ++j) {
        const std::size_t i = 4 * b + j;
        QU[(b * Gp + g) * 4 + j] =
            i >= d ? 0 : static_cast<std::uint8_t>((g < G ? static_cast<int>(q8[g * d + i]) : 0) + 128);
      }
}

// Quantise G row-major queries Q (G x d) to int8 for dot_qt_s8: q = sq[g] q8 + r with
// sq[g] = max|q| / 127 (0 for a zero query, whose codes are 0), q8 = round(q / sq), and
// rn[g] >= |r|, the residual's norm rounded up.
inline void quantise_queries(const float* Q, std::size_t G, std::size_t d, std::int8_t* q8, double* sq,
                             double* rn) {
  for (std::size_t g = 0; g < G; ++g) {
    const float* q = Q + g * d;
    double mx = 0.0;
    for (std::size_t i = 0; i < d; ++i) mx = std::max(mx, static_cast<double>(std::fabs(q[i])));
    const double s = mx / 127.0;
    double r2 = 0.0;
    for (std::size_t i = 0; i < d; ++i) {
      double c = s > 0.0 ? std::nearbyint(static_cast<double>(q[i]) / s) : 0.0;
      c = std::min(127.0, std::max(-127.0, c));
      q8[g * d + i] = static_cast<std::int8_t>(c);
      const double r = static_cast<double>(q[i]) - s * c;
      r2 += r * r;
    }
    sq[g] = s;
    rn[g] = std::sqrt(r2) * (1.0 + 1e-9) + 1e-300;
  }
}

// The metadata pass of a certified group search (planner.hpp, run_group): for each row,
// per query g < G (arrays padded to Gp, a multiple of 8 at most 64, with neutral values:
// known_at = INT64_MIN, theta = +inf):
//   validity v = q_e * D_type(age), age = (t[g] - observed_at) / day (the engine's decay);
//   penalty p = 1 if in force (valid_from <= x1[g] && valid_to > x2[g], not deprecated in
//   latest mode), else fut_pen if not yet valid (valid_from > x1[g]), else out_pen; 0 unless
//   known at known_at[g], or if v < tau or v is NaN. The row's columns as ingested are read
//   (amendments ignored): p and b are upper bounds of the exact ones (columns.hpp);
//   bound b = (a[g] + b[g] v) p, kept for g when p > 0 and b >= theta[g].
// A row some query keeps is appended: kept[k] = row, best[k] = its largest bound, and at
// val / pen + k * Gp the Gp validities and penalties rounded up to float (penalty 0 where
// not kept). cnt[g] counts the rows kept for g. Rows whose type is masked out are skipped.
// Returns k, the number of rows kept (the output arrays hold room for n).
// For exponential decay the validity is computed in factorised form (one exp per row, see
// bound_rows in src/kernels_impl.hpp) and is an upper bound of the direct value, above it
// by at most ~1e-11 relative: v, b and the rows kept may exceed the direct computation's
// by that much, never fall below it. Tau is decided exactly either way. Callers use v and
// b only to decide what to score exactly.
struct BoundArgs {
  std::size_t Gp = 0;
  std::size_t G = 0;  // lanes that are queries (0: all Gp); the rest are padding
  const double* t = nullptr;
  const std::int64_t* known_at = nullptr;
  const std::int64_t* x1 = nullptr;
  const std::int64_t* x2 = nullptr;
  const double* theta = nullptr;
  const double* a = nullptr;
  const double* b = nullptr;
  double tau = 0.0;
  double out_pen = 0.0;
  double fut_pen = 0.0;
  bool latest = false;
  const DecaySpec* specs = nullptr;
  std::size_t n_specs = 0;  // specs[0 .. n_specs): the factorised exponential path's table is per type
  const std::uint8_t* type_mask = nullptr;  // null: every type
  std::size_t mask_n = 0;
  std::uint32_t* kept = nullptr;
  double* best = nullptr;
  float* val = nullptr;
  float* pen = nullptr;
  std::uint32_t* cnt = nullptr;
};

struct ScoreArgs {
  const float* similarity;       // n
  const std::int64_t* observed;  // n, µs
  const float* reliability;      // n or null (1.0)
  const std::int32_t* type;      // n or null (type 0)
  const std::int64_t* valid_from;  // n or null (no validity check)
  const std::int64_t* valid_to;    // n or null
  const std::uint8_t* deprecated;  // n or null
  const DecaySpec* specs;        // per type
  std::size_t n_types;
  std::int64_t t_query;
  int fusion;          // 0 product, 1 linear
  double alpha;        // linear weight of similarity
  double penalty;      // multiplier for items not valid at T or deprecated
  int invalid_policy;  // 0 penalize, 1 exclude (score = -inf), 2 include
  int future_policy;   // the same for items not yet valid (valid_from > T; needs valid_from)
  double tau;          // validity below tau: score = -inf
  float* out_score;    // n
  float* out_validity; // n or null
  // bit 1: a row's type code is outside [0, n_types); bit 2: a reliability outside (0, 1]
  // (or NaN). The outputs are then meaningless and the caller reports the row: checked
  // inside the pass rather than in extra passes over the columns.
  unsigned char* bad_type = nullptr;
};

// Chosen once, at first use.
const Kernels& kernels();
// All variants compiled into this build, best last; for tests and build_info.
int kernel_variants(const Kernels** out, int max);

}  // namespace chrono

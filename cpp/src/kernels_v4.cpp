// AVX-512 kernels (x86-64-v4), used only when the CPU reports AVX-512F/BW/DQ/VL; the
// "x86-64-v4-vnni" variant adds the int8 x int8 group dot (AVX512-VNNI) when present.
#define CHRONO_KNS v4
#include "kernels_impl.hpp"
#include <immintrin.h>

namespace chrono {
namespace v4 {

// dot_qt_s8 for R <= 4 rows and a fixed Gp <= 64 (J = ceil(Gp / 16) vectors of 16
// queries): per 4-dimension block, each row's 4 codes (signed) are broadcast straight from
// memory and multiplied into the Gp queries' 4 codes (unsigned, q8 + 128) with vpdpbusd,
// 64 multiply-adds per instruction; 128 * (the row's code sum) is taken off at the end.
// Exact in int32 for d <= 65,536 (|sum| <= 255 * 127 * d).
// The R x J accumulators are named variables, not an array: GCC 12 keeps an array of
// vpdpbusd accumulators in registers only by copying each one twice per instruction;
// unused ones (r >= R or j >= J) are compiled away.
#define CHRONO_DP(r, j)                                                                 \
  if constexpr (R > r && J > j) a##r##j = _mm512_dpbusd_epi32(a##r##j, q##j, xb)
#define CHRONO_ROW(r)                                                                   \
  if constexpr (R > r) {                                                                \
    std::int32_t w;                                                                     \
    if (partial) { w = 0; std::memcpy(&w, x##r + off, d % 4); }                         \
    else std::memcpy(&w, x##r + off, 4);                                                \
    const __m512i xb = _mm512_set1_epi32(w);                                            \
    CHRONO_DP(r, 0); CHRONO_DP(r, 1); CHRONO_DP(r, 2); CHRONO_DP(r, 3);                 \
  }
#define CHRONO_OUT(r, j)                                                                \
  if constexpr (R > r && J > j) _mm512_store_si512(tmp + (r * 4 + j) * 16, a##r##j)

// sum of d signed codes (vpdpbusd with unsigned ones)
__attribute__((target("avx512vnni"))) static inline std::int32_t code_sum(const std::int8_t* x, std::size_t d) {
  const __m512i ones = _mm512_set1_epi8(1);
  __m512i acc = _mm512_setzero_si512();
  std::size_t i = 0;
  for (; i + 64 <= d; i += 64) acc = _mm512_dpbusd_epi32(acc, ones, _mm512_loadu_si512(x + i));
  if (i < d) acc = _mm512_dpbusd_epi32(acc, ones, _mm512_maskz_loadu_epi8(~0ULL >> (64 - (d - i)), x + i));
  return _mm512_reduce_add_epi32(acc);
}

template <std::size_t Gp, std::size_t R>
__attribute__((target("avx512vnni"))) static void dot_qt_s8_n(const std::int8_t* const* xs, const std::uint8_t* QU,
                                                              std::size_t d, std::int32_t* out) {
  static_assert(R >= 1 && R <= 4 && Gp >= 1 && Gp <= 64, "dot_qt_s8_n: R <= 4 rows, Gp <= 64 queries");
  constexpr std::size_t J = (Gp + 15) / 16;
  constexpr bool kTail = Gp % 16 != 0;
  const __mmask16 tail = static_cast<__mmask16>(kTail ? (1u << (Gp % 16)) - 1u : 0xffffu);
  const __m512i z = _mm512_setzero_si512();
  __m512i a00 = z, a01 = z, a02 = z, a03 = z, a10 = z, a11 = z, a12 = z, a13 = z;
  __m512i a20 = z, a21 = z, a22 = z, a23 = z, a30 = z, a31 = z, a32 = z, a33 = z;
  const std::int8_t* x0 = xs[0];
  const std::int8_t* x1 = R > 1 ? xs[1] : nullptr;
  const std::int8_t* x2 = R > 2 ? xs[2] : nullptr;
  const std::int8_t* x3 = R > 3 ? xs[3] : nullptr;
  auto load = [&](const std::uint8_t* q, std::size_t j) {
    return (kTail && j + 1 == J) ? _mm512_maskz_loadu_epi32(tail, q + 64 * j) : _mm512_loadu_si512(q + 64 * j);
  };
#define CHRONO_BLOCK(b, P)                                                              \
  {                                                                                     \
    constexpr bool partial = P;                                                         \
    const std::uint8_t* q = QU + (b) * Gp * 4;                                          \
    const std::size_t off = 4 * (b);                                                    \
    const __m512i q0 = load(q, 0);                                                      \
    const __m512i q1 = J > 1 ? load(q, 1) : z;                                          \
    const __m512i q2 = J > 2 ? load(q, 2) : z;                                          \
    const __m512i q3 = J > 3 ? load(q, 3) : z;                                          \
    CHRONO_ROW(0) CHRONO_ROW(1) CHRONO_ROW(2) CHRONO_ROW(3)                             \
  }
  // The last, partial block first (its query bytes past d are 0, so the row's filler adds
  // nothing): after the main loop it made GCC copy every accumulator in the loop.
  const std::size_t nb = d / 4;
  if (d % 4) CHRONO_BLOCK(nb, true)
  for (std::size_t b = 0; b < nb; ++b) CHRONO_BLOCK(b, false)
#undef CHRONO_BLOCK
  alignas(64) std::int32_t tmp[R * 4 * 16];
  CHRONO_OUT(0, 0); CHRONO_OUT(0, 1); CHRONO_OUT(0, 2); CHRONO_OUT(0, 3);
  CHRONO_OUT(1, 0); CHRONO_OUT(1, 1); CHRONO_OUT(1, 2); CHRONO_OUT(1, 3);
  CHRONO_OUT(2, 0); CHRONO_OUT(2, 1); CHRONO_OUT(2, 2); CHRONO_OUT(2, 3);
  CHRONO_OUT(3, 0); CHRONO_OUT(3, 1); CHRONO_OUT(3, 2); CHRONO_OUT(3, 3);
  for (std::size_t r = 0; r < R; ++r) {
    const std::int32_t c = 128 * code_sum(xs[r], d);
    for (std::size_t g = 0; g < Gp; ++g) out[r * Gp + g] = tmp[r * 64 + g] - c;
  }
}
#undef CHRONO_DP
#undef CHRONO_ROW
#undef CHRONO_OUT

template <std::size_t Gp>
__attribute__((target("avx512vnni"))) static void dot_qt_s8_g(const std::int8_t* const* xs, std::size_t nx,
                                                              const std::uint8_t* QU, std::size_t d, std::int32_t* out) {
  std::size_t r = 0;
  for (; r + 4 <= nx; r += 4) dot_qt_s8_n<Gp, 4>(xs + r, QU, d, out + r * Gp);
  for (; r < nx; ++r) dot_qt_s8_n<Gp, 1>(xs + r, QU, d, out + r * Gp);
}

__attribute__((target("avx512vnni"))) static void dot_qt_s8(const std::int8_t* const* xs, std::size_t nx,
                                                            const std::uint8_t* QU, std::size_t Gp, std::size_t d,
                                                            std::int32_t* out) {
  if (!with_group_size(Gp, [&](auto gp) { dot_qt_s8_g<decltype(gp)::value>(xs, nx, QU, d, out); }))
    for (std::size_t g = 0; g < nx * Gp; ++g) out[g] = 0;
}

// The sum of 16 int32 lanes (through memory: GCC 12's _mm512_reduce_add_epi32 and the
// 512-bit shuffles warn of an uninitialised operand inside their headers).
__attribute__((target("avx512f"))) static inline std::int32_t lane_sum(__m512i v) {
  alignas(64) std::int32_t t[16];
  _mm512_store_si512(t, v);
  std::int32_t s = 0;
  for (std::int32_t x : t) s += x;
  return s;
}

// dot_s8_1: one query's exact integer dots. vpdpbusd multiplies unsigned by signed bytes,
// so the row's codes are made unsigned (c ^ 0x80 = c + 128) and the query's stay signed:
//   sum (c + 128) q8 = <c, q8> + 128 sum q8,
// the second term (the caller's q8_sum) taken off. Rows and query are read with masked
// loads past d, so nothing beyond either is touched; the query's masked bytes are 0, so a
// row's flipped filler adds nothing. Exact in int32 for d <= 65,536.
__attribute__((target("avx512vnni"))) static void dot_s8_1(const std::int8_t* const* xs, std::size_t nx,
                                                           const std::int8_t* q8, std::int32_t q8_sum,
                                                           std::size_t d, std::size_t stride, std::int32_t* out) {
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  const std::size_t full = d / 64, rest = d % 64;
  const __mmask64 tail = rest ? (~0ULL >> (64 - rest)) : 0;
  const std::int32_t corr = 128 * q8_sum;
  // rows two at a time: each query load serves both, and the two accumulator chains
  // overlap (one row at a time was slower in alternating runs of a lone query's 1% scan)
  std::size_t r = 0;
  for (; r + 2 <= nx; r += 2) {
    const std::int8_t* x0 = xs[r];
    const std::int8_t* x1 = xs[r + 1];
    __m512i a0 = _mm512_setzero_si512(), a1 = _mm512_setzero_si512();
    for (std::size_t b = 0; b < full; ++b) {
      const __m512i q = _mm512_loadu_si512(q8 + 64 * b);
      a0 = _mm512_dpbusd_epi32(a0, _mm512_xor_si512(_mm512_loadu_si512(x0 + 64 * b), flip), q);
      a1 = _mm512_dpbusd_epi32(a1, _mm512_xor_si512(_mm512_loadu_si512(x1 + 64 * b), flip), q);
    }
    if (rest) {
      const __m512i q = _mm512_maskz_loadu_epi8(tail, q8 + 64 * full);
      a0 = _mm512_dpbusd_epi32(a0, _mm512_xor_si512(_mm512_maskz_loadu_epi8(tail, x0 + 64 * full), flip), q);
      a1 = _mm512_dpbusd_epi32(a1, _mm512_xor_si512(_mm512_maskz_loadu_epi8(tail, x1 + 64 * full), flip), q);
    }
    out[r * stride] = lane_sum(a0) - corr;
    out[(r + 1) * stride] = lane_sum(a1) - corr;
  }
  if (r < nx) {  // the odd last row
    const std::int8_t* x = xs[r];
    __m512i acc = _mm512_setzero_si512();
    for (std::size_t b = 0; b < full; ++b)
      acc = _mm512_dpbusd_epi32(acc, _mm512_xor_si512(_mm512_loadu_si512(x + 64 * b), flip),
                                _mm512_loadu_si512(q8 + 64 * b));
    if (rest)
      acc = _mm512_dpbusd_epi32(acc, _mm512_xor_si512(_mm512_maskz_loadu_epi8(tail, x + 64 * full), flip),
                                _mm512_maskz_loadu_epi8(tail, q8 + 64 * full));
    out[r * stride] = lane_sum(acc) - corr;
  }
}

}  // namespace v4

extern const Kernels kKernelsV4 = v4::make_kernels("x86-64-v4");
extern const Kernels kKernelsV4Vnni = v4::make_kernels("x86-64-v4-vnni", v4::dot_qt_s8, v4::dot_s8_1);
}  // namespace chrono

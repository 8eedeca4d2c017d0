// AVX-512 kernels (x86-64-v4), used only when the CPU reports AVX-512F/BW/DQ/VL; the
// "x86-64-v4-vnni" variant adds the int8 x int8 group dot (AVX512-VNNI) when present.
#define CHRONO_KNS v4
#include "kernels_impl.hpp"
#include <immintrin.h>

namespace chrono {
namespace v4 {

// dot_qt_s8 for R rows and a fixed Gp: per 4-dimension block, each row's 4 codes are
// broadcast (as unsigned: x ^ 0x80 = x + 128) and multiplied into the Gp queries' 4 codes
// with vpdpbusd, 64 multiply-adds per instruction; 128 * qsum[g] is taken off at the end.
// Exact in int32 for d <= 65,536 (|sum| <= 255 * 127 * d).
// One 4-dimension block: acc[r][j] += (xw[r] as 4 unsigned bytes) . (queries 16 j .. 16 j + 15).
template <std::size_t Gp, std::size_t R>
__attribute__((target("avx512vnni"), always_inline)) static inline void dot_qt_s8_block(
    __m512i (&acc)[R][(Gp + 15) / 16], const std::int8_t* q, const std::uint32_t* xw, __mmask16 tail) {
  constexpr std::size_t J = (Gp + 15) / 16;
  constexpr bool kTail = Gp % 16 != 0;
  __m512i qv[J];
  for (std::size_t j = 0; j < J; ++j)
    qv[j] = (kTail && j + 1 == J) ? _mm512_maskz_loadu_epi32(tail, q + 64 * j) : _mm512_loadu_si512(q + 64 * j);
  for (std::size_t r = 0; r < R; ++r) {
    const __m512i xb = _mm512_set1_epi32(static_cast<int>(xw[r] ^ 0x80808080u));
    for (std::size_t j = 0; j < J; ++j) acc[r][j] = _mm512_dpbusd_epi32(acc[r][j], xb, qv[j]);
  }
}

template <std::size_t Gp, std::size_t R>
__attribute__((target("avx512vnni"))) static void dot_qt_s8_n(const std::int8_t* const* xs, const std::int8_t* QT8,
                                                              const std::int32_t* qsum, std::size_t d,
                                                              std::int32_t* out) {
  constexpr std::size_t J = (Gp + 15) / 16;
  constexpr bool kTail = Gp % 16 != 0;
  const __mmask16 tail = static_cast<__mmask16>(kTail ? (1u << (Gp % 16)) - 1u : 0xffffu);
  __m512i acc[R][J];
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t j = 0; j < J; ++j) acc[r][j] = _mm512_setzero_si512();
  const std::size_t nb = d / 4;
  std::uint32_t xw[R];
  for (std::size_t b = 0; b < nb; ++b) {
    for (std::size_t r = 0; r < R; ++r) std::memcpy(&xw[r], xs[r] + 4 * b, 4);
    dot_qt_s8_block<Gp, R>(acc, QT8 + b * Gp * 4, xw, tail);
  }
  if (d % 4) {  // the last partial block: its padded query codes are 0, so the row's filler is irrelevant
    for (std::size_t r = 0; r < R; ++r) { xw[r] = 0; std::memcpy(&xw[r], xs[r] + 4 * nb, d % 4); }
    dot_qt_s8_block<Gp, R>(acc, QT8 + nb * Gp * 4, xw, tail);
  }
  alignas(64) std::int32_t tmp[J * 16];
  for (std::size_t r = 0; r < R; ++r) {
    for (std::size_t j = 0; j < J; ++j) _mm512_store_si512(tmp + 16 * j, acc[r][j]);
    for (std::size_t g = 0; g < Gp; ++g) out[r * Gp + g] = tmp[g] - 128 * qsum[g];
  }
}

template <std::size_t Gp>
__attribute__((target("avx512vnni"))) static void dot_qt_s8_g(const std::int8_t* const* xs, std::size_t nx,
                                                              const std::int8_t* QT8, const std::int32_t* qsum,
                                                              std::size_t d, std::int32_t* out) {
  std::size_t r = 0;
  for (; r + 4 <= nx; r += 4) dot_qt_s8_n<Gp, 4>(xs + r, QT8, qsum, d, out + r * Gp);
  for (; r < nx; ++r) dot_qt_s8_n<Gp, 1>(xs + r, QT8, qsum, d, out + r * Gp);
}

__attribute__((target("avx512vnni"))) static void dot_qt_s8(const std::int8_t* const* xs, std::size_t nx,
                                                            const std::int8_t* QT8, const std::int32_t* qsum,
                                                            std::size_t Gp, std::size_t d, std::int32_t* out) {
  switch (Gp) {
    case 8: dot_qt_s8_g<8>(xs, nx, QT8, qsum, d, out); break;
    case 16: dot_qt_s8_g<16>(xs, nx, QT8, qsum, d, out); break;
    case 24: dot_qt_s8_g<24>(xs, nx, QT8, qsum, d, out); break;
    case 32: dot_qt_s8_g<32>(xs, nx, QT8, qsum, d, out); break;
    case 40: dot_qt_s8_g<40>(xs, nx, QT8, qsum, d, out); break;
    case 48: dot_qt_s8_g<48>(xs, nx, QT8, qsum, d, out); break;
    case 56: dot_qt_s8_g<56>(xs, nx, QT8, qsum, d, out); break;
    case 64: dot_qt_s8_g<64>(xs, nx, QT8, qsum, d, out); break;
    default: for (std::size_t g = 0; g < nx * Gp; ++g) out[g] = 0;  // callers pad to a multiple of 8
  }
}

}  // namespace v4

extern const Kernels kKernelsV4 = {"x86-64-v4", v4::dot, v4::dot_many, v4::dot_i8, v4::dot_many_i8, v4::dot_i8_some,
                                   v4::l2sq, v4::decay_batch, v4::score, v4::bound_rows, v4::dot_qt_i8, nullptr};
extern const Kernels kKernelsV4Vnni = {"x86-64-v4-vnni", v4::dot, v4::dot_many, v4::dot_i8, v4::dot_many_i8,
                                       v4::dot_i8_some, v4::l2sq, v4::decay_batch, v4::score, v4::bound_rows,
                                       v4::dot_qt_i8, v4::dot_qt_s8};
}  // namespace chrono

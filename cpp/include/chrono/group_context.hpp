// The state a group of queries shares while the planner scans for it (planner.hpp,
// run_group): the group's constants (GroupContext, its setup), the float thresholds both
// scan orders test against (Thresholds, the one threshold refresh), and the per-thread work
// buffers (GroupBuffers).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>
#include "huge_pages.hpp"
#include "kernels.hpp"
#include "searcher.hpp"

namespace chrono {

// A float no smaller than x (bounds stay bounds after rounding).
inline float round_up(double x) {
  float f = static_cast<float>(x);
  return static_cast<double>(f) < x ? std::nextafter(f, INFINITY) : f;
}

// A float no larger than theta lowered by a relative and an absolute margin: the float
// tests of the scans only gate the exact (double) comparison in offer(), never replace it.
inline float lowered_threshold(double theta) {
  const double lowered = theta - 1e-5 * std::fabs(theta) - 1e-6;
  const float f = static_cast<float>(lowered);
  return static_cast<double>(f) > lowered ? std::nextafter(f, -INFINITY) : f;
}

// run_group's work buffers, one set per thread, reused across groups (fresh multi-MB
// buffers per group cost page faults; the buffers only grow: shrinking and regrowing
// would zero-fill them every group).
struct GroupBuffers {
  std::vector<std::uint32_t> rows;   // the stage's rows (group_rows)
  std::vector<std::uint32_t> kept;   // bound pass: the rows some query can still use,
  std::vector<double> best;          //   their largest bound over the queries,
  huge_vector<float> val, pen;       //   per kept row (stride Gp) its validities and penalties
  std::vector<std::uint32_t> order;  // the kept rows' visiting order, best bound first
  std::vector<std::int8_t> Q8;       // the queries quantised to int8 (dot_qt_s8)
  std::vector<std::uint8_t> QU;      //   and in dot_qt_s8's layout
  std::vector<std::uint64_t> bits;   // a bitmap over the rows (storage_order), left all zero

  static GroupBuffers& this_thread() {
    thread_local GroupBuffers b;
    return b;
  }
  // Do not keep more than ~64 MB per thread between groups.
  void trim() {
    if (val.capacity() > (std::size_t{16} << 20)) {
      for (auto* v : {&val, &pen}) { v->clear(); v->shrink_to_fit(); }
    }
  }
};

// A row's compact-copy constants for the caps: cs, ce in double; in float cs, ce rounded up
// and the residual addend (XN + ce) / cs rounded up (cs = 0: codes 0, |x| <= ce).
struct CompactRow { double cs, ce; float fcs, fce, fadd; };

// Setup: the group's constants of the scoring pass, per query padded to 64 lanes. The
// queries row-major (Q) and transposed (QT), and per query: bound = (A + B v) pen; product
// score = s+ v pen; linear = (E s + B2 v) pen.
// Where the kernels have exact int8 dots (a group: Kernels::dot_qt_s8, AVX512-VNNI; a lone
// query: Kernels::dot_s8_1, AVX2 or AVX512-VNNI), batched compact caps use the queries
// quantised to int8: q = SQ q8 + r with |r| <= RQ, and the row's compact copy x = cs c + e with
// |e| <= ce and |x| <= XN, so
//   <q, x> <= cs SQ <q8, c> + RQ (XN + ce) + |q| ce,
// the usual cap cs raw + |q| ce with raw = SQ <q8, c> + RQ (XN + ce) / cs (exact integer
// dots; the compact copy's ce already allows for a float dot's rounding).
struct GroupContext {
  GroupContext(std::vector<Searcher>& queries, const Store& store, GroupBuffers& buffers)
      : qs(queries), meta(store.meta()), specs(store.decay_specs()), k(kernels()), ann(store.ann()),
        buf(buffers), G(queries.size()), d(store.dim()), Gp((G + 7) / 8 * 8), dense(queries[0].uses_dot()),
        product(queries[0].product()), s8(dense && d <= 65536 && (G == 1 ? k.dot_s8_1 != nullptr : k.dot_qt_s8 != nullptr)),
        mode(queries[0].params().time.mode), p0(queries[0].params()), active(G, 1), Q(G * d),
        XN(store.max_norm() * (1.0 + 1e-6) + 1e-12) {
    set_queries();
    set_lanes();
  }

  // Stage 0 decides, per query, between this scan and the graph plan from its candidate
  // count(g) (Searcher::choose_plan); a query sent to the graph plan is finished there.
  template <class Count>
  void choose_plans(int stage, Count&& count) {
    if (stage == 0)
      for (std::size_t g = 0; g < G; ++g) active[g] = qs[g].choose_plan(count(g));
  }

  CompactRow compact_row(std::uint32_t row) const {
    const double cs = ann.compact_scale(row), ce = ann.compact_err(row);
    return CompactRow{cs, ce, static_cast<float>(cs), round_up(ce), cs > 0.0 ? round_up((XN + ce) / cs) : 0.0f};
  }
  // Query g's float cap from the exact integer dot D (s8; see BoundsFirstScan::finish_s8),
  // and in double.
  float cap_s8(std::size_t g, std::int32_t D, const CompactRow& c) const {
    const float a = SQf[g] * static_cast<float>(D), b = RQf[g] * c.fadd, e = NQf[g] * c.fce;
    return c.fcs * (a + b) + e + 1e-6f * (c.fcs * (std::fabs(a) + b) + e);
  }
  double cap_s8_exact(std::size_t g, std::int32_t D, const CompactRow& c) const {
    return c.cs * SQ[g] * static_cast<double>(D) + RQ[g] * (XN + c.ce) + NQ[g] * c.ce;
  }
  // The exact integer dots (s8) of n compact rows with the group's queries, out[r * Gp + g]:
  // a lone query's by its own kernel over its contiguous codes, a group's by dot_qt_s8.
  void dots_s8(const std::int8_t* const* xs, std::size_t n, std::int32_t* out) const {
    if (G == 1) k.dot_s8_1(xs, n, buf.Q8.data(), q8_sum, d, Gp, out);
    else k.dot_qt_s8(xs, n, buf.QU.data(), Gp, d, out);
  }

  std::vector<Searcher>& qs;
  const MetaTable& meta;
  const std::vector<DecaySpec>& specs;
  const Kernels& k;
  const AnnIndex& ann;
  GroupBuffers& buf;
  const std::size_t G, d, Gp;  // queries, dimension, lanes (G padded to a multiple of 8)
  const bool dense, product, s8;
  const Mode mode;
  const SearchParams& p0;    // the parameters the group shares (all but the times)
  std::vector<char> active;  // per query: still on the certified scan
  std::vector<float> Q;  // the queries row-major (G x d)
  // The queries transposed (d x Gp) for dot_qt_i8, made at the first call: the scans that
  // take the int8 kernels (s8) and a lone query's scan never read them.
  const float* qt() {
    if (QT.empty()) {
      QT.resize(d * Gp);
      transpose_queries(Q.data(), G, d, Gp, QT.data());
    }
    return QT.data();
  }
  double SQ[64] = {}, RQ[64] = {};  // int8 queries: scale and residual norm (s8)
  std::int32_t q8_sum = 0;          // the first int8 query's code sum (dots_s8)
  const double XN;                  // the largest vector norm, rounded up
  alignas(64) float A[64], B[64], E[64], B2[64];
  alignas(64) double Ad[64] = {}, Bd[64] = {};  // the bound's coefficients unrounded (bound pass)
  double NQ[64];  // |q| rounded up (the compact copy's error term scales with it)
  alignas(64) float SQf[64], RQf[64], NQf[64];  // float copies for the s8 batches (finish_s8)
  // per query, padded to 64 lanes (never known, never in force): in force <=> valid_from <= X1
  // && valid_to > X2 (and not deprecated in latest mode); known <=> ingested_at <= KA < retracted_at
  alignas(64) micros X1[64], X2[64], KA[64];

 private:
  std::vector<float> QT;  // qt()
  void set_queries() {
    for (std::size_t g = 0; g < G; ++g)
      std::copy(qs[g].query(), qs[g].query() + d, Q.begin() + static_cast<std::ptrdiff_t>(g * d));
    if (s8) {
      buf.Q8.resize(G * d);
      quantise_queries(Q.data(), G, d, buf.Q8.data(), SQ, RQ);
      if (G > 1) {  // dot_qt_s8's layout (a lone query's kernel reads Q8)
        buf.QU.resize((d + 3) / 4 * Gp * 4);
        transpose_queries_s8(buf.Q8.data(), G, d, Gp, buf.QU.data());
      }
      for (std::size_t i = 0; i < d; ++i) q8_sum += buf.Q8[i];  // the first query's (dots_s8, G = 1)
    }
    for (std::size_t g = 0; g < G; ++g) {
      double n2 = 0.0;
      for (std::size_t i = 0; i < d; ++i) n2 += static_cast<double>(Q[g * d + i]) * Q[g * d + i];
      NQ[g] = std::sqrt(n2) * (1.0 + 1e-12);
    }
    for (std::size_t g = 0; g < G; ++g) {
      SQf[g] = static_cast<float>(SQ[g]);
      RQf[g] = round_up(RQ[g]);
      NQf[g] = round_up(NQ[g]);
    }
  }
  void set_lanes() {
    for (std::size_t g = 0; g < G; ++g) {
      double a, b, c, e, b2;
      qs[g].linear_form(a, b, c, e, b2);
      Ad[g] = a; Bd[g] = b;
      A[g] = round_up(a); B[g] = round_up(b); E[g] = round_up(e); B2[g] = round_up(b2);
    }
    for (std::size_t g = 0; g < 64; ++g) { KA[g] = kOpenStart; X1[g] = kOpenStart; X2[g] = kOpenEnd; }
    for (std::size_t g = 0; g < G; ++g) {
      const TimeContext& tc = qs[g].params().time;
      KA[g] = tc.known_at;
      switch (mode) {
        case Mode::Latest: case Mode::AsOf: X1[g] = tc.t; X2[g] = tc.t; break;
        case Mode::Window:
          if (tc.win_end == kOpenStart) { X1[g] = kOpenStart; X2[g] = kOpenEnd; }  // empty
          else { X1[g] = tc.win_end - 1; X2[g] = tc.win_start; }
          break;
        case Mode::All: X1[g] = kOpenEnd; X2[g] = kOpenStart; break;
      }
    }
  }
};

// The threshold refresh, shared by both scan orders: each active query's theta as a float,
// lowered by a relative and an absolute margin and rounded down (lowered_threshold), so
// that the float tests of the scans only gate the exact (double) comparison in
// Searcher::offer, never replace it. Lanes of inactive queries hold +inf and ON = 0.
// min_th: the least threshold of the active queries. A row whose bound is below it is
// needed by none of them (in the bounds-first order, rows come best bound first, so most
// of the tail goes this way without reading its validities).
struct Thresholds {
  Thresholds(const std::vector<Searcher>& qs, const std::vector<char>& active) : qs_(qs) {
    for (std::size_t g = 0; g < 64; ++g) { TH[g] = INFINITY; ON[g] = 0.0f; }
    for (std::size_t g = 0; g < active.size(); ++g) if (active[g]) act.push_back(g);
    for (std::size_t g : act) ON[g] = 1.0f;
    for (std::size_t g : act) refresh(g);
  }
  // Whenever query g's theta may have moved (it scored a row).
  void refresh(std::size_t g) {
    TH[g] = lowered_threshold(qs_[g].current_theta());
    min_th = INFINITY;
    for (std::size_t a : act) min_th = std::min(min_th, TH[a]);
  }

  alignas(64) float TH[64];
  alignas(64) float ON[64];  // 1 for an active query, else 0
  float min_th = INFINITY;
  std::vector<std::size_t> act;  // the active queries

 private:
  const std::vector<Searcher>& qs_;
};

}  // namespace chrono

// Decay-weighted seeded personalised PageRank over a temporal graph (layer 2, paper III-C).
//
// The graph is a CSR over nodes (entities): node u's edges (u, r, v, t) sorted by t. At
// query time T an edge is live when t < T and its weight
//     w = q_e * c[r] * exp(-beta[r] * (T - t))
// (q_e the fact's reliability, c and beta the confidence and decay of the rule that reads
// relation r towards the query's head relation) is at least tau; weaker edges are pruned,
// never traversed. Random-walk transitions follow the live weights.
//
// PPR is computed by forward push (Andersen, Chung & Lang 2006): residual mass r(u) above
// eps is settled (alpha of it stays at u, the rest is spread over u's live edges in
// proportion to w); mass at a node without live edges stays there. The result is within
// eps * (sum of weights) of exact PPR per node, and the work is bounded by 1 / (alpha * eps)
// pushes regardless of graph size: the "tau pruning during the power iteration".
//
// Evidence: each live edge carries the flow p(u) * w / W(u); retrieve() returns the k facts
// with the largest flow, with their provenance (edge index, weight).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <stdexcept>
#include <unordered_map>
#include <vector>

namespace chrono {

struct TemporalCsr {
  const std::int64_t* ptr = nullptr;   // n_nodes + 1
  const std::int32_t* rel = nullptr;   // per edge
  const std::int32_t* dst = nullptr;
  const std::int64_t* time = nullptr;  // sorted within each node
  const float* quality = nullptr;      // q_e per edge (null: 1)
  std::size_t n_nodes = 0;
  std::size_t n_rel = 0;
};

struct PprOptions {
  std::int64_t T = 0;
  double alpha = 0.15;   // restart probability
  double eps = 1e-6;     // push threshold on residual mass
  double tau = 1e-3;     // edge weight threshold
  std::size_t max_pushes = 10'000'000;
};

struct PprResult {
  std::vector<std::int32_t> node;   // nodes with mass, any order
  std::vector<double> mass;
  std::size_t pushes = 0;
  std::size_t edges_scanned = 0;
};

class DecayPpr {
 public:
  DecayPpr(const TemporalCsr& g, const double* conf, const double* beta) : g_(g), conf_(conf), beta_(beta) {}

  // live edge range of u at T: [ptr[u], end) with time < T
  std::int64_t live_end(std::int32_t u, std::int64_t T) const {
    const std::int64_t* b = g_.time + g_.ptr[u];
    const std::int64_t* e = g_.time + g_.ptr[u + 1];
    return g_.ptr[u] + (std::lower_bound(b, e, T) - b);
  }

  double weight(std::int64_t e, std::int64_t T) const {
    const std::int32_t r = g_.rel[e];
    const double c = conf_[r];
    if (c <= 0.0) return 0.0;
    const double q = g_.quality ? static_cast<double>(g_.quality[e]) : 1.0;
    return q * c * std::exp(-beta_[r] * static_cast<double>(T - g_.time[e]));
  }

  PprResult run(const std::int32_t* seeds, const double* seed_mass, std::size_t n_seeds, const PprOptions& o) const {
    if (!(o.alpha > 0.0 && o.alpha < 1.0)) throw std::invalid_argument("alpha must be in (0, 1)");
    if (!(o.eps > 0.0)) throw std::invalid_argument("eps must be > 0");
    if (!(o.tau >= 0.0)) throw std::invalid_argument("tau must be >= 0");
    std::unordered_map<std::int32_t, double> p, r;
    std::deque<std::int32_t> queue;
    double total = 0.0;
    for (std::size_t i = 0; i < n_seeds; ++i) {
      if (seeds[i] < 0 || static_cast<std::size_t>(seeds[i]) >= g_.n_nodes)
        throw std::invalid_argument("seed " + std::to_string(seeds[i]) + " is not a node");
      if (!(seed_mass[i] >= 0.0)) throw std::invalid_argument("seed mass must be >= 0");
      total += seed_mass[i];
    }
    if (!(total > 0.0)) throw std::invalid_argument("seed mass must sum to > 0");
    for (std::size_t i = 0; i < n_seeds; ++i) {
      double& x = r[seeds[i]];
      const bool was = x > o.eps;
      x += seed_mass[i] / total;
      if (!was && x > o.eps) queue.push_back(seeds[i]);
    }
    PprResult out;
    std::vector<double> w;
    while (!queue.empty() && out.pushes < o.max_pushes) {
      const std::int32_t u = queue.front();
      queue.pop_front();
      double& ru = r[u];
      const double mass = ru;
      if (!(mass > o.eps)) continue;
      ru = 0.0;
      ++out.pushes;
      const std::int64_t b = g_.ptr[u], e = live_end(u, o.T);
      w.resize(static_cast<std::size_t>(e - b));
      double W = 0.0;
      for (std::int64_t k = b; k < e; ++k) {
        double x = weight(k, o.T);
        if (x < o.tau) x = 0.0;
        w[static_cast<std::size_t>(k - b)] = x;
        W += x;
      }
      out.edges_scanned += static_cast<std::size_t>(e - b);
      if (!(W > 0.0)) {  // no live edge: the mass stays
        p[u] += mass;
        continue;
      }
      p[u] += o.alpha * mass;
      const double spread = (1.0 - o.alpha) * mass / W;
      for (std::int64_t k = b; k < e; ++k) {
        const double x = w[static_cast<std::size_t>(k - b)];
        if (x == 0.0) continue;
        const std::int32_t v = g_.dst[k];
        double& rv = r[v];
        const bool was = rv > o.eps;
        rv += spread * x;
        if (!was && rv > o.eps) queue.push_back(v);
      }
    }
    // unsettled residual stays where it is (it is below eps per node)
    for (const auto& kv : r) if (kv.second > 0.0) p[kv.first] += kv.second;
    out.node.reserve(p.size());
    out.mass.reserve(p.size());
    for (const auto& kv : p) {
      out.node.push_back(kv.first);
      out.mass.push_back(kv.second);
    }
    return out;
  }

  // The k live edges with the largest flow p(u) * w / W(u) out of the nodes with mass.
  void top_edges(const PprResult& pr, const PprOptions& o, std::size_t k, std::vector<std::int64_t>& edge,
                 std::vector<double>& flow, std::vector<double>& wt) const {
    struct Cand { double flow; std::int64_t e; double w; };
    std::vector<Cand> c;
    for (std::size_t i = 0; i < pr.node.size(); ++i) {
      const std::int32_t u = pr.node[i];
      const std::int64_t b = g_.ptr[u], e = live_end(u, o.T);
      double W = 0.0;
      for (std::int64_t j = b; j < e; ++j) { double x = weight(j, o.T); if (x >= o.tau) W += x; }
      if (!(W > 0.0)) continue;
      for (std::int64_t j = b; j < e; ++j) {
        const double x = weight(j, o.T);
        if (x < o.tau) continue;
        c.push_back({pr.mass[i] * x / W, j, x});
      }
    }
    const std::size_t m = std::min(k, c.size());
    auto better = [](const Cand& a, const Cand& b) { return a.flow > b.flow || (a.flow == b.flow && a.e < b.e); };
    std::partial_sort(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(m), c.end(), better);
    edge.resize(m); flow.resize(m); wt.resize(m);
    for (std::size_t i = 0; i < m; ++i) { edge[i] = c[i].e; flow[i] = c[i].flow; wt[i] = c[i].w; }
  }

 private:
  TemporalCsr g_;
  const double* conf_;
  const double* beta_;
};

}  // namespace chrono

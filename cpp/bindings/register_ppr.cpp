// Decay-weighted seeded PPR over a temporal graph (chrono/ppr.hpp): arrays in, arrays out.
#include <optional>
#include <pybind11/stl.h>
#include "chrono/ppr.hpp"
#include "common.hpp"
#include "register.hpp"

using namespace chrono;

void register_ppr(py::module_& m) {
  m.def(
      "ppr",
      [](carray<std::int64_t> ptr, carray<std::int32_t> rel, carray<std::int32_t> dst, carray<std::int64_t> time,
         std::optional<carray<float>> quality, carray<double> conf, carray<double> beta, carray<std::int32_t> seeds,
         carray<double> seed_mass, std::int64_t T, double alpha, double eps, double tau, std::size_t k) {
        if (ptr.size() < 1) throw std::invalid_argument("ptr must have n_nodes + 1 entries");
        TemporalCsr g;
        g.n_nodes = static_cast<std::size_t>(ptr.size() - 1);
        g.ptr = ptr.data();
        const std::size_t n_edges = static_cast<std::size_t>(rel.size());
        if (g.ptr[0] != 0 || static_cast<std::size_t>(g.ptr[g.n_nodes]) != n_edges)
          throw std::invalid_argument("ptr must start at 0 and end at the number of edges");
        for (std::size_t u = 0; u < g.n_nodes; ++u)
          if (g.ptr[u + 1] < g.ptr[u]) throw std::invalid_argument("ptr must be non-decreasing");
        g.rel = rel.data();
        g.dst = checked(dst, n_edges, "dst");
        g.time = checked(time, n_edges, "time");
        g.quality = checked(quality, n_edges, "quality");
        g.n_rel = static_cast<std::size_t>(conf.size());
        if (static_cast<std::size_t>(beta.size()) != g.n_rel) throw std::invalid_argument("conf and beta differ in length");
        for (std::size_t e = 0; e < n_edges; ++e) {
          if (g.rel[e] < 0 || static_cast<std::size_t>(g.rel[e]) >= g.n_rel)
            throw std::invalid_argument("relation out of range at edge " + std::to_string(e));
          if (g.dst[e] < 0 || static_cast<std::size_t>(g.dst[e]) >= g.n_nodes)
            throw std::invalid_argument("dst out of range at edge " + std::to_string(e));
        }
        if (seeds.size() != seed_mass.size()) throw std::invalid_argument("seeds and seed_mass differ in length");
        PprOptions o;
        o.T = T;
        o.alpha = alpha;
        o.eps = eps;
        o.tau = tau;
        DecayPpr ppr(g, conf.data(), beta.data());
        PprResult res;
        std::vector<std::int64_t> edge;
        std::vector<double> flow, wt;
        {
          py::gil_scoped_release nogil;
          res = ppr.run(seeds.data(), seed_mass.data(), static_cast<std::size_t>(seeds.size()), o);
          ppr.top_edges(res, o, k, edge, flow, wt);
        }
        py::dict out;
        out["node"] = py::array_t<std::int32_t>(static_cast<py::ssize_t>(res.node.size()), res.node.data());
        out["mass"] = py::array_t<double>(static_cast<py::ssize_t>(res.mass.size()), res.mass.data());
        out["edge"] = py::array_t<std::int64_t>(static_cast<py::ssize_t>(edge.size()), edge.data());
        out["flow"] = py::array_t<double>(static_cast<py::ssize_t>(flow.size()), flow.data());
        out["weight"] = py::array_t<double>(static_cast<py::ssize_t>(wt.size()), wt.data());
        out["pushes"] = res.pushes;
        out["edges_scanned"] = res.edges_scanned;
        return out;
      },
      py::arg("ptr"), py::arg("rel"), py::arg("dst"), py::arg("time"), py::arg("quality"), py::arg("conf"),
      py::arg("beta"), py::arg("seeds"), py::arg("seed_mass"), py::arg("T"), py::arg("alpha") = 0.15,
      py::arg("eps") = 1e-6, py::arg("tau") = 1e-3, py::arg("k") = 50);
}

// ce.score's kernel: rescoring candidates from any retriever (Arrow/NumPy in, arrays out).
#include <optional>
#include <pybind11/stl.h>
#include "chrono/ann_index.hpp"
#include "chrono/huge_pages.hpp"
#include "chrono/kernels.hpp"
#include "common.hpp"
#include "register.hpp"

using namespace chrono;

void register_score(py::module_& m) {
  m.def(
      "score",
      [](carray<float> similarity, carray<std::int64_t> observed, std::optional<carray<float>> reliability,
         std::optional<carray<std::int32_t>> type, std::optional<carray<std::int64_t>> valid_from,
         std::optional<carray<std::int64_t>> valid_to, std::optional<carray<std::uint8_t>> deprecated,
         carray<double> specs, std::int64_t t, int fusion, double alpha, double penalty, int invalid_policy,
         double tau, int threads, py::object out_score, py::object out_validity, int future_policy) {
        const std::size_t n = static_cast<std::size_t>(similarity.size());
        std::vector<DecaySpec> sp = specs_from(specs);
        ScoreArgs a{};
        a.similarity = similarity.data();
        a.observed = checked(observed, n, "observed_at");
        a.reliability = checked(reliability, n, "reliability");
        a.type = checked(type, n, "fact_type");
        a.valid_from = checked(valid_from, n, "valid_from");
        a.valid_to = checked(valid_to, n, "valid_to");
        a.deprecated = checked(deprecated, n, "deprecated");
        if ((a.valid_from == nullptr) != (a.valid_to == nullptr)) throw std::invalid_argument("valid_from and valid_to go together");
        a.specs = sp.data();
        a.n_types = sp.size();
        a.t_query = t;
        a.fusion = fusion;
        a.alpha = alpha;
        a.penalty = penalty;
        if (invalid_policy < 0 || invalid_policy > 2 || future_policy < -1 || future_policy > 2)
          throw std::invalid_argument("bad policy code");
        a.invalid_policy = invalid_policy;
        a.future_policy = future_policy < 0 ? invalid_policy : future_policy;
        a.tau = tau;
        // outputs: the caller's buffers (ce.score passes Arrow memory-pool buffers, whose
        // pages a pool keeps between calls) or fresh arrays
        py::array_t<float> out = output_array<float>(out_score, n, "out_score");
        py::array_t<float> val = output_array<float>(out_validity, n, "out_validity");
        a.out_score = out.mutable_data();
        a.out_validity = val.mutable_data();
        advise_huge_pages(a.out_score, n * sizeof(float));
        advise_huge_pages(a.out_validity, n * sizeof(float));
        {
          py::gil_scoped_release nogil;
          const Kernels& k = kernels();
          constexpr std::size_t chunk = 1 << 16;
          std::size_t nchunks = (n + chunk - 1) / chunk;
          std::vector<unsigned char> bad(nchunks, 0);
          parallel_for(nchunks, threads, [&](std::size_t c) {
            std::size_t b = c * chunk, e = std::min(n, b + chunk);
            ScoreArgs ac = a;
            ac.bad_type = &bad[c];
            k.score(ac, b, e);
          });
          for (std::size_t c = 0; c < nchunks; ++c) {
            if (!bad[c]) continue;
            for (std::size_t i = c * chunk; i < n; ++i) {
              if ((bad[c] & 1) && (a.type[i] < 0 || static_cast<std::size_t>(a.type[i]) >= sp.size()))
                throw std::invalid_argument("fact type code out of range at row " + std::to_string(i));
              if ((bad[c] & 2) && !(a.reliability[i] > 0.0f && a.reliability[i] <= 1.0f))
                throw std::invalid_argument("reliability must be in (0, 1] at row " + std::to_string(i));
            }
          }
        }
        return py::make_tuple(out, val);
      },
      py::arg("similarity"), py::arg("observed_at"), py::arg("reliability"), py::arg("fact_type"),
      py::arg("valid_from"), py::arg("valid_to"), py::arg("deprecated"), py::arg("specs"), py::arg("t"),
      py::arg("fusion"), py::arg("alpha"), py::arg("penalty"), py::arg("invalid_policy"), py::arg("tau"),
      py::arg("threads") = 1, py::arg("out_score") = py::none(), py::arg("out_validity") = py::none(), py::arg("future_policy") = -1);
}

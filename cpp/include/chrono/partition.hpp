// A coarse partition of the vectors: C centroids and, per centroid, its rows (the probe
// plan's clusters, probe.hpp).
//
// The centroids and the assignment come from the Python layer (chrono_engine/_partition.py:
// k-means on a sample, nearest centroid per row). Any assignment is valid: it only decides
// how quickly the probe plan finds a query's best rows. Rows ingested after the last
// assignment belong to no cluster; the probe plan reads them first. Cosine and ip only.
#pragma once
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace chrono {

struct Partition {
  static constexpr std::uint16_t kNone = 0xffff;
  std::size_t C = 0;                // centroids
  std::vector<float> centroids;     // C x d, row-major
  std::size_t covered = 0;          // rows [0, covered) are assigned (to a centroid or kNone)
  std::vector<std::vector<std::uint32_t>> members;  // per centroid: its rows, ascending
  std::vector<std::uint32_t> loose;  // assigned rows without a centroid (kNone)
  // The probe plan's allowance: <q, x - c> <= delta |q| for nearly every row x of a
  // cluster c a query is not close to (estimated by _partition.py; not a bound).
  double delta = 0.0;

  bool empty() const { return C == 0; }
  void clear() { *this = Partition(); }

  // Replace the centroids (C x d) and delta; every row is unassigned until assign().
  void set_centroids(const float* c, std::size_t n_centroids, std::size_t d, double allowance) {
    if (n_centroids == 0 || n_centroids >= kNone) throw std::invalid_argument("partition: need 1 to 65534 centroids");
    if (!(allowance >= 0.0) || !std::isfinite(allowance)) throw std::invalid_argument("partition: delta must be finite and >= 0");
    for (std::size_t i = 0; i < n_centroids * d; ++i)
      if (!std::isfinite(c[i])) throw std::invalid_argument("partition: a centroid value is not finite");
    centroids.assign(c, c + n_centroids * d);
    C = n_centroids;
    covered = 0;
    members.assign(C, {});
    loose.clear();
    delta = allowance;
  }

  // Assign rows [first, first + n) (first == covered: rows are assigned in order) to
  // centroids `a` (kNone: none). Validates everything before changing anything.
  void assign(std::size_t first, const std::uint16_t* a, std::size_t n) {
    if (first != covered) throw std::invalid_argument("partition: rows must be assigned in order from row " + std::to_string(covered));
    for (std::size_t i = 0; i < n; ++i)
      if (a[i] != kNone && a[i] >= C)
        throw std::invalid_argument("partition: row " + std::to_string(first + i) + " names centroid " +
                                    std::to_string(a[i]) + " of " + std::to_string(C));
    for (std::size_t i = 0; i < n; ++i) {
      const auto row = static_cast<std::uint32_t>(first + i);
      if (a[i] == kNone) loose.push_back(row); else members[a[i]].push_back(row);
    }
    covered = first + n;
  }
};

}  // namespace chrono

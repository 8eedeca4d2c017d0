// The HNSW graph (hnswlib), keyed by row number. The only header that includes hnswlib.
#pragma once
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>
#include <hnswlib/hnswlib.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif
#include "huge_pages.hpp"
#include "kernels.hpp"

namespace chrono {

enum class Metric { Cosine = 0, InnerProduct = 1, L2 = 2 };

inline Metric parse_metric(const std::string& m) {
  if (m == "cosine") return Metric::Cosine;
  if (m == "ip") return Metric::InnerProduct;
  if (m == "l2") return Metric::L2;
  throw std::invalid_argument("metric must be 'cosine', 'ip' or 'l2', got '" + m + "'");
}

// Run f(i) for i in [0, n) on `threads` threads; the first exception is rethrown here.
template <class F>
void parallel_for(std::size_t n, int threads, F&& f) {
  if (threads <= 1 || n < 2) { for (std::size_t i = 0; i < n; ++i) f(i); return; }
  std::atomic<std::size_t> next{0};
  std::exception_ptr err;
  std::mutex err_mu;
  auto work = [&] {
    for (;;) {
      std::size_t i = next.fetch_add(1);
      if (i >= n) return;
      try { f(i); } catch (...) {
        std::lock_guard<std::mutex> g(err_mu);
        if (!err) err = std::current_exception();
        next.store(n);
        return;
      }
    }
  };
  std::vector<std::thread> pool;
  int t = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(threads), n));
  for (int i = 1; i < t; ++i) pool.emplace_back(work);
  work();
  for (auto& th : pool) th.join();
  if (err) std::rethrow_exception(err);
}

class AnnIndex {
 public:
  AnnIndex(std::size_t dim, Metric metric, std::size_t M, std::size_t ef_construction, std::size_t seed)
      : dim_(dim), metric_(metric), M_(M), efc_(ef_construction), seed_(seed) {
    if (metric == Metric::L2) space_ = std::make_unique<hnswlib::L2Space>(dim);
    else space_ = std::make_unique<hnswlib::InnerProductSpace>(dim);
    hnsw_ = std::make_unique<hnswlib::HierarchicalNSW<float>>(space_.get(), 1024, M, ef_construction, seed, false);
    hnsw_->setEf(16);
  }

  std::size_t dim() const { return dim_; }
  Metric metric() const { return metric_; }
  std::size_t size() const { return row_to_iid_.size(); }
  std::size_t M() const { return M_; }
  std::size_t ef_construction() const { return efc_; }

  // Add rows [first_row, first_row + n) from a row-major float matrix (already normalised
  // for cosine).
  void add(const float* data, std::size_t n, std::size_t first_row, int threads) {
    std::size_t need = first_row + n;
    if (need > hnsw_->max_elements_) hnsw_->resizeIndex(std::max(need, hnsw_->max_elements_ * 2));
    back_with_huge_pages();
    // The first point alone, so that every worker finds an entry point.
    std::size_t start = 0;
    if (hnsw_->cur_element_count == 0 && n > 0) { hnsw_->addPoint(data, first_row); start = 1; }
    parallel_for(n - start, threads, [&](std::size_t i) {
      std::size_t j = start + i;
      hnsw_->addPoint(data + j * dim_, first_row + j);
    });
    compact_rows(data, n, first_row);
    row_to_iid_.resize(need);
    for (std::size_t r = first_row; r < need; ++r) {
      auto it = hnsw_->label_lookup_.find(r);
      row_to_iid_[r] = static_cast<std::uint32_t>(it->second);
    }
  }

  const float* vector(std::size_t row) const {
    return reinterpret_cast<const float*>(hnsw_->getDataByInternalId(row_to_iid_[row]));
  }

  // Ask the memory system for a row's vector ahead of use (random access hides latency
  // only when several rows are in flight).
  void prefetch(std::size_t row) const {
    const char* p = reinterpret_cast<const char*>(vector(row));
    for (std::size_t off = 0; off < dim_ * sizeof(float); off += 64) __builtin_prefetch(p + off);
  }

  // similarity in the engine's convention: cosine / ip -> inner product; l2 -> 1/(1+dist)
  float similarity(const float* q, std::size_t row) const {
    const Kernels& k = kernels();
    if (metric_ == Metric::L2) return 1.0f / (1.0f + std::sqrt(k.l2sq(q, vector(row), dim_)));
    return k.dot(q, vector(row), dim_);
  }
  float similarity_from_distance(float dist) const {
    if (metric_ == Metric::L2) return 1.0f / (1.0f + std::sqrt(dist > 0 ? dist : 0.0f));
    return 1.0f - dist;
  }

  // Nearest rows accepted by `filter`, at most `want`, searching with ef = max(want, 16).
  // Returns (similarity, row) pairs, most similar first.
  std::vector<std::pair<float, std::uint32_t>> search(const float* q, std::size_t want,
                                                      hnswlib::BaseFilterFunctor* filter) const {
    std::vector<std::pair<float, std::uint32_t>> out;
    if (hnsw_->cur_element_count == 0 || want == 0) return out;
    auto pq = hnsw_->searchKnn(q, want, filter);
    out.resize(pq.size());
    for (std::size_t i = pq.size(); i-- > 0;) {
      out[i] = {similarity_from_distance(pq.top().first), static_cast<std::uint32_t>(pq.top().second)};
      pq.pop();
    }
    return out;
  }

  void save(const std::string& path) const { hnsw_->saveIndex(path); }
  void load(const std::string& path, std::size_t n_rows) {
    hnsw_ = std::make_unique<hnswlib::HierarchicalNSW<float>>(space_.get(), path, false, std::max<std::size_t>(n_rows, 1024), false);
    hnsw_->setEf(16);
    back_with_huge_pages();
    if (hnsw_->cur_element_count != n_rows)
      throw std::runtime_error("graph holds " + std::to_string(hnsw_->cur_element_count) + " points, metadata " + std::to_string(n_rows));
    row_to_iid_.assign(n_rows, 0);
    for (std::size_t r = 0; r < n_rows; ++r) {
      auto it = hnsw_->label_lookup_.find(r);
      if (it == hnsw_->label_lookup_.end()) throw std::runtime_error("graph lacks row " + std::to_string(r));
      row_to_iid_[r] = static_cast<std::uint32_t>(it->second);
    }
    c8_.clear(); c8_scale_.clear(); c8_err_.clear();
    for (std::size_t r = 0; r < n_rows; ++r) compact_rows(vector(r), 1, r);
  }

  // The compact copy: per row int8 codes c, a scale and an error term such that for any
  // query q the similarity the engine computes (float dot with the full vector) is at most
  //   scale * <q, c> (computed in float by dot_i8_some / dot_qt_i8) + |q| * err.
  // It is 4x smaller than the vectors, so a certified scan reads it first and loads full
  // vectors only for rows that this upper bound cannot rule out.
  const std::int8_t* compact(std::size_t row) const { return c8_.data() + row * dim_; }
  float compact_scale(std::size_t row) const { return c8_scale_[row]; }
  float compact_err(std::size_t row) const { return c8_err_[row]; }
  void prefetch_compact(std::size_t row) const {
    const char* p = reinterpret_cast<const char*>(compact(row));
    for (std::size_t off = 0; off < dim_; off += 64) __builtin_prefetch(p + off);
    __builtin_prefetch(c8_scale_.data() + row);  // read with the codes (two more lines otherwise missed)
    __builtin_prefetch(c8_err_.data() + row);
  }
  std::size_t compact_bytes() const { return c8_.size() + (c8_scale_.size() + c8_err_.size()) * sizeof(float); }

  std::size_t graph_bytes() const {
    return hnsw_->max_elements_ * hnsw_->size_data_per_element_ +
           hnsw_->cur_element_count * (sizeof(void*) + sizeof(hnswlib::labeltype) * 2);
  }
  std::size_t vector_bytes() const { return size() * dim_ * sizeof(float); }

 private:
  // Rows [first, first + n) of `data` (n x dim) into the compact copy: codes = round(x / s),
  // s = max|x_i| / 127; err = |x - s c| plus a margin for float rounding in both the exact
  // and the compact dot (4 d 2^-24 (|x| + |s c|), above the worst-case accumulation error).
  void compact_rows(const float* data, std::size_t n, std::size_t first) {
    const std::size_t d = dim_;
    if (c8_.size() < (first + n) * d) {
      c8_.resize((first + n) * d);
      c8_scale_.resize(first + n);
      c8_err_.resize(first + n);
    }
    const double rel = 4.0 * static_cast<double>(d) * std::ldexp(1.0, -24);
    for (std::size_t i = 0; i < n; ++i) {
      const float* x = data + i * d;
      std::int8_t* c = c8_.data() + (first + i) * d;
      double m = 0.0;
      for (std::size_t j = 0; j < d; ++j) m = std::max(m, std::fabs(static_cast<double>(x[j])));
      const float s = static_cast<float>(m / 127.0);
      double e2 = 0.0, x2 = 0.0, c2 = 0.0;
      for (std::size_t j = 0; j < d; ++j) {
        double code = s > 0.0f ? std::nearbyint(static_cast<double>(x[j]) / s) : 0.0;
        code = std::min(127.0, std::max(-127.0, code));
        c[j] = static_cast<std::int8_t>(code);
        const double deq = static_cast<double>(s) * code;
        const double r = static_cast<double>(x[j]) - deq;
        e2 += r * r; x2 += static_cast<double>(x[j]) * x[j]; c2 += deq * deq;
      }
      const double err = std::sqrt(e2) + rel * (std::sqrt(x2) + std::sqrt(c2)) + 1e-30;
      float ef = static_cast<float>(err);
      if (static_cast<double>(ef) < err) ef = std::nextafter(ef, INFINITY);
      c8_scale_[first + i] = s;
      c8_err_[first + i] = ef;
    }
  }

  // Move hnswlib's level-0 block (links + vectors, the memory every search and scan reads
  // at random) to 2 MiB-aligned memory marked MADV_HUGEPAGE: with 4 KiB pages nearly every
  // random row costs a TLB miss (a 200k x 384 store spans 340 MB). Done after every
  // reallocation; hnswlib keeps owning the block (it is malloc-compatible: free/realloc).
  // No-op off Linux, for small blocks, or when the kernel refuses.
  void back_with_huge_pages() {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    char* cur = hnsw_->data_level0_memory_;
    if (cur == nullptr || cur == huge_block_) return;
    const std::size_t bytes = hnsw_->max_elements_ * hnsw_->size_data_per_element_;
    constexpr std::size_t kHuge = std::size_t{2} << 20;
    if (bytes < 4 * kHuge) return;
    void* p = nullptr;
    if (posix_memalign(&p, kHuge, bytes) != 0) return;
    const std::size_t span = bytes / kHuge * kHuge;
    madvise(p, span, MADV_HUGEPAGE);  // advisory: failure leaves ordinary pages
    std::memcpy(p, cur, hnsw_->cur_element_count * hnsw_->size_data_per_element_);
    std::free(cur);
    hnsw_->data_level0_memory_ = static_cast<char*>(p);
    huge_block_ = static_cast<char*>(p);
#endif
  }

  char* huge_block_ = nullptr;
  huge_vector<std::int8_t> c8_;  // read in random row order by the certified scan
  std::vector<float> c8_scale_, c8_err_;
  std::size_t dim_;
  Metric metric_;
  std::size_t M_, efc_, seed_;
  std::unique_ptr<hnswlib::SpaceInterface<float>> space_;
  std::unique_ptr<hnswlib::HierarchicalNSW<float>> hnsw_;
  std::vector<std::uint32_t> row_to_iid_;
};

}  // namespace chrono

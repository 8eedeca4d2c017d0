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
#include "graph_file.hpp"
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

// Run f(i) for i in [0, n) on up to `threads` threads (the caller's included); the first
// exception is rethrown here. A thread that cannot start (the system's thread or memory
// limit) is not an error: no more are started and those running, with the caller, finish
// the work, so it completes either way.
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
  try {
    pool.reserve(static_cast<std::size_t>(t - 1));  // so that emplace_back never reallocates
  } catch (...) {
    t = 1;  // no room even for the handles: the caller does all the work
  }
  for (int i = 1; i < t; ++i) {
    try {
      pool.emplace_back(work);
    } catch (...) {  // std::system_error (EAGAIN) or bad_alloc: the thread did not start
      break;
    }
  }
  work();
  for (auto& th : pool) th.join();
  if (err) std::rethrow_exception(err);
}

class AnnIndex {
 public:
  AnnIndex(std::size_t dim, Metric metric, std::size_t M, std::size_t ef_construction, std::size_t seed)
      : dim_(dim), metric_(metric), M_(M), efc_(ef_construction), seed_(seed) {
    // hnswlib draws levels with 1 / ln(M): M = 1 makes every level infinite (it then fails to
    // allocate a link list for the first point).
    if (M < 2) throw std::invalid_argument("M must be at least 2, got " + std::to_string(M));
    // hnswlib sizes a record as 4 dim bytes unchecked: a huge dim wraps it to a small block
    // that every vector then overruns.
    if (dim == 0 || dim > kMaxDim)
      throw std::invalid_argument("dim must be in [1, " + std::to_string(kMaxDim) + "], got " + std::to_string(dim));
    if (metric == Metric::L2) space_ = std::make_unique<hnswlib::L2Space>(dim);
    else space_ = std::make_unique<hnswlib::InnerProductSpace>(dim);
    hnsw_ = std::make_unique<hnswlib::HierarchicalNSW<float>>(space_.get(), 1024, M, ef_construction, seed, false);
    hnsw_->setEf(16);
  }

  static constexpr std::size_t kMaxDim = std::size_t{1} << 20;  // far beyond any embedding

  std::size_t dim() const { return dim_; }
  Metric metric() const { return metric_; }
  std::size_t size() const { return row_to_iid_.size(); }
  std::size_t M() const { return M_; }
  std::size_t ef_construction() const { return efc_; }

  // Add rows [first_row, first_row + n) from a row-major float matrix (already normalised
  // for cosine).
  void add(const float* data, std::size_t n, std::size_t first_row, int threads) {
    std::size_t need = first_row + n;
    if (need > hnsw_->max_elements_) hnsw_->resizeIndex(grown_capacity(need, hnsw_->max_elements_));
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

  // Back to an empty index (after a failed restore).
  void clear() {
    auto h = std::make_unique<hnswlib::HierarchicalNSW<float>>(space_.get(), 1024, M_, efc_, seed_, false);
    h->setEf(16);
    hnsw_.swap(h);
    huge_block_ = nullptr;
    row_to_iid_.clear();
    c8_.clear(); c8_se_.clear();
  }
  // Load a graph saved by save() for a store of n_rows rows, reading the file as untrusted
  // input (graph_file.hpp): every field and link is checked before hnswlib sees any of it,
  // and the index is built here from the checked content. All or nothing: on any exception
  // this index is unchanged. Returns the largest vector norm (as ingest computes it).
  double load(const std::string& path, std::size_t n_rows) {
    GraphGeometry geo;
    geo.n = n_rows;
    geo.dim = dim_;
    geo.M = std::min<std::size_t>(M_, kHnswMaxM);
    geo.unit_vectors = metric_ == Metric::Cosine;
    GraphFile file(path, geo);  // header and size checked before anything is allocated
    // Room to append without a resize: a resize copies the whole graph (twice, with the move
    // to huge pages), which made the first write after opening a 1M-row store cost ~4 s.
    // Capacity that is never written costs no resident memory (untouched pages).
    const std::size_t cap = std::max<std::size_t>(n_rows + headroom(n_rows), 1024);
    auto h = std::make_unique<hnswlib::HierarchicalNSW<float>>(space_.get(), cap, M_, efc_, seed_, false);
    if (h->size_data_per_element_ != geo.element_bytes() || h->offsetData_ != geo.data_offset() ||
        h->label_offset_ != geo.label_offset() || h->size_links_per_element_ != geo.links_bytes() ||
        h->maxM0_ != geo.maxM0() || h->offsetLevel0_ != 0)
      throw std::logic_error("graph_file.hpp's layout differs from this hnswlib's");
    char* block = move_to_huge_pages(*h, nullptr);  // allocated before it is filled: no copy
    GraphContent g = file.read(h->data_level0_memory_);
    // Upper-level lists: malloc'ed one per element, as hnswlib's loader does (its clear()
    // frees them). A level is recorded only once its memory is in place, so that the
    // destructor frees exactly what was allocated if an allocation fails.
    h->cur_element_count = n_rows;
    for (std::size_t i = 0; i < n_rows; ++i) {
      h->linkLists_[i] = nullptr;
      if (g.levels[i] == 0) continue;
      const std::size_t bytes = static_cast<std::size_t>(g.levels[i]) * geo.links_bytes();
      char* p = static_cast<char*>(std::malloc(bytes));
      if (p == nullptr) throw std::bad_alloc();
      std::memcpy(p, g.upper.data() + g.upper_at[i], bytes);
      h->linkLists_[i] = p;
      h->element_levels_[i] = g.levels[i];
    }
    h->maxlevel_ = g.maxlevel;
    h->enterpoint_node_ = g.enterpoint;
    h->label_lookup_.reserve(n_rows);
    for (std::size_t r = 0; r < n_rows; ++r) h->label_lookup_.emplace(r, g.iid_of_row[r]);
    h->setEf(16);
    huge_vector<std::int8_t> c8;  // the compact copy, built aside, with room to append
    std::vector<float> c8_se;
    c8.reserve((n_rows + headroom(n_rows)) * dim_);
    c8_se.reserve(2 * (n_rows + headroom(n_rows)));
    c8.resize(n_rows * dim_);
    c8_se.resize(2 * n_rows);
    constexpr std::size_t kChunk = 4096;  // rows per task; every core quantises (pure per row)
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    parallel_for((n_rows + kChunk - 1) / kChunk, cores, [&](std::size_t c) {
      for (std::size_t r = c * kChunk; r < std::min(n_rows, (c + 1) * kChunk); ++r)
        compact_into(reinterpret_cast<const float*>(h->getDataByInternalId(g.iid_of_row[r])), 1, dim_,
                     c8.data() + r * dim_, c8_se.data() + 2 * r);
    });
    // commit (nothing below throws); the old index goes with `h`
    hnsw_.swap(h);
    huge_block_ = block;
    row_to_iid_.swap(g.iid_of_row);
    c8_.swap(c8);
    c8_se_.swap(c8_se);
    return std::sqrt(static_cast<double>(g.max_sq_norm));
  }

  // The compact copy: per row int8 codes c, a scale and an error term such that for any
  // query q the similarity the engine computes (float dot with the full vector) is at most
  //   scale * <q, c> (computed in float by dot_i8_some / dot_qt_i8) + |q| * err.
  // It is 4x smaller than the vectors, so a certified scan reads it first and loads full
  // vectors only for rows that this upper bound cannot rule out.
  const std::int8_t* compact(std::size_t row) const { return c8_.data() + row * dim_; }
  float compact_scale(std::size_t row) const { return c8_se_[2 * row]; }
  float compact_err(std::size_t row) const { return c8_se_[2 * row + 1]; }
  void prefetch_compact(std::size_t row) const {
    const char* p = reinterpret_cast<const char*>(compact(row));
    for (std::size_t off = 0; off < dim_; off += 64) __builtin_prefetch(p + off);
    __builtin_prefetch(c8_se_.data() + 2 * row);  // read with the codes (one more line otherwise missed)
  }
  std::size_t compact_bytes() const { return c8_.size() + c8_se_.size() * sizeof(float); }

  std::size_t graph_bytes() const {
    return hnsw_->max_elements_ * hnsw_->size_data_per_element_ +
           hnsw_->cur_element_count * (sizeof(void*) + sizeof(hnswlib::labeltype) * 2);
  }
  std::size_t vector_bytes() const { return size() * dim_ * sizeof(float); }

 private:
  // Rows [first, first + n) of `data` (n x dim) into the compact copy.
  void compact_rows(const float* data, std::size_t n, std::size_t first) {
    const std::size_t d = dim_;
    if (c8_.size() < (first + n) * d) {
      c8_.resize((first + n) * d);
      c8_se_.resize(2 * (first + n));
    }
    compact_into(data, n, d, c8_.data() + first * d, c8_se_.data() + 2 * first);
  }
  // Rows of `data` (n x d) as codes = round(x / s), s = max|x_i| / 127; err = |x - s c| plus
  // a margin for float rounding in both the exact and the compact dot
  // (4 d 2^-24 (|x| + |s c|), above the worst-case accumulation error).
  // Each row's scale and error sit side by side in `se` (one cache line for both where a
  // scan reads rows at random).
  static void compact_into(const float* data, std::size_t n, std::size_t d, std::int8_t* codes, float* se) {
    const double rel = 4.0 * static_cast<double>(d) * std::ldexp(1.0, -24);
    for (std::size_t i = 0; i < n; ++i) {
      const float* x = data + i * d;
      std::int8_t* c = codes + i * d;
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
      se[2 * i] = s;
      se[2 * i + 1] = ef;
    }
  }

  // Move hnswlib's level-0 block (links + vectors, the memory every search and scan reads
  // at random) to 2 MiB-aligned memory marked MADV_HUGEPAGE: with 4 KiB pages nearly every
  // random row costs a TLB miss (a 200k x 384 store spans 340 MB). Done after every
  // reallocation; hnswlib keeps owning the block (it is malloc-compatible: free/realloc).
  // No-op off Linux, for small blocks, or when the kernel refuses.
  void back_with_huge_pages() { huge_block_ = move_to_huge_pages(*hnsw_, huge_block_); }
  // Spare rows beyond `n`: an eighth, at least 1024 (what opening a store reserves, and
  // what a growing index keeps beyond the rows it needs).
  static std::size_t headroom(std::size_t n) { return std::max<std::size_t>(n / 8, 1024); }
  // The capacity to grow to for `need` rows from `cap`: `need` plus headroom, and at least a
  // quarter more than before, so that appends in small batches resize a bounded number of
  // times (each resize copies the graph) without doubling a 10M-row graph's reservation.
  static std::size_t grown_capacity(std::size_t need, std::size_t cap) {
    return std::max(need + headroom(need), cap + cap / 4);
  }
  // The work of back_with_huge_pages on index h whose block, if already moved, is `moved`;
  // returns the block now in use if moved, else `moved`. Copies only the elements in use.
  static char* move_to_huge_pages(hnswlib::HierarchicalNSW<float>& h, char* moved) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    char* cur = h.data_level0_memory_;
    if (cur == nullptr || cur == moved) return moved;
    const std::size_t bytes = h.max_elements_ * h.size_data_per_element_;
    constexpr std::size_t kHuge = std::size_t{2} << 20;
    if (bytes < 4 * kHuge) return moved;
    void* p = nullptr;
    if (posix_memalign(&p, kHuge, bytes) != 0) return moved;
    const std::size_t span = bytes / kHuge * kHuge;
    madvise(p, span, MADV_HUGEPAGE);  // advisory: failure leaves ordinary pages
    std::memcpy(p, cur, h.cur_element_count * h.size_data_per_element_);
    std::free(cur);
    h.data_level0_memory_ = static_cast<char*>(p);
    return static_cast<char*>(p);
#else
    (void)h;
    return moved;
#endif
  }

  // hnswlib caps M at 10,000 (with a warning): the M_ its files then hold.
  static constexpr std::size_t kHnswMaxM = 10000;

  char* huge_block_ = nullptr;
  huge_vector<std::int8_t> c8_;  // read in random row order by the certified scan
  std::vector<float> c8_se_;  // per row: scale, error
  std::size_t dim_;
  Metric metric_;
  std::size_t M_, efc_, seed_;
  std::unique_ptr<hnswlib::SpaceInterface<float>> space_;
  std::unique_ptr<hnswlib::HierarchicalNSW<float>> hnsw_;
  std::vector<std::uint32_t> row_to_iid_;
};

}  // namespace chrono

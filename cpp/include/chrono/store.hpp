// The store: HNSW graph + per-item metadata + interval index + stems, behind one
// readers-writer lock. Searches take the lock shared per group of queries; every write (ingest,
// lifecycle update) takes it exclusively and validates before it mutates, so a rejected
// call changes nothing and each group of queries sees a consistent snapshot.
#pragma once
#include <algorithm>
#include <list>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>
#include "ann_index.hpp"
#include "arbitration.hpp"
#include "columns.hpp"
#include "decay.hpp"
#include "freshness_index.hpp"
#include "id_map.hpp"
#include "interval_index.hpp"
#include "partition.hpp"
#include "user_columns.hpp"

namespace chrono {

// Amendments to existing rows, column-wise (borrowed pointers; n entries): see
// MetaTable::Amendment. A supersede appends its new rows and closes its predecessors in
// one Store::ingest, so no reader sees half of it.
struct AmendColumns {
  std::size_t n = 0;
  const std::uint32_t* rows = nullptr;
  const micros* tx = nullptr;
  const micros* valid_to = nullptr;
  const micros* dep_from = nullptr;
};

class Store {
 public:
  Store(std::size_t dim, Metric metric, std::size_t M, std::size_t ef_construction, std::size_t seed)
      : ann_(dim, metric, M, ef_construction, seed), intervals_(meta_), fresh_(meta_) {}  // AnnIndex checks dim and M

  std::size_t dim() const { return ann_.dim(); }
  Metric metric() const { return ann_.metric(); }
  const AnnIndex& ann() const { return ann_; }
  std::size_t size() const { std::shared_lock<std::shared_mutex> g(mu_); return meta_.size(); }

  // Decay profile per fact-type code; codes are assigned by the Python layer.
  void set_decay(std::vector<DecaySpec> specs) {
    std::unique_lock<std::shared_mutex> g(mu_);
    for (std::size_t r = 0; r < meta_.size(); ++r)
      if (meta_.fact_type(r) >= specs.size()) throw std::invalid_argument("decay table lacks a fact type in use");
    specs_ = std::move(specs);
  }
  const std::vector<DecaySpec>& decay_specs() const { return specs_; }

  // Append n items and apply amendments `am` of existing rows (if any), as one write under
  // the lock; vectors are row-major (n, dim), already normalised under cosine.
  // Returns the first new row.
  std::size_t ingest(const float* vectors, const MetaColumns& c, int threads, const AmendColumns* am = nullptr) {
    std::unique_lock<std::shared_mutex> g(mu_);
    const std::size_t first = meta_.size();
    if (am && am->n) {
      check_amendments(*am);
      meta_.reserve_amendments(am->n, first + c.n);  // the amendments cannot fail once rows are added
    }
    if (c.n == 0) {
      if (am && am->n) meta_.amend(am->rows, am->tx, am->valid_to, am->dep_from, am->n);
      return first;
    }
    if (first + c.n > 0xfffffff0u) throw std::length_error("store is limited to 2^32 - 16 items");
    // --- validate everything before touching any state
    check_columns(c, kAnyStem);
    std::vector<std::uint64_t> new_ids(c.n);
    if (c.ids) {
      std::unordered_map<std::uint64_t, std::uint32_t> seen;
      for (std::size_t i = 0; i < c.n; ++i) {
        if (lookup_row(c.ids[i]) >= 0) throw DuplicateId(c.ids[i], i);
        if (!seen.emplace(c.ids[i], static_cast<std::uint32_t>(i)).second) throw DuplicateId(c.ids[i], i);
        new_ids[i] = c.ids[i];
      }
    } else {
      // ids run from the largest so far + 1 and never wrap past 2^64 - 1 onto existing ones
      if (ids_exhausted_ || c.n - 1 > std::numeric_limits<std::uint64_t>::max() - next_id_)
        throw std::invalid_argument(
            "automatic ids exhausted: the store holds id " +
            std::to_string(ids_exhausted_ ? std::numeric_limits<std::uint64_t>::max() : next_id_ - 1) + ", and " +
            std::to_string(c.n) + " more would pass 2^64 - 1; pass explicit ids");
      for (std::size_t i = 0; i < c.n; ++i) new_ids[i] = next_id_ + i;
    }
    // --- mutate
    ann_.add(vectors, c.n, first, threads);
    for (std::size_t i = 0; i < c.n; ++i) {
      const float* v = vectors + i * dim();
      double nn = std::sqrt(static_cast<double>(kernels().dot(v, v, dim())));
      if (nn > max_norm_) max_norm_ = nn;
    }
    meta_.append(c);
    if (user_.rows() < meta_.size()) user_.append(meta_.size() - user_.rows(), {});  // null metadata
    if (am && am->n) meta_.amend(am->rows, am->tx, am->valid_to, am->dep_from, am->n);
    add_stems(c, first);
    append_ids(new_ids, first);
    bool rebuild = false, refresh = false;
    for (std::size_t i = 0; i < c.n; ++i) {
      rebuild |= intervals_.append(static_cast<std::uint32_t>(first + i));
      refresh |= fresh_.append(static_cast<std::uint32_t>(first + i));
    }
    if (rebuild) rebuild_intervals();
    if (refresh) rebuild_fresh();
    return first;
  }

  // Lifecycle edits, all-or-nothing: every row is checked before any is changed.
  // Fields with a null pointer are left alone.
  void update(const std::vector<std::uint32_t>& rows, const micros* valid_to, const std::uint8_t* deprecated,
              const micros* retracted_at) {
    std::unique_lock<std::shared_mutex> g(mu_);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (rows[i] >= meta_.size()) throw std::out_of_range("row " + std::to_string(rows[i]) + " out of range");
      const std::uint32_t r = rows[i];
      if (valid_to && !(meta_.valid_from(r) < valid_to[i])) throw std::invalid_argument("valid_to <= valid_from for row " + std::to_string(r));
      if (retracted_at && !(meta_.ingested_at(r) < retracted_at[i])) throw std::invalid_argument("retracted_at <= ingested_at for row " + std::to_string(r));
    }
    bool intervals_changed = false;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const std::uint32_t r = rows[i];
      if (valid_to && meta_.valid_to(r) != valid_to[i]) { meta_.set_valid_to(r, valid_to[i]); intervals_changed = true; }
      if (deprecated) meta_.set_deprecated(r, deprecated[i] != 0);
      if (retracted_at) meta_.set_retracted_at(r, retracted_at[i]);
    }
    if (intervals_changed) { rebuild_intervals(); fresh_.rebuild_late(); }
  }

  // Amendments of existing rows alone (a deprecation), all or nothing.
  void amend(const AmendColumns& am) {
    std::unique_lock<std::shared_mutex> g(mu_);
    check_amendments(am);
    meta_.amend(am.rows, am.tx, am.valid_to, am.dep_from, am.n);
  }
  // Throws std::invalid_argument naming the first amendment that breaks a rule: the row
  // exists, tx is a finite time not before the row's ingested_at, a new end is after the
  // row's valid_from, and no row passes MetaTable::kMaxAmendments.
  void check_amendments(const AmendColumns& am) const {
    std::unordered_map<std::uint32_t, std::size_t> more;
    for (std::size_t i = 0; i < am.n; ++i) {
      const std::uint32_t r = am.rows[i];
      auto fail = [&](const std::string& what) {
        throw std::invalid_argument("amendment " + std::to_string(i) + " (row " + std::to_string(r) + "): " + what);
      };
      if (r >= meta_.size()) fail("no such row");
      if (am.tx[i] == kOpenEnd || am.tx[i] == kOpenStart) fail("transaction time is not a time");
      if (am.tx[i] < meta_.ingested_at(r)) fail("transaction time before the row's ingested_at");
      if (am.valid_to[i] != kOpenEnd && !(meta_.valid_from(r) < am.valid_to[i])) fail("valid_to <= valid_from");
      if (meta_.amendment_count(r) + ++more[r] > MetaTable::kMaxAmendments)
        fail("more than " + std::to_string(MetaTable::kMaxAmendments) + " amendments of one row");
    }
  }
  // Items valid at t / overlapping [a, b), every event recorded applied: the interval
  // index's count (the intervals as ingested) less the amended rows it counts that the
  // amendments close before t / a. O(log n + amended rows). Caller holds the lock.
  std::size_t count_valid_at_now(micros t) const {
    std::size_t n = intervals_.count_valid_at(t);
    for_each_amended_row([&](std::uint32_t r) { n -= meta_.valid_at(r, t) && !meta_.valid_at_known(r, t, kOpenEnd); });
    return n;
  }
  std::size_t count_overlapping_now(micros a, micros b) const {
    std::size_t n = intervals_.count_overlapping(a, b);
    for_each_amended_row([&](std::uint32_t r) { n -= meta_.overlaps(r, a, b) && !meta_.overlaps_known(r, a, b, kOpenEnd); });
    return n;
  }
  // The same as known at transaction time k: rows known then (ingested_at <= k <
  // retracted_at) with the events known then. O(log n + rows valid at t / overlapping).
  std::size_t count_valid_at_known(micros t, micros k) const {
    std::size_t n = 0;
    intervals_.for_each_valid_at(t, [&](std::uint32_t r) { n += meta_.known_at(r, k) && meta_.valid_at_known(r, t, k); });
    return n;
  }
  std::size_t count_overlapping_known(micros a, micros b, micros k) const {
    std::size_t n = 0;
    intervals_.for_each_overlapping(a, b, [&](std::uint32_t r) { n += meta_.known_at(r, k) && meta_.overlaps_known(r, a, b, k); });
    return n;
  }
  template <class F>
  void for_each_amended_row(F&& f) const { meta_.for_each_amended_row(f); }

  // Rows of a stem (code), in no particular order: O(rows of the stem).
  std::vector<std::uint32_t> stem_rows(std::int32_t stem) const {
    std::vector<std::uint32_t> out;
    if (stem >= 0) stems_.for_each(static_cast<std::uint32_t>(stem), [&](std::uint32_t r) { out.push_back(r); });
    return out;
  }

  // Largest vector norm stored (bounds inner-product similarities).
  double max_norm() const { return max_norm_; }

  // The probe plan's partition (partition.hpp): new centroids (every row unassigned),
  // then the assignment of rows [partition().covered, + n) in order. Under the write lock.
  const Partition& partition() const { return part_; }
  void set_partition(const float* centroids, std::size_t n_centroids, double delta) {
    std::unique_lock<std::shared_mutex> g(mu_);
    if (ann_.metric() == Metric::L2) throw std::invalid_argument("a partition needs the cosine or ip metric");
    part_.set_centroids(centroids, n_centroids, dim(), delta);
  }
  void assign_partition(std::size_t first, const std::uint16_t* a, std::size_t n) {
    std::unique_lock<std::shared_mutex> g(mu_);
    if (part_.empty()) throw std::invalid_argument("partition: no centroids set");
    if (first > meta_.size() || n > meta_.size() - first) throw std::out_of_range("partition: rows beyond the store");
    part_.assign(first, a, n);
  }
  void clear_partition() { std::unique_lock<std::shared_mutex> g(mu_); part_.clear(); }

  // Row of a user id, or -1.
  std::int64_t lookup_row(std::uint64_t id) const { return ids_.row(id, meta_.size()); }
  // The next automatic id, and whether the automatic ids are exhausted (id 2^64 - 1 taken).
  std::pair<std::uint64_t, bool> id_state() const {
    std::shared_lock<std::shared_mutex> g(mu_);
    return {next_id_, ids_exhausted_};
  }
  // How the ids are kept: "identity" (ids equal rows), "dense" or "hash" (IdMap).
  const char* id_map_mode() const { std::shared_lock<std::shared_mutex> g(mu_); return ids_.mode(); }

  // ----- user metadata columns (user_columns.hpp)
  // A new column, null for every row so far; returns its index.
  std::size_t add_user_column(const std::string& name, UserKind kind) {
    std::unique_lock<std::shared_mutex> g(mu_);
    return user_.add(name, kind);
  }
  // Forget columns from index n on (a batch that added them was refused).
  void drop_user_columns_from(std::size_t n) { std::unique_lock<std::shared_mutex> g(mu_); user_.drop_columns_from(n); }
  // The metadata of the next n rows (rows [first, first + n), first = the store's size),
  // given before the rows themselves (ingest): a reader never sees a row without its
  // metadata, and rows past the store's size are never read. All or nothing.
  void append_user(std::size_t first, std::size_t n, const std::vector<UserAppend>& parts) {
    std::unique_lock<std::shared_mutex> g(mu_);
    if (first != meta_.size()) throw std::invalid_argument("metadata rows must start at the store's size");
    user_.truncate(first);
    if (user_.rows() < first) user_.append(first - user_.rows(), {});
    user_.append(n, parts);
  }
  // Back to the store's rows (the rows whose metadata was given were refused).
  void truncate_user() { std::unique_lock<std::shared_mutex> g(mu_); user_.truncate(meta_.size()); }
  // Caller holds the lock.
  const UserColumns& user() const { return user_; }

  // The rows of the store that pass filter `p` (one bit per row), kept per program in a
  // small cache: rows never change their metadata, so a cached result stays exact for the
  // rows it covers and only rows added since are evaluated. Caller holds the lock (shared).
  std::shared_ptr<const RowSet> filter_rows(const FilterProgram& p) const {
    const std::size_t n = meta_.size();
    std::shared_ptr<const RowSet> old;
    {
      std::lock_guard<std::mutex> g(fc_mu_);
      auto it = fc_map_.find(p.key);
      if (it != fc_map_.end()) {
        fc_lru_.splice(fc_lru_.begin(), fc_lru_, it->second);
        old = it->second->second;
        if (old->n == n) return old;
      }
    }
    auto rs = std::make_shared<RowSet>();
    rs->n = n;
    std::size_t lo = 0;
    if (old && old->n < n) {
      lo = (old->n / 64) * 64;
      rs->bits.assign(old->bits.begin(), old->bits.begin() + static_cast<std::ptrdiff_t>(lo / 64));
    }
    std::vector<std::uint64_t> tail = user_.eval(p, lo, n);
    rs->bits.insert(rs->bits.end(), tail.begin(), tail.end());
    rs->index_rows();
    std::shared_ptr<const RowSet> out = rs;
    std::lock_guard<std::mutex> g(fc_mu_);
    auto it = fc_map_.find(p.key);
    if (it != fc_map_.end()) {
      fc_bytes_ -= it->second->second->memory_bytes();
      fc_lru_.erase(it->second);
      fc_map_.erase(it);
    }
    fc_lru_.emplace_front(p.key, out);
    fc_map_[p.key] = fc_lru_.begin();
    fc_bytes_ += out->memory_bytes();
    while (fc_lru_.size() > 1 && (fc_lru_.size() > kFilterCacheEntries || fc_bytes_ > kFilterCacheBytes)) {
      fc_bytes_ -= fc_lru_.back().second->memory_bytes();
      fc_map_.erase(fc_lru_.back().first);
      fc_lru_.pop_back();
    }
    return out;
  }
  // The filter cache's bounds: results kept, and their bytes in all.
  static constexpr std::size_t kFilterCacheEntries = 256;
  static constexpr std::size_t kFilterCacheBytes = std::size_t{64} << 20;
  std::size_t filter_cache_bytes() const { std::lock_guard<std::mutex> g(fc_mu_); return fc_bytes_; }

  // Unlocked accessors for code that already holds the lock (the planner, exports).
  const MetaTable& meta() const { return meta_; }
  // User id of a row (ids equal to rows are not stored).
  std::uint64_t id_of(std::uint32_t row) const { return ids_.id(row); }
  const StemRows& stems() const { return stems_; }
  const IntervalIndex& intervals() const { return intervals_; }
  const FreshnessIndex& freshness() const { return fresh_; }
  std::shared_mutex& mutex() const { return mu_; }

  // Fill an empty store from a saved graph and its metadata columns (with ids), both
  // untrusted: the columns are checked first (check_columns; ids unique), then the graph
  // (AnnIndex::load). `n_stems`: the stem names there are, if known (codes must be below it).
  // All or nothing: on any exception the store is left empty.
  void restore(const std::string& graph_path, const MetaColumns& c, std::size_t n_stems = kAnyStem) {
    std::unique_lock<std::shared_mutex> g(mu_);
    if (!meta_.empty()) throw std::logic_error("restore into a non-empty store");
    if (c.ids == nullptr) throw std::invalid_argument("restore needs the id column");
    check_columns(c, n_stems);
    check_unique_ids(c);
    try {
      max_norm_ = ann_.load(graph_path, c.n);  // all or nothing
      meta_.append(c);
      if (user_.rows() < meta_.size()) user_.append(meta_.size() - user_.rows(), {});
      add_stems(c, 0);
      std::vector<std::uint64_t> ids(c.ids, c.ids + c.n);
      append_ids(ids, 0);
      rebuild_fresh();
      rebuild_intervals();
    } catch (...) {
      reset();
      throw;
    }
  }

  // Throws std::invalid_argument naming the first row and column of `c` (rows to append)
  // that breaks a rule every stored row keeps (those ingest's callers check, restated here
  // so that no input, a store file's included, reaches the indexes without them). Stem
  // codes are below `n_stems` and below the row count after the append: a stem's name is
  // kept only with a row that carries it, so there are never more stems than rows (and a
  // code cannot size the stem table beyond the rows).
  void check_columns(const MetaColumns& c, std::size_t n_stems) const {
    MetaTable::check_types(c);
    n_stems = std::min(n_stems, meta_.size() + c.n);
    auto fail = [](const char* column, std::size_t row, const std::string& what) {
      throw std::invalid_argument("column '" + std::string(column) + "', row " + std::to_string(row) + ": " + what);
    };
    for (std::size_t i = 0; i < c.n; ++i) {
      if (c.fact_type[i] >= specs_.size())
        fail("fact_type", i, "fact type code " + std::to_string(c.fact_type[i]) + " without a decay profile (" +
                                 std::to_string(specs_.size()) + " profiles)");
      if (!(c.valid_from[i] < c.valid_to[i]))
        fail("valid_to", i, "valid_to <= valid_from (" + std::to_string(c.valid_to[i]) + " <= " + std::to_string(c.valid_from[i]) + ")");
      if (c.retracted_at[i] != kOpenEnd && !(c.ingested_at[i] < c.retracted_at[i]))
        fail("retracted_at", i, "retracted_at <= ingested_at (" + std::to_string(c.retracted_at[i]) + " <= " +
                                    std::to_string(c.ingested_at[i]) + ")");
      if (!(c.reliability[i] > 0.0f && c.reliability[i] <= 1.0f))
        fail("reliability", i, "reliability " + std::to_string(c.reliability[i]) + " is outside (0, 1]");
      if (c.stem[i] < -1 || (c.stem[i] >= 0 && static_cast<std::size_t>(c.stem[i]) >= n_stems))
        fail("stem", i, "stem code " + std::to_string(c.stem[i]) + " is neither -1 (none) nor below " +
                            std::to_string(n_stems) + " (stems known, at most one per row)");
      if (c.deprecated[i] > 1) fail("deprecated", i, "deprecated flag " + std::to_string(c.deprecated[i]) + " is not 0 or 1");
    }
  }

  std::size_t metadata_bytes() const {
    std::shared_lock<std::shared_mutex> g(mu_);
    const std::size_t stem_bytes = stems_.memory_bytes();
    return meta_.memory_bytes() + ids_.memory_bytes() + stem_bytes;
  }
  std::size_t user_bytes() const { std::shared_lock<std::shared_mutex> g(mu_); return user_.memory_bytes(); }
  std::size_t interval_index_bytes() const { std::shared_lock<std::shared_mutex> g(mu_); return intervals_.memory_bytes(); }
  std::size_t freshness_index_bytes() const { std::shared_lock<std::shared_mutex> g(mu_); return fresh_.memory_bytes(); }

  // check_columns without a bound on stem codes (ingest: the Python layer assigns them)
  static constexpr std::size_t kAnyStem = std::numeric_limits<std::size_t>::max();

  struct DuplicateId : std::invalid_argument {
    DuplicateId(std::uint64_t id, std::size_t row)
        : std::invalid_argument("duplicate id " + std::to_string(id) + " at row " + std::to_string(row)), id(id), row(row) {}
    std::uint64_t id;
    std::size_t row;
  };

 private:
  // The ids of rows [first, first + n) (IdMap keeps them), and the next automatic id.
  void append_ids(const std::vector<std::uint64_t>& new_ids, std::size_t first) {
    ids_.append(new_ids, first);
    for (std::uint64_t id : new_ids) {
      if (id == std::numeric_limits<std::uint64_t>::max()) ids_exhausted_ = true;
      else if (id + 1 > next_id_) next_id_ = id + 1;
    }
  }
  // Link rows [first, first + c.n) into their stems' lists.
  void add_stems(const MetaColumns& c, std::size_t first) {
    std::int32_t top = -1;
    for (std::size_t i = 0; i < c.n; ++i) top = std::max(top, c.stem[i]);
    if (top >= 0) stems_.reserve(first + c.n, static_cast<std::size_t>(top) + 1);
    for (std::size_t i = 0; i < c.n; ++i)
      if (c.stem[i] >= 0) stems_.add(static_cast<std::uint32_t>(c.stem[i]), static_cast<std::uint32_t>(first + i));
  }
  // Throws std::invalid_argument naming a repeated id of c (non-null).
  static void check_unique_ids(const MetaColumns& c) {
    bool identity = true;
    for (std::size_t i = 0; i < c.n && identity; ++i) identity = c.ids[i] == i;
    if (identity) return;
    std::vector<std::uint64_t> sorted(c.ids, c.ids + c.n);
    std::sort(sorted.begin(), sorted.end());
    auto dup = std::adjacent_find(sorted.begin(), sorted.end());
    if (dup == sorted.end()) return;
    std::size_t first = c.n, second = c.n;
    for (std::size_t i = 0; i < c.n && second == c.n; ++i)
      if (c.ids[i] == *dup) (first == c.n ? first : second) = i;
    throw std::invalid_argument("column 'id', row " + std::to_string(second) + ": duplicate id " + std::to_string(*dup) +
                                " (also row " + std::to_string(first) + ")");
  }
  // Back to an empty store (after a failed restore).
  void reset() {
    ann_.clear();
    meta_ = MetaTable();
    ids_.clear();
    next_id_ = 0;
    ids_exhausted_ = false;
    stems_ = StemRows();
    rebuild_fresh();
    rebuild_intervals();
    max_norm_ = 0.0;
    part_.clear();
  }
  void rebuild_fresh() { fresh_.rebuild(); }
  void rebuild_intervals() { intervals_.rebuild(); }

  mutable std::shared_mutex mu_;
  AnnIndex ann_;
  MetaTable meta_;
  IdMap ids_;                     // rows by id and ids by row
  std::uint64_t next_id_ = 0;     // largest id + 1 (0 while empty)
  bool ids_exhausted_ = false;    // id 2^64 - 1 is taken: no automatic id is left
  StemRows stems_;
  IntervalIndex intervals_;
  FreshnessIndex fresh_;
  std::vector<DecaySpec> specs_{DecaySpec{}};
  double max_norm_ = 0.0;
  Partition part_;
  UserColumns user_;
  // filter_rows's cache: most recently used first
  mutable std::mutex fc_mu_;
  mutable std::list<std::pair<std::string, std::shared_ptr<const RowSet>>> fc_lru_;
  mutable std::unordered_map<std::string, std::list<std::pair<std::string, std::shared_ptr<const RowSet>>>::iterator> fc_map_;
  mutable std::size_t fc_bytes_ = 0;
};

}  // namespace chrono

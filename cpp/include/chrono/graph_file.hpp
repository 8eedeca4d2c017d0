// Reading graph.bin (hnswlib 0.8.0's saveIndex format) as untrusted input. hnswlib's own
// loader trusts the file: its header sizes the allocations and its link lists index memory,
// so a crafted file overflows the heap or sends a search out of bounds. Here every field and
// every array is checked against what the store's own parameters imply before any of it is
// used; a refusal is a GraphFileError naming the field, element and level. hnswlib-free:
// AnnIndex (the one header that includes hnswlib) builds its index from the checked content.
//
// Layout (little-endian, as saveIndex writes it on x86-64):
//   header (96 bytes): offsetLevel0_ u64, max_elements_ u64, cur_element_count u64,
//     size_data_per_element_ u64, label_offset_ u64, offsetData_ u64, maxlevel_ i32,
//     enterpoint_node_ u32, maxM_ u64, maxM0_ u64, M_ u64, mult_ f64, ef_construction_ u64;
//   level 0: n records of size_data_per_element_ bytes, each [count u16, deleted flag u8,
//     reserved u8, maxM0 neighbour ids u32][dim floats][label u64];
//   upper levels: per element, linkListSize u32 then level records of
//     [count u16, 2 reserved bytes, maxM ids u32] (linkListSize = level * (4 + 4 maxM)).
#pragma once
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include "kernels.hpp"

namespace chrono {

// A graph.bin that is not what this store wrote (its message starts "graph.bin:").
// An std::invalid_argument, so Python sees a ValueError. Failing system calls (EIO, EACCES)
// are std::system_error instead (a RuntimeError in Python).
struct GraphFileError : std::invalid_argument {
  explicit GraphFileError(const std::string& what) : std::invalid_argument("graph.bin: " + what) {}
};

// What the store's parameters imply for the file's layout.
struct GraphGeometry {
  std::size_t n = 0;          // elements: the metadata's row count
  std::size_t dim = 0;
  std::size_t M = 0;          // hnswlib's M_ (after its cap); maxM_ = M, maxM0_ = 2 M
  bool unit_vectors = false;  // cosine: every vector was normalised by ingest

  std::size_t maxM0() const { return 2 * M; }
  std::size_t links0_bytes() const { return maxM0() * 4 + 4; }
  std::size_t links_bytes() const { return M * 4 + 4; }  // one upper-level record
  std::size_t data_offset() const { return links0_bytes(); }
  std::size_t label_offset() const { return links0_bytes() + dim * 4; }
  std::size_t element_bytes() const { return label_offset() + 8; }
};

// The checked file, less its level-0 block (which the caller's memory holds).
struct GraphContent {
  int maxlevel = -1;
  std::uint32_t enterpoint = 0xffffffffu;
  std::vector<int> levels;                // per internal id
  std::vector<std::uint32_t> iid_of_row;  // per row (hnswlib's label)
  std::vector<char> upper;                // the upper-level records, element after element
  std::vector<std::size_t> upper_at;      // per internal id: where its records start in `upper`
  float max_sq_norm = 0.0f;               // largest float <v, v> (inf if one overflows float)
};

class GraphFile {
 public:
  static constexpr std::size_t kHeaderBytes = 96;
  // hnswlib draws a level as floor(-ln(U) / ln(M)) with U from uniform_real_distribution over
  // a 31-bit engine, two draws per double, so U >= 2^-62 and a level is at most
  // 62 ln 2 / ln M <= 62 for M >= 2: a larger maxlevel_ is not hnswlib's.
  static constexpr int kMaxLevel = 63;

  // Opens `path` (a regular file only, never following a symlink, never blocking on a FIFO),
  // reads the header and checks it, and checks the file's size against the range the header
  // allows, all before any allocation the file could drive.
  GraphFile(const std::string& path, const GraphGeometry& g) : g_(g) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd_ < 0) {
      if (errno == ELOOP) throw GraphFileError("is a symbolic link; a store holds regular files only");
      throw std::system_error(errno, std::generic_category(), "graph.bin: cannot open " + path);
    }
    struct stat st;
    if (::fstat(fd_, &st) != 0) {
      const int e = errno;
      ::close(fd_);
      throw std::system_error(e, std::generic_category(), "graph.bin: cannot stat " + path);
    }
    try {
      if (!S_ISREG(st.st_mode)) throw GraphFileError("is not a regular file (" + kind(st.st_mode) + ")");
      size_ = static_cast<std::uint64_t>(st.st_size);
      if (size_ < kHeaderBytes)
        throw GraphFileError("file is " + str(size_) + " bytes, shorter than the 96-byte header");
      char h[kHeaderBytes];
      read_exact(h, kHeaderBytes, 0);
      check_header(h);
    } catch (...) {
      ::close(fd_);
      throw;
    }
  }
  ~GraphFile() { ::close(fd_); }
  GraphFile(const GraphFile&) = delete;
  GraphFile& operator=(const GraphFile&) = delete;

  // Bytes of the level-0 block: g.n * g.element_bytes().
  std::size_t level0_bytes() const { return level0_bytes_; }

  // Reads the body: the level-0 block into `level0` (level0_bytes() bytes), the rest into
  // the result; checks every record. Throws GraphFileError, leaving `level0` unspecified.
  GraphContent read(char* level0) {
    GraphContent out;
    out.maxlevel = maxlevel_;
    out.enterpoint = enterpoint_;
    read_exact(level0, level0_bytes_, kHeaderBytes);
    out.upper.resize(size_ - kHeaderBytes - level0_bytes_);  // within the range the header allows
    read_exact(out.upper.data(), out.upper.size(), kHeaderBytes + level0_bytes_);
    char extra;
    if (pread_some(&extra, 1, size_) != 0) throw GraphFileError("file grew while being read");
    check_level0(level0, out);
    walk_upper(out);
    check_levels(out);
    check_upper_links(out);
    return out;
  }

 private:
  template <class T>
  static T load(const char* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  static std::string kind(mode_t m) {
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    return "not a plain file";
  }
  static std::size_t mul(std::size_t a, std::size_t b, const char* what) {
    std::size_t r;
    if (__builtin_mul_overflow(a, b, &r)) throw GraphFileError(std::string(what) + " overflows");
    return r;
  }
  static std::size_t add(std::size_t a, std::size_t b, const char* what) {
    std::size_t r;
    if (__builtin_add_overflow(a, b, &r)) throw GraphFileError(std::string(what) + " overflows");
    return r;
  }
  template <class T>
  static std::string str(T v) { return std::to_string(v); }
  static std::string elem(std::size_t i) { return "element " + str(i); }
  static std::string out_of_range(const std::string& what, std::uint64_t v, std::size_t n) {
    return what + " " + str(v) + " out of range (n = " + str(n) + ")";
  }

  ssize_t pread_some(char* dst, std::size_t bytes, std::uint64_t at) {
    for (;;) {
      ssize_t r = ::pread(fd_, dst, std::min<std::size_t>(bytes, std::size_t{1} << 30), static_cast<off_t>(at));
      if (r >= 0) return r;
      if (errno != EINTR) throw std::system_error(errno, std::generic_category(), "graph.bin: read failed");
    }
  }
  void read_exact(char* dst, std::size_t bytes, std::uint64_t at) {
    while (bytes > 0) {
      const ssize_t r = pread_some(dst, bytes, at);
      if (r == 0)
        throw GraphFileError("file shrank while being read (" + str(bytes) + " bytes missing at offset " + str(at) +
                             ")");
      dst += r;
      at += static_cast<std::uint64_t>(r);
      bytes -= static_cast<std::size_t>(r);
    }
  }

  void expect(const char* field, std::uint64_t got, std::uint64_t want, const char* why) {
    if (got != want)
      throw GraphFileError("header field " + std::string(field) + " = " + str(got) + ", expected " +
                           str(want) + " (" + why + ")");
  }

  void check_header(const char* h) {
    const std::size_t n = g_.n;
    expect("offsetLevel0_", load<std::uint64_t>(h + 0), 0, "hnswlib always writes 0");
    const std::uint64_t max_elements = load<std::uint64_t>(h + 8);
    expect("cur_element_count", load<std::uint64_t>(h + 16), n, "the metadata's row count");
    if (max_elements < n)
      throw GraphFileError("header field max_elements_ = " + str(max_elements) +
                           " is below the element count " + str(n));
    // M first: the sizes below follow from it (and from dim)
    expect("maxM_", load<std::uint64_t>(h + 56), g_.M, "the store's M");
    expect("maxM0_", load<std::uint64_t>(h + 64), g_.maxM0(), "2 M");
    expect("M_", load<std::uint64_t>(h + 72), g_.M, "the store's M");
    expect("size_data_per_element_", load<std::uint64_t>(h + 24), g_.element_bytes(), "implied by dim and M");
    expect("label_offset_", load<std::uint64_t>(h + 32), g_.label_offset(), "implied by dim and M");
    expect("offsetData_", load<std::uint64_t>(h + 40), g_.data_offset(), "implied by M");
    maxlevel_ = load<std::int32_t>(h + 48);
    enterpoint_ = load<std::uint32_t>(h + 52);
    const double mult = load<double>(h + 80);
    if (!std::isfinite(mult)) throw GraphFileError("header field mult_ is not finite");
    // ef_construction_ (h + 88) and mult_'s value are construction settings: the store's own are used.
    if (n == 0) {
      if (maxlevel_ != -1 || enterpoint_ != 0xffffffffu)
        throw GraphFileError("an empty graph must have maxlevel_ = -1 and enterpoint_node_ = 4294967295, got " +
                             str(maxlevel_) + " and " + str(enterpoint_));
    } else {
      if (maxlevel_ < 0 || maxlevel_ > kMaxLevel)
        throw GraphFileError("header field maxlevel_ = " + str(maxlevel_) + " is outside [0, " +
                             str(kMaxLevel) + "]");
      if (enterpoint_ >= n)
        throw GraphFileError(out_of_range("header field enterpoint_node_ =", enterpoint_, n));
    }
    level0_bytes_ = mul(n, g_.element_bytes(), "the level-0 block's size");
    const char* what = "the file size";
    const std::size_t lo = add(add(kHeaderBytes, level0_bytes_, what), mul(n, 4, what), what);
    const std::size_t per = mul(static_cast<std::size_t>(std::max(maxlevel_, 0)), g_.links_bytes(), what);
    const std::size_t hi = add(lo, mul(n, per, what), what);
    if (size_ < lo || size_ > hi)
      throw GraphFileError("file is " + str(size_) + " bytes; its header allows " +
                           (lo == hi ? str(lo) : "between " + str(lo) + " and " + str(hi)));
  }

  // Level 0: link counts and ids, the flag bytes, labels (each row once), vectors.
  void check_level0(const char* level0, GraphContent& out) const {
    const std::size_t n = g_.n, d = g_.dim, eb = g_.element_bytes();
    const std::size_t maxM0 = g_.maxM0();
    // A float32 unit vector from ingest's normalisation has |<v,v> - 1| <= (d + 6) u (its float
    // sum of squares, 1/sqrt and product roundings, u = 2^-24), and the float dot taken here
    // adds <= (d + 1) u: (2 d + 16) u bounds both with room to spare (4.7e-5 at d = 384).
    const double tol = (2.0 * static_cast<double>(d) + 16.0) * std::ldexp(1.0, -24);
    const Kernels& k = kernels();
    out.iid_of_row.assign(n, 0xffffffffu);
    float max_sq = 0.0f;
    for (std::size_t i = 0; i < n; ++i) {
      const char* e = level0 + i * eb;
      const std::size_t count = load<std::uint16_t>(e);
      if (e[2] != 0) throw GraphFileError(elem(i) + ", level 0: deleted flag set (this store never deletes)");
      if (e[3] != 0)
        throw GraphFileError(elem(i) + ", level 0: reserved byte is " + str(static_cast<unsigned char>(e[3])) +
                             ", not 0");
      if (count > maxM0)
        throw GraphFileError(elem(i) + ", level 0: " + str(count) + " links, more than maxM0 = " + str(maxM0));
      for (std::size_t j = 0; j < count; ++j) {
        const std::uint32_t id = load<std::uint32_t>(e + 4 + 4 * j);
        if (id >= n)
          throw GraphFileError(out_of_range(elem(i) + ", level 0: neighbour id", id, n));
      }
      const std::uint64_t label = load<std::uint64_t>(e + g_.label_offset());
      if (label >= n)
        throw GraphFileError(out_of_range(elem(i) + ": label", label, n));
      if (out.iid_of_row[label] != 0xffffffffu)
        throw GraphFileError(elem(i) + ": label " + str(label) + " repeats element " +
                             str(out.iid_of_row[label]));
      out.iid_of_row[label] = static_cast<std::uint32_t>(i);
      const float* v = reinterpret_cast<const float*>(e + g_.data_offset());
      const float sq = k.dot(v, v, d);
      if (!std::isfinite(sq))
        for (std::size_t j = 0; j < d; ++j)
          if (!std::isfinite(v[j]))
            throw GraphFileError(elem(i) + ": vector component " + str(j) + " is not finite");
      if (g_.unit_vectors && !(std::fabs(static_cast<double>(sq) - 1.0) <= tol))
        throw GraphFileError(elem(i) + ": vector is not of unit length (squared norm " + str(sq) +
                             ") in a cosine store");
      max_sq = std::max(max_sq, sq);
    }
    out.max_sq_norm = max_sq;
  }

  // The upper-level section: per element a size, then that many bytes; nothing after.
  void walk_upper(GraphContent& out) const {
    const std::size_t n = g_.n, lb = g_.links_bytes(), total = out.upper.size();
    out.levels.assign(n, 0);
    out.upper_at.assign(n, 0);
    std::size_t at = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (total - at < 4) throw GraphFileError(elem(i) + ": file ends before its link-list size");
      const std::uint32_t bytes = load<std::uint32_t>(out.upper.data() + at);
      at += 4;
      if (bytes % lb != 0)
        throw GraphFileError(elem(i) + ": link-list size " + str(bytes) + " is not a multiple of " +
                             str(lb) + " (4 + 4 maxM)");
      const std::size_t level = bytes / lb;
      if (level > static_cast<std::size_t>(maxlevel_))
        throw GraphFileError(elem(i) + ": level " + str(level) + " above maxlevel_ = " + str(maxlevel_));
      if (total - at < bytes) throw GraphFileError(elem(i) + ": file ends inside its link lists");
      out.levels[i] = static_cast<int>(level);
      out.upper_at[i] = at;
      at += bytes;
    }
    if (at != total)
      throw GraphFileError(str(total - at) + " trailing bytes after the last element's link lists");
  }

  void check_levels(const GraphContent& out) const {
    if (g_.n == 0) return;
    const int top = *std::max_element(out.levels.begin(), out.levels.end());
    if (top != maxlevel_)
      throw GraphFileError("header field maxlevel_ = " + str(maxlevel_) + " but the highest element level is " +
                           str(top));
    if (out.levels[enterpoint_] != maxlevel_)
      throw GraphFileError("header field enterpoint_node_ = " + str(enterpoint_) + " is an element of level " +
                           str(out.levels[enterpoint_]) + ", not of maxlevel_ = " + str(maxlevel_));
  }

  // Levels 1 and up: counts <= maxM; each neighbour exists and reaches the level (hnswlib
  // reads the neighbour's own list at that level).
  void check_upper_links(const GraphContent& out) const {
    const std::size_t n = g_.n, lb = g_.links_bytes(), maxM = g_.M;
    for (std::size_t i = 0; i < n; ++i) {
      for (int l = 1; l <= out.levels[i]; ++l) {
        const char* r = out.upper.data() + out.upper_at[i] + static_cast<std::size_t>(l - 1) * lb;
        const std::size_t count = load<std::uint16_t>(r);
        const std::string where = elem(i) + ", level " + str(l);
        if (r[2] != 0 || r[3] != 0) throw GraphFileError(where + ": reserved bytes are not 0");
        if (count > maxM)
          throw GraphFileError(where + ": " + str(count) + " links, more than maxM = " + str(maxM));
        for (std::size_t j = 0; j < count; ++j) {
          const std::uint32_t id = load<std::uint32_t>(r + 4 + 4 * j);
          if (id >= n)
            throw GraphFileError(out_of_range(where + ": neighbour id", id, n));
          if (out.levels[id] < l)
            throw GraphFileError(where + ": neighbour " + str(id) + " has level " + str(out.levels[id]) +
                                 ", below " + str(l));
        }
      }
    }
  }

  GraphGeometry g_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
  std::size_t level0_bytes_ = 0;
  int maxlevel_ = -1;
  std::uint32_t enterpoint_ = 0xffffffffu;
};

}  // namespace chrono

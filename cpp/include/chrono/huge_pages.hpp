// An allocator for the large buffers the certified scan reads in random order (the compact
// int8 copy, the planner's per-row validity / penalty rows), like AnnIndex's level-0 block:
// blocks of 2 MiB or more are 2 MiB-aligned and marked MADV_HUGEPAGE before anything
// touches them, so where transparent huge pages are in "madvise" mode (a common default)
// they fault in as 2 MiB pages and a random row costs no page walk. A hint only: where THP
// is off, or off Linux, the memory is ordinary. Smaller blocks come from std::allocator.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>
#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace chrono {

// Advises transparent huge pages for the whole 2 MiB pages inside [p, p + bytes): for the
// allocator below, and for output buffers from a caller's pool (as NumPy does for its own
// large arrays). Where THP is in "madvise" mode, untouched pages then fault in 2 MiB at a
// time. Advisory: errors are ignored, and a range holding no whole 2 MiB page is left alone.
inline void advise_huge_pages(void* p, std::size_t bytes) noexcept {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr std::size_t kHuge = std::size_t{2} << 20;
  const std::uintptr_t b = reinterpret_cast<std::uintptr_t>(p), e = b + bytes;
  const std::uintptr_t lo = (b + kHuge - 1) & ~(kHuge - 1), hi = e & ~(kHuge - 1);
  if (hi > lo) madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE);
#else
  (void)p;
  (void)bytes;
#endif
}

template <class T>
struct HugePageAllocator {
  using value_type = T;
  static constexpr std::size_t kMinBytes = std::size_t{2} << 20;

  HugePageAllocator() noexcept = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) noexcept {}
  static constexpr std::size_t max_size() noexcept { return static_cast<std::size_t>(-1) / sizeof(T); }

  T* allocate(std::size_t n) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (n <= max_size() && n * sizeof(T) >= kMinBytes) {
      void* p = nullptr;
      if (posix_memalign(&p, kMinBytes, n * sizeof(T)) != 0) throw std::bad_alloc();
      advise_huge_pages(p, n * sizeof(T));  // advisory: failure leaves ordinary pages
      return static_cast<T*>(p);
    }
#endif
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, std::size_t n) noexcept {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (n * sizeof(T) >= kMinBytes) {
      std::free(p);
      return;
    }
#endif
    std::allocator<T>().deallocate(p, n);
  }
  friend bool operator==(const HugePageAllocator&, const HugePageAllocator&) noexcept { return true; }
  friend bool operator!=(const HugePageAllocator&, const HugePageAllocator&) noexcept { return false; }
};

template <class T>
using huge_vector = std::vector<T, HugePageAllocator<T>>;

}  // namespace chrono

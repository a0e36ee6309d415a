// Arrays of shared state that start on a cache-line (or range-block) boundary.
//
// The simulated platform keys its cache lines by address (core/platform/sim.h: line = address /
// 64) and the byte ranges of P::touch_range by 4 KiB block (Simulation::kRangeBlockBytes). An
// array that `new T[n]` places at a 16-byte boundary starts at an offset inside its first line
// or block that depends on the heap's state, which other threads (the streaming verifier, the
// runner) change: which elements share a line, how many lines a byte range spans and which
// ranges share a block would then differ from one run to the next, and a simulated run would not
// be deterministic. Every array whose elements are shared between clients is therefore of an
// alignas(64) element type or allocated here; byte buffers charged through P::touch_range are
// allocated here at kRangeAlign with their size rounded up to it, so that no two share a block.
#pragma once

#include <cstddef>
#include <memory>
#include <new>

namespace walbench {

inline constexpr size_t kLineAlign = 64;
inline constexpr size_t kRangeAlign = 4096;  // Simulation::kRangeBlockBytes

template <class T>
struct AlignedArrayDelete {
  size_t n = 0;
  size_t align = kLineAlign;
  void operator()(T* p) const {
    std::destroy_n(p, n);
    ::operator delete(static_cast<void*>(p), std::align_val_t{align});
  }
};

template <class T>
using AlignedArray = std::unique_ptr<T[], AlignedArrayDelete<T>>;

// n value-initialised elements (zero for scalars) from an `align`-byte boundary; with
// kRangeAlign, n is rounded up so that the array ends on a block boundary too.
template <class T>
AlignedArray<T> make_aligned_array(size_t n, size_t align = kLineAlign) {
  if (align == kRangeAlign)
    n = (n * sizeof(T) + kRangeAlign - 1) / kRangeAlign * kRangeAlign / sizeof(T);
  T* p = static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{align}));
  try {
    std::uninitialized_value_construct_n(p, n);
  } catch (...) {
    ::operator delete(static_cast<void*>(p), std::align_val_t{align});
    throw;
  }
  return AlignedArray<T>(p, AlignedArrayDelete<T>{n, align});
}

}  // namespace walbench

// core/wal headers are scanned. Never compiled.
#pragma once
#include <atomic>
namespace walbench {
template <class P>
struct WalPlanted {
  std::atomic<uint64_t> pages_{0};  // expect-lint: std::atomic
  std::atomic<uint64_t> counted_{0};  // shared-state-lint: allow written under a lock whose cost P charges
};
}  // namespace walbench

// Counter: instrumentation that one writer at a time increments (its owner, or whoever holds
// the lock that guards it) and any thread may read while a run goes on.
//
// Increments are a relaxed load and a relaxed store, not a read-modify-write: on x86 that is
// the plain `mov` a uint64_t field costs, so counting changes nothing the model measures, and a
// monitor can snapshot the counter at the edges of the timed window without a data race (the
// runner diffs two snapshots; harness/RESULTS.md "Windows"). A counter incremented by several
// writers without a common lock may lose an increment; such counters say so where declared.
// It is instrumentation, not modelled shared state: it does not go through P and costs nothing
// on the simulated platform.
#pragma once

#include <atomic>
#include <cstdint>

namespace walbench {

class Counter {
 public:
  Counter(uint64_t v = 0) : v_(v) {}  // NOLINT: implicit, so `Counter c = 0;` reads naturally
  Counter(const Counter& o) : v_(o.get()) {}
  Counter& operator=(const Counter& o) {
    set(o.get());
    return *this;
  }
  Counter& operator=(uint64_t v) {
    set(v);
    return *this;
  }
  Counter& operator++() {
    set(get() + 1);
    return *this;
  }
  Counter& operator+=(uint64_t n) {
    set(get() + n);
    return *this;
  }
  operator uint64_t() const { return get(); }  // NOLINT: reads like the field it replaces
  uint64_t get() const { return v_.load(std::memory_order_relaxed); }

 private:
  void set(uint64_t v) { v_.store(v, std::memory_order_relaxed); }
  std::atomic<uint64_t> v_;  // shared-state-lint: allow instrumentation, not modelled state (see top)
};

// nlohmann/json's serializer hook (found by argument-dependent lookup): a Counter is its value.
template <class Json>
void to_json(Json& j, const Counter& c) {
  j = c.get();
}

}  // namespace walbench

// core/platform implements P with real atomics, mutexes and clocks: not scanned.
#pragma once
#include <atomic>
#include <chrono>
#include <mutex>
struct ThreadsLike {
  template <class T> using Atomic = std::atomic<T>;
  static uint64_t now_ns() { return std::chrono::steady_clock::now().time_since_epoch().count(); }
  static inline std::mutex mu;
};

// The threads platform: real OS threads, real atomics, real time. Each client is a std::thread
// (the harness starts them); P::Semaphore is a C++20 counting semaphore (a futex on Linux, like
// PostgreSQL's unnamed POSIX semaphores since PG 10).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <semaphore>
#include <thread>

#include "core/platform/platform.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace walbench {

struct ThreadsPlatform {
  static constexpr const char* name = "threads";

  template <class T>
  class Atomic {
   public:
    Atomic() = default;
    explicit Atomic(T v) : v_(v) {}
    Atomic(const Atomic&) = delete;
    Atomic& operator=(const Atomic&) = delete;

    T load() const { return v_.load(); }
    // seq_cst: xchg on x86 (a full barrier); release / relaxed: a plain mov (platform.h STORE
    // ORDER).
    void store(T v, std::memory_order order = std::memory_order_seq_cst) { v_.store(v, order); }
    T fetch_add(T d) { return v_.fetch_add(d); }
    T fetch_sub(T d) { return v_.fetch_sub(d); }
    T fetch_or(T d) { return v_.fetch_or(d); }
    T fetch_and(T d) { return v_.fetch_and(d); }
    T exchange(T v) { return v_.exchange(v); }
    bool compare_exchange(T& expected, T desired) {
      return v_.compare_exchange_strong(expected, desired);
    }
    // Spin (reading, with a pause) while the value equals v; returns the new value.
    T wait_while_eq(T v) const {
      T cur;
      while ((cur = v_.load(std::memory_order_acquire)) == v) spin_delay();
      return cur;
    }

   private:
    std::atomic<T> v_{};
  };

  // Plain shared data. Whoever reads or writes it holds the lock that protects it; on threads
  // this is an ordinary variable.
  template <class T>
  class Shared {
   public:
    Shared() = default;
    explicit Shared(T v) : v_(v) {}
    T get() const { return v_; }
    void set(T v) { v_ = v; }

   private:
    T v_{};
  };

  class Semaphore {
   public:
    void wait() { sem_.acquire(); }
    void post() { sem_.release(); }
    bool try_wait() { return sem_.try_acquire(); }

   private:
    std::counting_semaphore<1 << 30> sem_{0};
  };

  static uint64_t now_ns() {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
  }
  static void work(uint64_t ns) {
    if (ns == 0) return;
    const uint64_t until = now_ns() + ns;
    while (now_ns() < until) spin_delay();
  }
  static void copy(void* dst, const void* src, size_t n) { std::memcpy(dst, src, n); }
  static void touch_range(const void*, size_t, RangeAccess) {}  // the hardware does it
  template <class F>
  static void read_run(const void*, size_t, size_t n, F&& read) {
    for (size_t i = 0; i < n; ++i) read(i);
  }
  static void sleep_ns(uint64_t ns) { std::this_thread::sleep_for(std::chrono::nanoseconds(ns)); }
  static void spin_delay() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#elif defined(__aarch64__)
    asm volatile("isb" ::: "memory");
#endif
  }
  static void memory_barrier() {
#ifdef WALBENCH_TSAN
    // ThreadSanitizer does not model fences; a seq_cst RMW on a shared dummy gives it the
    // happens-before edges a fence would (and keeps -Wtsan quiet).
    static std::atomic<uint32_t> fence_word{0};
    fence_word.fetch_add(0, std::memory_order_seq_cst);
#else
    std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
  }
  // pg_write_barrier: orders earlier stores before later ones. A compiler barrier on x86
  // (arch-x86.h); a release fence here keeps the compiler and a weaker machine in order.
  static void write_barrier() {
#ifdef WALBENCH_TSAN
    // TSan models no fence; memory_barrier's shared RMW would give it happens-before edges
    // between unrelated threads and hide races. The stores it orders are release atomics.
    std::atomic_signal_fence(std::memory_order_seq_cst);
#else
    std::atomic_thread_fence(std::memory_order_release);
#endif
  }
};

static_assert(Platform<ThreadsPlatform>);

}  // namespace walbench

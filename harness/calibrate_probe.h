// How `walbench calibrate` takes a figure (harness/calibrate.h): the clock, CPU hints, pinning a
// measuring thread, memory that is not page-faulted while measured, and the statistics every
// figure is reported with (median, interquartile range, sample count). The measurements
// themselves are in calibrate_cpu, calibrate_os and calibrate_storage.
#pragma once

#include <semaphore.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace walbench::calibration {

constexpr size_t kMiB = size_t{1} << 20;

// ---- time, CPU hints, pinning ---------------------------------------------------------------

double now_ns();  // steady clock

inline void compiler_barrier() { asm volatile("" ::: "memory"); }

// The spin-wait hint the locks use (s_lock's spin_delay).
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#else
  compiler_barrier();
#endif
}

// What cpu_relax() executes, for the preset's "sources".
extern const char* const kPauseWhat;

// Keeps `p`'s memory alive for the optimizer (a copy into it is not dead).
inline void escape(const void* p) { asm volatile("" : : "r"(p) : "memory"); }

// Pins the calling thread; false if cpu < 0 or the kernel refused.
bool pin_self(int cpu);

// Runs f() on a new thread pinned to `cpu` (-1: unpinned) and returns its result (or rethrows
// its exception here). The caller's own affinity is never changed.
template <class F>
auto on_cpu(int cpu, F f) {
  decltype(f()) result{};
  std::exception_ptr error;
  std::thread t([&] {
    pin_self(cpu);
    try {
      result = f();
    } catch (...) {
      error = std::current_exception();
    }
  });
  t.join();
  if (error) std::rethrow_exception(error);
  return result;
}

// Every CPU of `cpus` at once, one thread pinned to each: prepare(k) on thread k first (its
// memory, its file), then samples + 1 windows (the first a warm-up, dropped) that all threads
// start together (a spin barrier); in a window thread k calls step(k), which returns the bytes
// it moved, until window_ns have passed. One sample: the sum of the threads' bytes per ns. An
// exception on any thread stops the others at their next barrier and is rethrown here.
template <class Prepare, class Step>
std::vector<double> aggregate_rate_all_cpus(const std::vector<int>& cpus, int samples,
                                            double window_ns, Prepare prepare, Step step) {
  const size_t n = cpus.size();
  std::atomic<size_t> arrived{0};
  std::atomic<uint64_t> generation{0};
  std::atomic<bool> failed{false};
  // false when another thread failed: stop.
  auto arrive_and_wait = [&] {
    const uint64_t g = generation.load(std::memory_order_acquire);
    if (arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == n) {
      arrived.store(0, std::memory_order_relaxed);
      generation.fetch_add(1, std::memory_order_release);
    } else {
      for (int spins = 0; generation.load(std::memory_order_acquire) == g; ++spins) {
        if (failed.load(std::memory_order_acquire)) return false;
        if (spins < 1000)
          cpu_relax();
        else
          std::this_thread::yield();
      }
    }
    return !failed.load(std::memory_order_acquire);
  };
  std::vector<std::vector<double>> rates(n);
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::thread> threads;
  for (size_t k = 0; k < n; ++k) {
    threads.emplace_back([&, k] {
      pin_self(cpus[k]);
      try {
        prepare(k);
        for (int s = 0; s <= samples; ++s) {
          if (!arrive_and_wait()) return;
          const double t0 = now_ns();
          double t = t0;
          double bytes = 0;
          while (t - t0 < window_ns) {
            bytes += static_cast<double>(step(k));
            t = now_ns();
          }
          if (s > 0) rates[k].push_back(bytes / (t - t0));
        }
      } catch (...) {
        errors[k] = std::current_exception();
        failed.store(true, std::memory_order_release);
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  std::vector<double> v(static_cast<size_t>(samples), 0.0);
  for (size_t k = 0; k < n; ++k)
    for (size_t s = 0; s < v.size(); ++s) v[s] += rates[k][s];
  return v;
}

void sleep_ns(long ns);         // nanosleep, restarted after signals
void sem_wait_retry(sem_t* s);  // sem_wait, restarted after signals

// Time per iteration of body(iters), one value per sample (a warm-up sample first, dropped).
template <class Body>
std::vector<double> per_op(int samples, int iters, Body body) {
  std::vector<double> v;
  for (int s = 0; s <= samples; ++s) {
    const double t0 = now_ns();
    body(iters);
    const double dt = now_ns() - t0;
    if (s > 0) v.push_back(dt / iters);
  }
  return v;
}

// Anonymous memory, transparent huge pages asked for, touched (so page faults are not measured)
// now or, for a buffer that another thread will use, by that thread (touch(): first touch
// places the pages on its NUMA node). Throws std::runtime_error if it cannot be mapped.
struct Buffer {
  explicit Buffer(size_t n, bool touch_now = true);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void touch();
  char* data = nullptr;
  size_t size = 0;
};

// ---- statistics -------------------------------------------------------------------------------

struct Spread {
  double median = 0, q1 = 0, q3 = 0;
  size_t n = 0;
};

// Linear interpolation between order statistics (`sorted` ascending); 0 when empty.
double quantile(const std::vector<double>& sorted, double q);
Spread spread_of(std::vector<double> v);
// "51.3 ns (IQR 49.8-53.0, n=400)"; an empty unit (a ratio): "0.412 (IQR 0.380-0.431, n=15)"
std::string show(const Spread& s, const std::string& unit);
// A latency as the sim takes it: whole ns (rounded), negative as 0, at least `floor`.
uint64_t whole_ns(double ns, uint64_t floor);
// A bandwidth with 3 significant digits; 0 for v <= 0.
double round3(double v);

}  // namespace walbench::calibration

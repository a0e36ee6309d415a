// Operating-system measurements of `walbench calibrate` (calibrate_os.h).
#include "harness/calibrate_os.h"

#include <semaphore.h>

#include <atomic>
#include <thread>

#include "harness/calibrate_probe.h"

namespace walbench::calibration {

// Two threads on one CPU hand the CPU to each other through two semaphores: 2 switches per
// round trip (Bendersky's futex ping-pong, the source of the default context_switch_ns).
std::vector<double> context_switches(int cpu, int samples, int rounds, bool* pinned) {
  sem_t s1, s2;
  sem_init(&s1, 0, 0);
  sem_init(&s2, 0, 0);
  std::vector<double> out;
  std::atomic<bool> pin_a{false}, pin_b{false};
  std::thread b([&] {
    pin_b = pin_self(cpu);
    for (int i = 0; i < (samples + 1) * rounds; ++i) {
      sem_wait_retry(&s1);
      sem_post(&s2);
    }
  });
  std::thread a([&] {
    pin_a = pin_self(cpu);
    for (int s = 0; s <= samples; ++s) {
      const double t0 = now_ns();
      for (int r = 0; r < rounds; ++r) {
        sem_post(&s1);
        sem_wait_retry(&s2);
      }
      if (s > 0) out.push_back((now_ns() - t0) / (2.0 * rounds));
    }
  });
  a.join();
  b.join();
  sem_destroy(&s1);
  sem_destroy(&s2);
  *pinned = pin_a && pin_b;
  return out;
}

// sem_post to a thread blocked in sem_wait on another CPU, idle_ns after it blocked: post -> the
// waiter runs, and the duration of the post call itself.
void semaphore_wakes(int cpu_poster, int cpu_waiter, int n, double idle_ns,
                     std::vector<double>* wake, std::vector<double>* post) {
  sem_t s;
  sem_init(&s, 0, 0);
  std::atomic<int> armed{-1}, done{-1};
  std::atomic<double> woke{0};
  std::thread waiter([&] {
    pin_self(cpu_waiter);
    for (int i = 0; i < n; ++i) {
      armed.store(i, std::memory_order_release);
      sem_wait_retry(&s);
      woke.store(now_ns(), std::memory_order_relaxed);
      done.store(i, std::memory_order_release);
    }
  });
  std::thread poster([&] {
    pin_self(cpu_poster);
    for (int i = 0; i < n; ++i) {
      while (armed.load(std::memory_order_acquire) != i) cpu_relax();
      // The waiter blocks in the kernel right after arming; its CPU is idle for about idle_ns.
      const double armed_at = now_ns();
      while (now_ns() - armed_at < idle_ns) cpu_relax();
      const double t0 = now_ns();
      sem_post(&s);
      const double t1 = now_ns();
      while (done.load(std::memory_order_acquire) != i) cpu_relax();
      wake->push_back(woke.load(std::memory_order_relaxed) - t0);
      post->push_back(t1 - t0);
    }
  });
  poster.join();
  waiter.join();
  sem_destroy(&s);
}

std::vector<double> sleep_overshoot(int n) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) {
    const double t0 = now_ns();
    sleep_ns(1000);
    v.push_back(now_ns() - t0 - 1000);
  }
  return v;
}

}  // namespace walbench::calibration

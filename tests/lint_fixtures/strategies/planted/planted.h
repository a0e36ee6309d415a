// Planted violations, one construct per line unless said otherwise. Never compiled.
#pragma once

#include <atomic>
#include <mutex>
#include <thread>

namespace walbench {

int g_inserted = 0;  // expect-lint: namespace-scope variable
inline uint64_t g_next_pos{0};  // expect-lint: namespace-scope variable
static int g_static_counter;  // expect-lint: static
struct { int hits; } g_anonymous_stats;  // expect-lint: namespace-scope variable
const int kFine = 1;
constexpr int kAlsoFine = 2;
extern "C" {
int c_linkage_counter;  // expect-lint: namespace-scope variable
}

template <class P>
class Planted {
 public:
  void insert() {
    std::atomic<uint64_t> local_pos{0};  // expect-lint: std::atomic
    std::atomic_ref<uint64_t> ref(pos_);  // expect-lint: std::atomic_ref
    std::atomic_thread_fence(std::memory_order_seq_cst);  // expect-lint: std::atomic_thread_fence
    atomic_signal_fence(std::memory_order_seq_cst);  // expect-lint: atomic_signal_fence
    std::atomic_flag flag;  // expect-lint: std::atomic_flag
    std::atomic_fetch_add(&local_pos, 1);  // expect-lint: std::atomic_fetch_add
    std::lock_guard<std::mutex> guard(mu_);  // expect-lint: std::lock_guard, std::mutex
    std::unique_lock<std::shared_mutex> lk(smu_);  // expect-lint: std::unique_lock, std::shared_mutex
    cv_.wait(lk);
    std::counting_semaphore<8> sem(0);  // expect-lint: std::counting_semaphore
    std::binary_semaphore bsem(0);  // expect-lint: std::binary_semaphore
    std::this_thread::sleep_for(std::chrono::microseconds(10));  // expect-lint: std::this_thread::sleep_for
    std::this_thread::yield();  // expect-lint: std::this_thread::yield
    sched_yield();  // expect-lint: sched_yield
    usleep(10);  // expect-lint: usleep
    ::nanosleep(&ts, nullptr);  // expect-lint: nanosleep
    sleep(1);  // expect-lint: sleep
    pg_usleep(1000);  // expect-lint: pg_usleep
    const auto t0 = std::chrono::steady_clock::now();  // expect-lint: std::chrono::steady_clock
    const auto t1 = std::chrono::system_clock::now();  // expect-lint: std::chrono::system_clock
    const auto t2 = high_resolution_clock::now();  // expect-lint: high_resolution_clock::now
    clock_gettime(CLOCK_MONOTONIC, &ts);  // expect-lint: clock_gettime
    const uint64_t tsc = __rdtsc();  // expect-lint: __rdtsc
    const auto wall = std::time(nullptr);  // expect-lint: std::time
    __atomic_fetch_add(&plain_, 1, __ATOMIC_SEQ_CST);  // expect-lint: __atomic_fetch_add
    __sync_synchronize();  // expect-lint: __sync_synchronize
    static uint64_t calls = 0;  // expect-lint: static
    static thread_local uint64_t mine;  // expect-lint: static, thread_local
    thread_local int tl;  // expect-lint: thread_local
    volatile uint64_t spin = 0;  // expect-lint: volatile
    std::thread helper([] {});  // expect-lint: std::thread
    pthread_yield();  // expect-lint: pthread_yield
    static std::atomic<int> both{0};  // expect-lint: static, std::atomic
    using std::atomic;  // expect-lint: std::atomic
    atomic<int> unqualified{0};  // expect-lint: atomic
    static const int kLocalConst = 3;
    static constexpr int kLocalConstexpr = 4;
    uint64_t x = P::now_ns();
    P::sleep_ns(10);
  }

  static int shared_member_;  // expect-lint: static
  static inline std::mutex class_mutex_;  // expect-lint: static, std::mutex
  static constexpr uint32_t kSlots = 4;
  static const uint32_t kMore = 8;
  static Planted make(int n);
  static uint32_t helper(const Planted& p) { return p.plain_; }

 private:
  uint64_t pos_ = 0;
  uint64_t plain_ = 0;
  std::mutex mu_;  // expect-lint: std::mutex
  std::shared_mutex smu_;  // expect-lint: std::shared_mutex
  std::condition_variable cv_;  // expect-lint: std::condition_variable
  std::atomic<bool> stop_{false};  // expect-lint: std::atomic
};

}  // namespace walbench

// Code the lint must accept: everything here is shared through P, constant, per-object, or
// only mentions a forbidden name in a comment or a string. Never compiled. No finding allowed.
//
// Comments may say std::atomic, std::mutex, volatile, thread_local, sleep(1), usleep(10),
// std::this_thread::yield(), steady_clock::now(), static int x; and so may /* block comments:
// std::atomic<int> g; static uint64_t n; */ without a finding.
#pragma once

#include <atomic>  // includes are not findings; uses are
#include <cstdint>
#include <mutex>

#define WALBENCH_CLEAN_VERSION 1
#define WALBENCH_CLEAN_MAX(a, b) ((a) > (b) ? (a) : (b))

namespace walbench {

class Forward;
struct AlsoForward;
enum class CleanMode : uint8_t { kOne, kTwo };
using CleanWord = uint64_t;
typedef uint32_t CleanCount;
namespace alias = walbench;
constexpr uint64_t kMillion = 1'000'000;
inline constexpr uint32_t kLines = 8;
const char* const kCleanName = "std::mutex and static int x; in a string";
static constexpr uint32_t kStaticConstexpr = 64;
static const uint32_t kStaticConst = 64;
static_assert(kLines == 8, "eight");
extern template class std::vector<int>;

uint64_t clean_function(uint64_t x);
template <class P>
void clean_template_function(P& p) {
  p.sleep(1);
}
inline uint64_t clean_inline(uint64_t x) { return x * 2; }
bool operator==(const Forward& a, const Forward& b);

template <class P>
  requires requires { typename P::SpinLockWord; }
struct CleanRequires {
  using type = typename P::SpinLockWord;
};

struct CleanPlain {
  uint64_t owner_written = 0;  // per-object state is the model's business, not the lint's
};

template <class P>
class CleanStrategy {
 public:
  static CleanStrategy make(uint32_t n);
  static uint32_t distance(const CleanStrategy& s) { return s.n_; }
  static void delay() { P::spin_delay(); }
  static Forward& instance();
  CleanStrategy& operator=(const CleanStrategy&) = default;

  void insert(uint64_t size) {
    const uint64_t start = reserved_.fetch_add(size);  // std::atomic would be flagged here
    static constexpr uint32_t kLocal = 4;
    static const char* const kLabel = "static uint64_t n;";
    const char quote = '"';
    const char apostrophe = '\'';
    const uint64_t now = P::now_ns();
    P::sleep_ns(10);
    P::work(static_cast<uint64_t>(kLocal));
    P::memory_barrier();
    auto on_wait = [&](uint64_t v) { return v + start + now; };
    uint64_t time = on_wait(size);
    timestamp_.set(time + quote + apostrophe);
    const char* raw = R"(std::atomic<int> x; volatile; sleep(1); "quoted")";
    (void)raw;
    (void)kLabel;
  }

 private:
  alignas(128) typename P::template Atomic<uint64_t> reserved_{0};
  typename P::template Shared<uint64_t> timestamp_{0};
  typename P::Semaphore sem_;
  uint32_t n_ = 0;
  std::memory_order order_ = std::memory_order_seq_cst;
};

}  // namespace walbench

// The measuring toolkit of `walbench calibrate` (calibrate_probe.h).
#include "harness/calibrate_probe.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>

#include "absl/strings/str_format.h"

namespace walbench::calibration {

double now_ns() {
  return std::chrono::duration<double, std::nano>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

#if defined(__x86_64__) || defined(__i386__)
const char* const kPauseWhat = "_mm_pause() (PAUSE)";
#elif defined(__aarch64__)
const char* const kPauseWhat = "the AArch64 yield instruction";
#else
const char* const kPauseWhat = "an empty spin-loop iteration (no pause instruction here)";
#endif

bool pin_self(int cpu) {
  if (cpu < 0) return false;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

void sleep_ns(long ns) {
  timespec ts{ns / 1000000000L, ns % 1000000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

void sem_wait_retry(sem_t* s) {
  while (sem_wait(s) != 0 && errno == EINTR) {
  }
}

Buffer::Buffer(size_t n, bool touch_now) : size(n) {
  void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    throw std::runtime_error(absl::StrFormat("calibrate: cannot map %d MiB", n / kMiB));
  (void)madvise(p, n, MADV_HUGEPAGE);
  data = static_cast<char*>(p);
  if (touch_now) touch();
}

Buffer::~Buffer() { munmap(data, size); }

void Buffer::touch() {
  for (size_t i = 0; i < size; i += 4096) data[i] = static_cast<char>(i >> 12);
}

double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t i = static_cast<size_t>(pos);
  const double f = pos - static_cast<double>(i);
  return i + 1 < sorted.size() ? sorted[i] * (1 - f) + sorted[i + 1] * f : sorted[i];
}

Spread spread_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {quantile(v, 0.5), quantile(v, 0.25), quantile(v, 0.75), v.size()};
}

namespace {
std::string num(double v) {
  const double a = std::fabs(v);
  if (a >= 100) return absl::StrFormat("%.0f", v);
  if (a >= 10) return absl::StrFormat("%.1f", v);
  if (a >= 1) return absl::StrFormat("%.2f", v);
  return absl::StrFormat("%.3f", v);
}
}  // namespace

std::string show(const Spread& s, const std::string& unit) {
  const std::string with_unit = unit.empty() ? num(s.median) : num(s.median) + " " + unit;
  return absl::StrFormat("%s (IQR %s-%s, n=%d)", with_unit, num(s.q1), num(s.q3), s.n);
}

uint64_t whole_ns(double ns, uint64_t floor) {
  return std::max<uint64_t>(floor, static_cast<uint64_t>(std::llround(std::max(0.0, ns))));
}

double round3(double v) {
  if (v <= 0) return 0;
  const double scale = std::pow(10.0, 2 - std::floor(std::log10(v)));
  return std::round(v * scale) / scale;
}

}  // namespace walbench::calibration

// `walbench calibrate`: what each measurement does and how a figure becomes a SimConfig value is
// in calibrate.h. Every measurement runs on threads it creates and pins itself, so the caller's
// affinity is never changed; every loop is bounded (a fixed count or a time budget).
#include "harness/calibrate.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>
#include <ostream>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "absl/strings/str_format.h"
#include "core/platform/sim.h"
#include "core/wal/crc32c.h"
#include "harness/config.h"
#include "harness/runner.h"

namespace walbench {
namespace {

using ojson = nlohmann::ordered_json;
constexpr size_t kMiB = size_t{1} << 20;

// ---- time, CPU hints, pinning ---------------------------------------------------------------

double now_ns() {
  return std::chrono::duration<double, std::nano>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

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

#if defined(__x86_64__) || defined(__i386__)
constexpr const char* kPauseWhat = "_mm_pause() (PAUSE)";
#elif defined(__aarch64__)
constexpr const char* kPauseWhat = "the AArch64 yield instruction";
#else
constexpr const char* kPauseWhat = "an empty spin-loop iteration (no pause instruction here)";
#endif

// Keeps `p`'s memory alive for the optimizer (a copy into it is not dead).
inline void escape(const void* p) { asm volatile("" : : "r"(p) : "memory"); }

bool pin_self(int cpu) {
  if (cpu < 0) return false;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

// Runs f() on a new thread pinned to `cpu` (-1: unpinned) and returns its result (or rethrows
// its exception here).
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

void sleep_ns(long ns) {
  timespec ts{ns / 1000000000L, ns % 1000000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

void sem_wait_retry(sem_t* s) {
  while (sem_wait(s) != 0 && errno == EINTR) {
  }
}

// Anonymous memory, transparent huge pages asked for, touched (so page faults are not measured)
// now or, for a buffer that another thread will use, by that thread (touch(): first touch
// places the pages on its NUMA node).
struct Buffer {
  explicit Buffer(size_t n, bool touch_now = true) : size(n) {
    void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
      throw std::runtime_error(absl::StrFormat("calibrate: cannot map %d MiB", n / kMiB));
    (void)madvise(p, n, MADV_HUGEPAGE);
    data = static_cast<char*>(p);
    if (touch_now) touch();
  }
  void touch() {
    for (size_t i = 0; i < size; i += 4096) data[i] = static_cast<char>(i >> 12);
  }
  ~Buffer() { munmap(data, size); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  char* data = nullptr;
  size_t size = 0;
};

// ---- statistics -------------------------------------------------------------------------------

struct Spread {
  double median = 0, q1 = 0, q3 = 0;
  size_t n = 0;
};

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

std::string num(double v) {
  const double a = std::fabs(v);
  if (a >= 100) return absl::StrFormat("%.0f", v);
  if (a >= 10) return absl::StrFormat("%.1f", v);
  if (a >= 1) return absl::StrFormat("%.2f", v);
  return absl::StrFormat("%.3f", v);
}

// "51.3 ns (IQR 49.8-53.0, n=400)"
std::string show(const Spread& s, const std::string& unit) {
  return absl::StrFormat("%s %s (IQR %s-%s, n=%d)", num(s.median), unit, num(s.q1), num(s.q3), s.n);
}

// A latency as the sim takes it: whole ns, at least `floor`.
uint64_t whole_ns(double ns, uint64_t floor) {
  return std::max<uint64_t>(floor, static_cast<uint64_t>(std::llround(std::max(0.0, ns))));
}

// A bandwidth with 3 significant digits.
double round3(double v) {
  if (v <= 0) return 0;
  const double scale = std::pow(10.0, 2 - std::floor(std::log10(v)));
  return std::round(v * scale) / scale;
}

// ---- topology --------------------------------------------------------------------------------

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

long read_long(const std::string& path, long fallback) {
  const std::string s = read_first_line(path);
  if (s.empty()) return fallback;
  try {
    return std::stol(s);
  } catch (const std::exception&) {
    return fallback;
  }
}

// "0-3,5,7-8" -> {0,1,2,3,5,7,8}
std::vector<int> parse_cpu_list(const std::string& s) {
  std::vector<int> out;
  size_t i = 0;
  while (i < s.size()) {
    size_t end = s.find(',', i);
    if (end == std::string::npos) end = s.size();
    const std::string part = s.substr(i, end - i);
    const size_t dash = part.find('-');
    try {
      if (dash == std::string::npos) {
        if (!part.empty()) out.push_back(std::stoi(part));
      } else {
        const int a = std::stoi(part.substr(0, dash)), b = std::stoi(part.substr(dash + 1));
        for (int c = a; c <= b; ++c) out.push_back(c);
      }
    } catch (const std::exception&) {
    }
    i = end + 1;
  }
  return out;
}

struct CpuInfo {
  int cpu = 0;
  int package = 0;
  int core = 0;  // core_id within the package
  int l3 = -1;   // first CPU sharing this CPU's L3; -1 unknown
};

struct Topology {
  std::vector<CpuInfo> cpus;  // online, and in this process's affinity mask
  size_t online = 0;
  uint32_t sockets = 1, cores = 1, smt = 1, cores_per_cluster = 0;
  std::string note;  // adjustments made to fit SimConfig's rules
};

Topology read_topology() {
  const std::string base = "/sys/devices/system/cpu/";
  std::vector<int> online = parse_cpu_list(read_first_line(base + "online"));
  if (online.empty()) {
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    for (long c = 0; c < std::max(1L, n); ++c) online.push_back(static_cast<int>(c));
  }
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  const bool have_mask = sched_getaffinity(0, sizeof allowed, &allowed) == 0;
  Topology t;
  t.online = online.size();
  std::vector<CpuInfo> all;
  for (int c : online) {
    const std::string d = base + "cpu" + std::to_string(c) + "/";
    CpuInfo ci;
    ci.cpu = c;
    ci.package = static_cast<int>(read_long(d + "topology/physical_package_id", 0));
    ci.core = static_cast<int>(read_long(d + "topology/core_id", c));
    for (int idx = 0; idx < 16; ++idx) {
      const std::string cache = d + "cache/index" + std::to_string(idx) + "/";
      const long level = read_long(cache + "level", -1);
      if (level < 0) break;
      if (level == 3) {
        const std::vector<int> shared = parse_cpu_list(read_first_line(cache + "shared_cpu_list"));
        if (!shared.empty()) ci.l3 = *std::min_element(shared.begin(), shared.end());
      }
    }
    all.push_back(ci);
    if (!have_mask || CPU_ISSET(c, &allowed)) t.cpus.push_back(ci);
  }
  std::set<int> packages;
  std::set<std::pair<int, int>> cores;
  std::map<int, std::set<std::pair<int, int>>> l3_cores;  // L3 group -> physical cores
  bool l3_known = true;
  for (const CpuInfo& c : all) {
    packages.insert(c.package);
    cores.insert({c.package, c.core});
    if (c.l3 < 0) l3_known = false;
    l3_cores[c.l3].insert({c.package, c.core});
  }
  t.sockets = static_cast<uint32_t>(std::max<size_t>(1, packages.size()));
  t.cores = static_cast<uint32_t>(std::max<size_t>(1, cores.size()));
  t.smt = static_cast<uint32_t>(std::clamp<size_t>(
      (all.size() + cores.size() / 2) / std::max<size_t>(1, cores.size()), 1, 8));
  if (t.cores % t.sockets != 0) {
    const uint32_t fitted = t.cores / t.sockets * t.sockets;
    t.note = absl::StrFormat("%d cores do not divide evenly into %d sockets: cores = %d", t.cores,
                             t.sockets, std::max(fitted, t.sockets));
    t.cores = std::max(fitted, t.sockets);
  }
  // Clusters: more L3 groups than sockets, all of one size that divides a socket's cores.
  if (l3_known && l3_cores.size() > t.sockets) {
    const size_t g = l3_cores.begin()->second.size();
    bool even = true;
    for (const auto& [l3, members] : l3_cores) even = even && members.size() == g;
    if (even && g > 0 && (t.cores / t.sockets) % g == 0)
      t.cores_per_cluster = static_cast<uint32_t>(g);
  }
  return t;
}

// ---- the measurements -------------------------------------------------------------------------

// Cache-line ping-pong between two pinned threads, as nviennot/core-to-core-latency: each
// thread compare-and-swaps the line from the other's value to its own, so every successful CAS
// moved the line across. One sample: `rounds` round trips; the figure is round trip / 2.
std::vector<double> line_pingpong(int cpu_a, int cpu_b, int samples, int rounds, bool* pinned) {
  struct alignas(64) Line {
    std::atomic<uint64_t> v{0};
  };
  auto line = std::make_unique<Line>();
  const uint64_t total = static_cast<uint64_t>(samples + 1) * static_cast<uint64_t>(rounds);
  std::atomic<bool> pin_a{false}, pin_b{false};
  std::vector<double> out;
  auto play = [&](uint64_t first, auto&& after_round) {
    uint64_t next = first;
    for (uint64_t i = 0; i < total; ++i, next += 2) {
      uint64_t e = next;
      while (!line->v.compare_exchange_strong(e, next + 1, std::memory_order_acq_rel)) e = next;
      after_round(i);
    }
  };
  std::thread b([&] {
    pin_b = pin_self(cpu_b);
    play(1, [](uint64_t) {});
  });
  std::thread a([&] {
    pin_a = pin_self(cpu_a);
    double t0 = now_ns();
    play(0, [&](uint64_t i) {
      if ((i + 1) % static_cast<uint64_t>(rounds) != 0) return;
      const double t1 = now_ns();
      if (i + 1 > static_cast<uint64_t>(rounds))
        out.push_back((t1 - t0) / (2.0 * rounds));  // 1st: warm-up
      t0 = t1;
    });
  });
  a.join();
  b.join();
  *pinned = pin_a && pin_b;
  return out;
}

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

struct CoreFigures {
  std::vector<double> store, rmw_minus_store, empty, fence_minus_empty, pause, hit;
};

CoreFigures core_figures(int samples) {
  CoreFigures f;
  struct alignas(64) Owned {
    std::atomic<uint64_t> x{0};
  } owned;
  constexpr int kIters = 100000;
  for (int s = 0; s < samples; ++s) {
    const double st = per_op(1, kIters, [&](int n) {
      for (int i = 0; i < n; ++i) {
        owned.x.store(static_cast<uint64_t>(i), std::memory_order_relaxed);
        compiler_barrier();
      }
    })[0];
    const double rmw = per_op(1, kIters, [&](int n) {
      for (int i = 0; i < n; ++i) {
        owned.x.fetch_add(1, std::memory_order_relaxed);  // lock xadd
        compiler_barrier();
      }
    })[0];
    const double empty = per_op(1, kIters, [](int n) {
      for (int i = 0; i < n; ++i) compiler_barrier();
    })[0];
    const double fence = per_op(1, kIters / 10, [](int n) {
      for (int i = 0; i < n; ++i) std::atomic_thread_fence(std::memory_order_seq_cst);
    })[0];
    const double pause = per_op(1, kIters / 10, [](int n) {
      for (int i = 0; i < n; ++i) {
        cpu_relax();
        compiler_barrier();
      }
    })[0];
    f.store.push_back(st);
    f.rmw_minus_store.push_back(rmw - st);
    f.empty.push_back(empty);
    f.fence_minus_empty.push_back(fence - empty);
    f.pause.push_back(pause);
  }
  // L1 hit: a dependent load chain through 64 lines of one 4 KiB block, in random order.
  alignas(4096) static thread_local void* chain[512];
  std::vector<int> order(64);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 rng(1);
  std::shuffle(order.begin() + 1, order.end(), rng);
  for (size_t i = 0; i < order.size(); ++i)
    chain[order[i] * 8] = &chain[order[(i + 1) % order.size()] * 8];
  void* p = &chain[0];
  f.hit = per_op(samples, kIters, [&](int n) {
    for (int i = 0; i < n; i += 8) {
      p = *static_cast<void**>(p);
      p = *static_cast<void**>(p);
      p = *static_cast<void**>(p);
      p = *static_cast<void**>(p);
      p = *static_cast<void**>(p);
      p = *static_cast<void**>(p);
      p = *static_cast<void**>(p);
      p = *static_cast<void**>(p);
    }
  });
  escape(p);
  return f;
}

// DRAM load-to-use: a random cyclic chase over the lines of a 64 MiB buffer.
std::vector<double> memory_latency(int samples, int steps) {
  constexpr size_t kBytes = 64 * kMiB;
  Buffer buf(kBytes);
  const size_t lines = kBytes / 64;
  std::vector<uint32_t> perm(lines);
  std::iota(perm.begin(), perm.end(), 0);
  std::mt19937 rng(2);
  for (size_t i = lines - 1; i > 0; --i) {  // Sattolo: one cycle through every line
    std::uniform_int_distribution<size_t> d(0, i - 1);
    std::swap(perm[i], perm[d(rng)]);
  }
  for (size_t i = 0; i < lines; ++i)
    *reinterpret_cast<void**>(buf.data + i * 64) = buf.data + static_cast<size_t>(perm[i]) * 64;
  void* p = buf.data;
  auto v = per_op(samples, steps, [&](int n) {
    for (int i = 0; i < n; ++i) p = *static_cast<void**>(p);
  });
  escape(p);
  return v;
}

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

// sem_post to a thread blocked in sem_wait on another CPU (idle by then): post -> the waiter
// runs, and the duration of the post call itself.
void semaphore_wakes(int cpu_poster, int cpu_waiter, int n, std::vector<double>* wake,
                     std::vector<double>* post) {
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
      sleep_ns(100000);  // the waiter is blocked in the kernel and its CPU idle
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

// One core: memcpy of 8 MiB blocks between two 64 MiB rings (well beyond L2), bytes per ns.
std::vector<double> copy_one_core(int samples) {
  constexpr size_t kRing = 64 * kMiB, kBlock = 8 * kMiB, kBlocks = kRing / kBlock;
  Buffer src(kRing), dst(kRing);
  std::vector<double> v;
  for (int s = 0; s <= samples; ++s) {
    const size_t from = static_cast<size_t>(s) % kBlocks,
                 to = (static_cast<size_t>(s) * 3 + 1) % kBlocks;
    const double t0 = now_ns();
    std::memcpy(dst.data + to * kBlock, src.data + from * kBlock, kBlock);
    escape(dst.data);
    const double dt = now_ns() - t0;
    if (s > 0) v.push_back(static_cast<double>(kBlock) / dt);
  }
  return v;
}

// Every allowed CPU copies at once (each its own rings, 4 MiB blocks) for `window_ns`; one
// sample is the sum of the threads' rates. A spin barrier starts each window together.
std::vector<double> copy_all_cores(const std::vector<int>& cpus, int samples, double window_ns) {
  const size_t n = cpus.size();
  constexpr size_t kBlock = 4 * kMiB;
  const size_t ring = std::clamp<size_t>(256 * kMiB / n / kBlock * kBlock, 2 * kBlock, 64 * kMiB);
  struct Barrier {
    std::atomic<size_t> count{0};
    std::atomic<uint64_t> generation{0};
  } barrier;
  auto arrive_and_wait = [&] {
    const uint64_t g = barrier.generation.load(std::memory_order_acquire);
    if (barrier.count.fetch_add(1, std::memory_order_acq_rel) + 1 == n) {
      barrier.count.store(0, std::memory_order_relaxed);
      barrier.generation.fetch_add(1, std::memory_order_release);
    } else {
      for (int spins = 0; barrier.generation.load(std::memory_order_acquire) == g; ++spins) {
        if (spins < 1000)
          cpu_relax();
        else
          std::this_thread::yield();
      }
    }
  };
  std::vector<std::vector<double>> rates(n);
  std::vector<std::unique_ptr<Buffer>> buffers;  // mapped here (may throw), touched by their thread
  for (size_t k = 0; k < 2 * n; ++k) buffers.push_back(std::make_unique<Buffer>(ring, false));
  std::vector<std::thread> threads;
  for (size_t k = 0; k < n; ++k) {
    threads.emplace_back([&, k] {
      pin_self(cpus[k]);
      Buffer& src = *buffers[2 * k];
      Buffer& dst = *buffers[2 * k + 1];
      src.touch();  // first touch by this thread: its own NUMA node
      dst.touch();
      const size_t blocks = ring / kBlock;
      size_t at = 0;
      for (int s = 0; s <= samples; ++s) {
        arrive_and_wait();
        const double t0 = now_ns();
        double t = t0;
        size_t bytes = 0;
        while (t - t0 < window_ns) {
          std::memcpy(dst.data + ((at + 1) % blocks) * kBlock, src.data + (at % blocks) * kBlock,
                      kBlock);
          escape(dst.data);
          ++at;
          bytes += kBlock;
          t = now_ns();
        }
        if (s > 0) rates[k].push_back(static_cast<double>(bytes) / (t - t0));
      }
    });
  }
  for (auto& t : threads) t.join();
  std::vector<double> v(static_cast<size_t>(samples), 0.0);
  for (size_t k = 0; k < n; ++k)
    for (size_t s = 0; s < v.size(); ++s) v[s] += rates[k][s];
  return v;
}

// The model's CRC-32C (ISA-L) over a 64 KiB buffer (cache-resident, as a record being
// inserted), bytes per ns.
std::vector<double> crc_rate(int samples) {
  std::vector<unsigned char> buf(64 * 1024);
  std::mt19937 rng(3);
  for (auto& b : buf) b = static_cast<unsigned char>(rng());
  uint32_t sink = 0;
  auto v = per_op(samples, 16, [&](int n) {
    for (int i = 0; i < n; ++i) sink ^= crc32c(buf.data(), buf.size());
  });
  escape(&sink);
  for (double& x : v) x = static_cast<double>(buf.size()) / x;
  return v;
}

// The temporary file of the storage measurements; removed however calibrate ends.
struct TempFile {
  explicit TempFile(const std::string& dir) {
    std::string tmpl = (std::filesystem::path(dir) / "walbench-calibrate-XXXXXX").string();
    fd = mkstemp(tmpl.data());
    if (fd < 0)
      throw UsageError(
          absl::StrFormat("calibrate: --fsync-path %s: cannot create a file there (%s)", dir,
                          std::strerror(errno)));
    path = tmpl;
  }
  ~TempFile() {
    ::close(fd);
    ::unlink(path.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  void pwrite_all(const char* p, size_t n, off_t off) const {
    while (n > 0) {
      const ssize_t w = ::pwrite(fd, p, n, off);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) fail("pwrite");
      p += w;
      n -= static_cast<size_t>(w);
      off += w;
    }
  }
  void datasync() const {
    if (::fdatasync(fd) != 0) fail("fdatasync");
  }
  [[noreturn]] void fail(const char* what) const {
    throw UsageError(absl::StrFormat("calibrate: %s %s: %s", what, path, std::strerror(errno)));
  }
  std::string path;
  int fd = -1;
};

struct StorageFigures {
  std::vector<double> syscall;        // one 8-byte pwrite, ns
  std::vector<double> write_ns;       // pwrites of `bytes` (page cache), per repetition
  std::vector<double> sync_ns;        // the fdatasync after them
  std::vector<double> small_sync_ns;  // fdatasync after an 8 KiB pwrite
  size_t bytes = 0;
  size_t pwrites = 0;  // per repetition
};

StorageFigures storage_figures(const std::string& dir, bool quick) {
  TempFile f(dir);
  StorageFigures s;
  // syscall: an 8-byte pwrite into the page cache.
  const char small[8] = {};
  s.syscall = per_op(quick ? 5 : 20, 500, [&](int n) {
    for (int i = 0; i < n; ++i)
      if (::pwrite(f.fd, small, sizeof small, 0) != static_cast<ssize_t>(sizeof small))
        f.fail("pwrite");
  });
  // Sequential write: 1 MiB pwrites, then fdatasync; the first repetition also allocates.
  constexpr size_t kChunk = kMiB;
  s.bytes = (quick ? 16 : 64) * kMiB;
  s.pwrites = s.bytes / kChunk;
  std::vector<char> chunk(kChunk, 'w');
  const double budget_ns = (quick ? 1.5 : 8.0) * 1e9;
  const double start = now_ns();
  const int reps = quick ? 2 : 4;
  for (int r = 0; r < reps; ++r) {
    const double t0 = now_ns();
    for (size_t off = 0; off < s.bytes; off += kChunk)
      f.pwrite_all(chunk.data(), kChunk, static_cast<off_t>(off));
    const double t1 = now_ns();
    f.datasync();
    const double t2 = now_ns();
    if (r > 0 || reps == 1) {  // the first one allocated the blocks: not a WAL-like overwrite
      s.write_ns.push_back(t1 - t0);
      s.sync_ns.push_back(t2 - t1);
    }
    if (now_ns() - start > budget_ns / 2 && !s.write_ns.empty()) break;
  }
  // fdatasync after each 8 KiB pwrite into the allocated region (a WAL page in a segment).
  const std::vector<char> page(8192, 'p');
  const int max_syncs = quick ? 20 : 200;
  const double sync_start = now_ns();
  for (int i = 0; i < max_syncs; ++i) {
    f.pwrite_all(page.data(), page.size(), static_cast<off_t>((i % 256) * page.size()));
    const double t0 = now_ns();
    f.datasync();
    s.small_sync_ns.push_back(now_ns() - t0);
    if (i >= 5 && now_ns() - sync_start > budget_ns / 2) break;
  }
  return s;
}

// ---- assembling the preset ------------------------------------------------------------------

// Key order of the file: SimConfig's declaration order (sim.h); keys added to SimConfig later
// still come out, after these, from SimConfig::to_json().
const std::vector<std::string> kKeyOrder = {"cores",
                                            "sockets",
                                            "cores_per_cluster",
                                            "smt",
                                            "placement",
                                            "line_hit_ns",
                                            "same_cluster_transfer_ns",
                                            "same_socket_transfer_ns",
                                            "cross_socket_transfer_ns",
                                            "memory_ns",
                                            "rmw_extra_ns",
                                            "fence_ns",
                                            "pause_ns",
                                            "spin_park_after",
                                            "spin_park_max_ns",
                                            "context_switch_ns",
                                            "time_slice_ns",
                                            "semaphore_wake_ns",
                                            "semaphore_post_ns",
                                            "sleep_slack_ns",
                                            "wake_jitter",
                                            "copy_bytes_per_ns",
                                            "memory_bandwidth_bytes_per_ns",
                                            "crc_bytes_per_ns",
                                            "smt_work_factor",
                                            "storage_write_bytes_per_ns",
                                            "fsync_ns",
                                            "syscall_ns",
                                            "stack_kib"};

struct Preset {
  std::ostream& log;
  std::map<std::string, nlohmann::json> values;
  std::map<std::string, std::string> sources;

  void set(const std::string& key, nlohmann::json v, std::string source) {
    values[key] = std::move(v);
    sources[key] = std::move(source);
  }
  // Prints one measured figure as it comes.
  void figure(const std::string& what, const Spread& s, const std::string& unit) const {
    log << absl::StrFormat("  %-46s %s\n", what, show(s, unit)) << std::flush;
  }
  void note(const std::string& text) const { log << "  " << text << "\n" << std::flush; }
};

std::string kernel_release() {
  struct utsname u {};
  return uname(&u) == 0 ? std::string(u.release) : "unknown";
}

std::string local_date() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

}  // namespace

ojson calibrate(const CalibrateOptions& opts, std::ostream& log) {
  const double t_start = now_ns();
  const bool quick = opts.quick;
  const nlohmann::json ctx = machine_context();
  const std::string host = ctx.value("host", std::string("unknown"));
  const std::string cpu_model = ctx.value("cpu_model", std::string("unknown"));
  const std::string name = opts.name.empty() ? host.substr(0, host.find('.')) : opts.name;
  const SimConfig d;
  Preset p{log, {}, {}};

  // -- topology
  const Topology topo = read_topology();
  log << absl::StrFormat("walbench calibrate%s: %s, %s, %d online CPUs (%d usable here)\n",
                         quick ? " --quick" : "", name, cpu_model, topo.online, topo.cpus.size());
  const std::string topo_src =
      absl::StrFormat("/sys/devices/system/cpu: %d online CPUs, %d physical cores in %d package(s)",
                      topo.online, topo.cores, topo.sockets);
  p.set(
      "cores", topo.cores,
      topo_src + " (distinct package/core_id pairs)" + (topo.note.empty() ? "" : "; " + topo.note));
  p.set("sockets", topo.sockets, topo_src + " (distinct physical_package_id)");
  p.set("smt", topo.smt, topo_src + " (online CPUs per physical core)");
  p.set("cores_per_cluster", topo.cores_per_cluster,
        topo.cores_per_cluster > 0
            ? "cores sharing one L3 (cache/index*/shared_cpu_list), fewer than a socket"
            : "0: every core of a socket shares one L3 (cache/index*/shared_cpu_list)");
  p.note(absl::StrFormat("topology: %d socket(s) x %d cores x %d thread(s)%s", topo.sockets,
                         topo.cores / topo.sockets, topo.smt,
                         topo.cores_per_cluster
                             ? absl::StrFormat(", L3 clusters of %d cores", topo.cores_per_cluster)
                             : ""));

  // The measuring CPU and its partners: another physical core in the same L3 cluster / the same
  // socket (another cluster if there are clusters) / another socket.
  const CpuInfo* a = topo.cpus.empty() ? nullptr : &topo.cpus[0];
  auto partner = [&](auto&& pred) -> const CpuInfo* {
    if (a == nullptr) return nullptr;
    for (const CpuInfo& c : topo.cpus)
      if (c.cpu != a->cpu && !(c.package == a->package && c.core == a->core) && pred(c)) return &c;
    return nullptr;
  };
  const bool clusters = topo.cores_per_cluster > 0;
  const CpuInfo* same_cluster =
      clusters ? partner([&](const CpuInfo& c) { return c.package == a->package && c.l3 == a->l3; })
               : nullptr;
  const CpuInfo* same_socket = partner(
      [&](const CpuInfo& c) { return c.package == a->package && (!clusters || c.l3 != a->l3); });
  const CpuInfo* other_socket = partner([&](const CpuInfo& c) { return c.package != a->package; });
  const int cpu_a = a ? a->cpu : -1;

  // -- cache lines
  const int pp_samples = quick ? 200 : 1000, pp_rounds = 100;
  auto transfer = [&](const CpuInfo* b, const std::string& label, double* out) -> std::string {
    bool pinned = false;
    const Spread s = spread_of(line_pingpong(cpu_a, b->cpu, pp_samples, pp_rounds, &pinned));
    p.figure(absl::StrFormat("%s transfer, cpu %d <-> cpu %d", label, cpu_a, b->cpu), s, "ns");
    *out = s.median;
    return absl::StrFormat(
        "CAS ping-pong on one cache line between cpu %d and cpu %d%s (as "
        "nviennot/core-to-core-latency), "
        "round trip / 2: %s per sample of %d round trips",
        cpu_a, b->cpu, pinned ? " (pinned)" : " (pinning failed: unpinned)", show(s, "ns"),
        pp_rounds);
  };
  double t_socket = static_cast<double>(d.same_socket_transfer_ns);
  if (same_socket != nullptr) {
    const std::string src = transfer(
        same_socket, clusters ? "same-socket (other L3 cluster)" : "same-socket line", &t_socket);
    p.set("same_socket_transfer_ns", whole_ns(t_socket, 1), src);
  } else {
    p.note("same-socket transfer: no second core usable here; SimConfig default kept");
    p.set("same_socket_transfer_ns", d.same_socket_transfer_ns,
          "SimConfig default (not measured: no second physical core in this process's CPU set)");
  }
  const uint64_t socket_ns = p.values["same_socket_transfer_ns"].get<uint64_t>();
  if (same_cluster != nullptr) {
    double t = 0;
    const std::string src = transfer(same_cluster, "same-cluster line", &t);
    p.set("same_cluster_transfer_ns", whole_ns(t, 1), src);
  } else {
    p.set("same_cluster_transfer_ns", socket_ns,
          clusters
              ? "= same_socket_transfer_ns (no second core of this L3 cluster usable here)"
              : "= same_socket_transfer_ns (no L3 clusters: used only with cores_per_cluster > 0)");
  }
  if (other_socket != nullptr) {
    double t = 0;
    const std::string src = transfer(other_socket, "cross-socket line", &t);
    p.set("cross_socket_transfer_ns", whole_ns(t, 1), src);
  } else {
    p.note(topo.sockets > 1
               ? "cross-socket transfer: no CPU of another socket usable here; set to same-socket"
               : "cross-socket transfer: one socket; set to the same-socket figure");
    p.set("cross_socket_transfer_ns", socket_ns,
          topo.sockets > 1
              ? "= same_socket_transfer_ns (no CPU of another socket usable here)"
              : "= same_socket_transfer_ns (one socket: there is no cross-socket transfer)");
  }

  // -- one core
  const CoreFigures cf = on_cpu(cpu_a, [&] { return core_figures(quick ? 10 : 40); });
  const Spread hit = spread_of(cf.hit), st = spread_of(cf.store),
               rmw = spread_of(cf.rmw_minus_store), fence = spread_of(cf.fence_minus_empty),
               pause = spread_of(cf.pause);
  p.figure("L1 hit (dependent load chain)", hit, "ns");
  p.figure("plain store (owned line)", st, "ns");
  p.figure("lock xadd minus plain store", rmw, "ns");
  p.figure("seq_cst fence minus empty loop", fence, "ns");
  p.figure("pause", pause, "ns");
  p.set("line_hit_ns", whole_ns(hit.median, 1),
        "dependent load chain through 64 lines of one 4 KiB block (L1): " + show(hit, "ns") +
            " per load; at least 1");
  p.set("rmw_extra_ns", whole_ns(rmw.median, 0),
        "lock xadd on an owned line minus a plain store to it, per operation in loops of 100000: " +
            show(rmw, "ns") + " (store alone " + show(st, "ns") + ")");
  p.set("fence_ns", whole_ns(fence.median, 0),
        "std::atomic_thread_fence(seq_cst) in a loop (x86-64 GCC: lock or $0,(%rsp), the same kind "
        "of locked no-op as PostgreSQL's pg_memory_barrier) minus an empty loop: " +
            show(fence, "ns"));
  p.set("pause_ns", whole_ns(pause.median, 1),
        std::string(kPauseWhat) + " in a loop: " + show(pause, "ns") + "; at least 1");
  {
    const Spread m = spread_of(
        on_cpu(cpu_a, [&] { return memory_latency(quick ? 3 : 7, quick ? 100000 : 300000); }));
    p.figure("DRAM load (random chase, 64 MiB)", m, "ns");
    p.set("memory_ns", whole_ns(m.median, 1),
          "random cyclic pointer chase over the lines of a 64 MiB buffer (transparent huge pages "
          "asked for): " +
              show(m, "ns") + " per load");
  }

  // -- OS
  {
    bool pinned = false;
    const Spread cs =
        spread_of(context_switches(cpu_a, quick ? 10 : 30, quick ? 200 : 500, &pinned));
    p.figure(absl::StrFormat("context switch (2 threads on cpu %d)", cpu_a), cs, "ns");
    p.set("context_switch_ns", whole_ns(cs.median, 1),
          absl::StrFormat("two threads on cpu %d%s ping-pong through two POSIX semaphores (futex), "
                          "round trip / 2 (Bendersky's method, the default's source): %s",
                          cpu_a, pinned ? " (pinned)" : " (pinning failed)", show(cs, "ns")));
  }
  const uint64_t cs_ns = p.values["context_switch_ns"].get<uint64_t>();
  const uint64_t rmw_ns = p.values["rmw_extra_ns"].get<uint64_t>();
  const CpuInfo* waker = same_socket ? same_socket : same_cluster ? same_cluster : other_socket;
  if (waker != nullptr) {
    std::vector<double> wake, post;
    semaphore_wakes(cpu_a, waker->cpu, quick ? 40 : 200, &wake, &post);
    const Spread w = spread_of(wake), ps = spread_of(post);
    p.figure(absl::StrFormat("sem_post -> waiter runs (cpu %d -> cpu %d)", cpu_a, waker->cpu), w,
             "ns");
    p.figure("sem_post call with a waiter", ps, "ns");
    const double line_ns = static_cast<double>(socket_ns + rmw_ns);
    p.set("semaphore_wake_ns", whole_ns(w.median - line_ns - static_cast<double>(cs_ns), 0),
          absl::StrFormat(
              "sem_post by cpu %d to a thread blocked in sem_wait on idle cpu %d, post -> "
              "waiter runs: %s; minus what the sim charges besides (sem_post: line "
              "transfer + rmw_extra_ns = %d ns; on dispatch context_switch_ns = %d ns)",
              cpu_a, waker->cpu, show(w, "ns"), socket_ns + rmw_ns, cs_ns));
    p.set("semaphore_post_ns", whole_ns(ps.median - line_ns, 0),
          absl::StrFormat("duration of that sem_post call (futex wake): %s; minus the RMW of the "
                          "semaphore's line the sim charges first (%d ns)",
                          show(ps, "ns"), socket_ns + rmw_ns));
  } else {
    p.note("semaphore wake: one CPU usable here; SimConfig defaults kept");
    p.set("semaphore_wake_ns", d.semaphore_wake_ns,
          "SimConfig default (not measured: one CPU usable here)");
    p.set("semaphore_post_ns", d.semaphore_post_ns,
          "SimConfig default (not measured: one CPU usable here)");
  }
  {
    const Spread sl = spread_of(sleep_overshoot(quick ? 40 : 200));
    p.figure("nanosleep(1 us) overshoot", sl, "ns");
    const int slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    p.set("sleep_slack_ns", whole_ns(sl.median - static_cast<double>(cs_ns), 0),
          absl::StrFormat("nanosleep(1 us) overshoot: %s; minus context_switch_ns = %d ns (the sim "
                          "dispatches the sleeper after the slack); this thread's timer slack "
                          "(PR_GET_TIMERSLACK) is %d ns",
                          show(sl, "ns"), cs_ns, slack));
  }

  // -- bandwidth
  double copy_rate = d.copy_bytes_per_ns;
  {
    const Spread c = spread_of(on_cpu(cpu_a, [&] { return copy_one_core(quick ? 8 : 40); }));
    p.figure("memcpy, one core (8 MiB blocks, 64 MiB rings)", c, "B/ns");
    copy_rate = round3(c.median);
    p.set("copy_bytes_per_ns", copy_rate,
          "memcpy of 8 MiB blocks between two 64 MiB rings on one core: " + show(c, "bytes/ns"));
  }
  {
    std::vector<int> cpus;
    for (const CpuInfo& c : topo.cpus) cpus.push_back(c.cpu);
    if (cpus.empty()) cpus.push_back(-1);
    const Spread m = spread_of(copy_all_cores(cpus, quick ? 3 : 9, (quick ? 30 : 100) * 1e6));
    p.figure(absl::StrFormat("memcpy, all %d CPUs at once (aggregate)", cpus.size()), m, "B/ns");
    p.set("memory_bandwidth_bytes_per_ns", round3(m.median),
          absl::StrFormat("memcpy on all %d usable CPUs at once, each 4 MiB blocks between its own "
                          "rings, sum of the rates (copied bytes: each read and written): %s",
                          cpus.size(), show(m, "bytes/ns")));
  }
  {
    const Spread c = spread_of(on_cpu(cpu_a, [&] { return crc_rate(quick ? 10 : 40); }));
    p.figure("CRC-32C (ISA-L crc32_iscsi, 64 KiB, cached)", c, "B/ns");
    p.set("crc_bytes_per_ns", round3(c.median),
          "the model's CRC-32C (core/wal/crc32c.h: ISA-L crc32_iscsi) over a cache-resident 64 KiB "
          "buffer: " +
              show(c, "bytes/ns"));
  }

  // -- storage
  if (!opts.fsync_dir.empty()) {
    const StorageFigures s = on_cpu(cpu_a, [&] { return storage_figures(opts.fsync_dir, quick); });
    std::error_code ec;
    const std::filesystem::path abs = std::filesystem::absolute(opts.fsync_dir, ec);
    const std::string where = ec ? opts.fsync_dir : abs.lexically_normal().string();
    const Spread sc = spread_of(s.syscall), wr = spread_of(s.write_ns), sy = spread_of(s.sync_ns),
                 small = spread_of(s.small_sync_ns);
    p.figure("pwrite of 8 bytes", sc, "ns");
    p.figure(absl::StrFormat("%d MiB of 1 MiB pwrites", s.bytes / kMiB), wr, "ns");
    p.figure(absl::StrFormat("fdatasync of those %d MiB", s.bytes / kMiB), sy, "ns");
    p.figure("8 KiB pwrite, then fdatasync: the fdatasync", small, "ns");
    const uint64_t syscall = whole_ns(sc.median, 1);
    p.set("syscall_ns", syscall,
          absl::StrFormat("an 8-byte pwrite to a file in %s (page cache), per call: %s", where,
                          show(sc, "ns")));
    // The sim's fdatasync: syscall_ns, then pending bytes / storage_write_bytes_per_ns, then
    // fsync_ns. Device time of the big sync = its duration - syscall - the latency part, which is
    // the small sync's duration - syscall (its 8 KiB transfer is negligible at first).
    const double latency = std::max(0.0, small.median - static_cast<double>(syscall));
    const double device_ns = sy.median - static_cast<double>(syscall) - latency;
    const double copy_ns = static_cast<double>(s.bytes) / copy_rate;
    double bw = 0;
    if (device_ns > copy_ns / 10) {
      bw = round3(static_cast<double>(s.bytes) / device_ns);
      p.set("storage_write_bytes_per_ns", bw,
            absl::StrFormat("%d MiB written in 1 MiB pwrites to %s, then fdatasync: bytes / (that "
                            "fdatasync's duration %s - syscall_ns - the latency part of an 8 KiB "
                            "fdatasync); the pwrites themselves (page cache): %s",
                            s.bytes / kMiB, where, show(sy, "ns"), show(wr, "ns")));
    } else {
      p.set(
          "storage_write_bytes_per_ns", 0,
          absl::StrFormat("0 = instant: the fdatasync of %d MiB in %s took %s, less than a tenth "
                          "of copying them; the directory is memory-backed (the sim's tmpfs model)",
                          s.bytes / kMiB, where, show(sy, "ns")));
    }
    const double transfer_8k = bw > 0 ? 8192.0 / bw : 0.0;
    p.set(
        "fsync_ns", whole_ns(latency - transfer_8k, 0),
        absl::StrFormat("fdatasync after an 8 KiB pwrite into the preallocated region of a file "
                        "in %s (like a WAL page in a segment): %s; minus syscall_ns and the 8 KiB "
                        "at storage_write_bytes_per_ns",
                        where, show(small, "ns")));
  } else {
    p.note("storage: skipped (--fsync-path none); SimConfig defaults kept");
    for (const char* k : {"syscall_ns", "storage_write_bytes_per_ns", "fsync_ns"})
      p.set(k, d.to_json()[k], "SimConfig default (not measured: --fsync-path none)");
  }

  // -- not measured
  const nlohmann::json defaults = d.to_json();
  const std::map<std::string, std::string> why = {
      {"placement", "SimConfig default (Linux spreads runnable threads over idle cores)"},
      {"time_slice_ns",
       "SimConfig default (not measured: CFS sched_min_granularity / EEVDF base_slice)"},
      {"wake_jitter", "SimConfig default (not measured)"},
      {"smt_work_factor", topo.smt > 1 ? "SimConfig default (not measured)"
                                       : "SimConfig default (not measured; unused with smt 1)"},
      {"spin_park_after", "SimConfig default (a simulator setting, not a machine property)"},
      {"spin_park_max_ns", "SimConfig default (a simulator setting, not a machine property)"},
      {"stack_kib", "SimConfig default (a simulator setting, not a machine property)"},
  };
  for (auto it = defaults.begin(); it != defaults.end(); ++it) {
    if (p.values.count(it.key())) continue;
    const auto w = why.find(it.key());
    p.set(it.key(), it.value(), w != why.end() ? w->second : "SimConfig default (not measured)");
  }

  ojson out;
  out["description"] = absl::StrFormat(
      "%s: %s, %d online CPUs (%d socket(s) x %d cores x %d thread(s)), Linux %s; measured by "
      "walbench calibrate%s on %s",
      name, cpu_model, topo.online, topo.sockets, topo.cores / topo.sockets, topo.smt,
      kernel_release(), quick ? " --quick" : "", local_date());
  std::vector<std::string> order = kKeyOrder;
  for (auto it = defaults.begin(); it != defaults.end(); ++it)
    if (std::find(order.begin(), order.end(), it.key()) == order.end()) order.push_back(it.key());
  nlohmann::json machine = nlohmann::json::object();
  ojson sources;
  for (const std::string& k : order) {
    if (!defaults.contains(k)) continue;  // a key this build's SimConfig no longer has
    out[k] = p.values.at(k);
    machine[k] = p.values.at(k);
    sources[k] = p.sources.at(k);
  }
  out["sources"] = sources;
  // What we write must load: the same validation as a config's platform block.
  try {
    (void)SimConfig::from_json(machine, "calibrate");
  } catch (const std::exception& e) {
    throw std::runtime_error(
        std::string("calibrate: the measured machine is not a valid SimConfig: ") + e.what());
  }
  log << absl::StrFormat("walbench calibrate: done in %.1f s\n", (now_ns() - t_start) / 1e9)
      << std::flush;
  return out;
}

int calibrate_command(const CalibrateOptions& opts, const std::string& output, std::ostream& out,
                      std::ostream& log) {
  // Check everything the user named before measuring for seconds.
  if (!output.empty()) {
    const std::filesystem::path o(output);
    std::error_code ec;
    if (std::filesystem::is_directory(o, ec))
      throw UsageError("calibrate: -o " + output + ": is a directory; expected a file name");
    const auto parent = o.parent_path();
    if (!parent.empty() && !std::filesystem::is_directory(parent, ec))
      throw UsageError("calibrate: -o " + output + ": directory " + parent.string() +
                       " does not exist");
    if (::access(parent.empty() ? "." : parent.c_str(), W_OK) != 0)
      throw UsageError("calibrate: -o " + output + ": directory " +
                       (parent.empty() ? std::string(".") : parent.string()) + " is not writable");
  }
  if (!opts.fsync_dir.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_directory(opts.fsync_dir, ec))
      throw UsageError("calibrate: --fsync-path " + opts.fsync_dir +
                       ": not a directory (give a directory, or none to skip the storage figures)");
  }
  const ojson preset = calibrate(opts, log);
  const std::string text = preset.dump(2) + "\n";
  if (output.empty()) {
    out << text << std::flush;
    return 0;
  }
  try {
    write_file_atomically(output, text);
  } catch (const std::exception& e) {
    throw UsageError(std::string("calibrate: -o ") + output + ": " + e.what());
  }
  log << "walbench calibrate: wrote " << output << " (use it as \"platform\": {\"kind\": \"sim\", "
      << "\"preset\": \"" << output << "\"})\n";
  return 0;
}

}  // namespace walbench

// Processor and memory measurements of `walbench calibrate` (calibrate_cpu.h).
#include "harness/calibrate_cpu.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <thread>

#include "core/platform/sim.h"
#include "core/wal/crc32c.h"
#include "harness/calibrate_probe.h"

namespace walbench::calibration {

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

std::vector<double> fetch_add_run_length(int cpu_a, int cpu_b, int samples, uint32_t adds,
                                         bool* pinned) {
  struct alignas(64) Word {
    std::atomic<uint64_t> v{0};
  };
  auto word = std::make_unique<Word>();
  // Each thread keeps the values it got in an array of its own (no line shared with the other
  // thread: a shared owner array would move its lines between the two cores too, and each LOCK
  // XADD waits for the store before it); the owner of each value is filled in afterwards.
  struct alignas(64) Got {
    std::vector<uint64_t> v;
  };
  Got got[2];
  got[0].v.resize(adds);
  got[1].v.resize(adds);
  std::vector<uint8_t> owner(size_t{2} * adds);
  std::vector<double> out;
  bool all_pinned = true;
  for (int s = 0; s < samples; ++s) {
    word->v.store(0);
    std::atomic<int> ready{0};
    std::atomic<bool> pin_a{false}, pin_b{false};
    auto add = [&](uint8_t k, int cpu, std::atomic<bool>& pinned_here) {
      pinned_here = pin_self(cpu);
      ready.fetch_add(1);
      while (ready.load() < 2) {
      }
      uint64_t* mine = got[k].v.data();
      for (uint32_t i = 0; i < adds; ++i) mine[i] = word->v.fetch_add(1);
    };
    std::thread b([&] { add(1, cpu_b, pin_b); });
    std::thread a([&] { add(0, cpu_a, pin_a); });
    a.join();
    b.join();
    for (uint8_t k = 0; k < 2; ++k)
      for (const uint64_t v : got[k].v) owner[v] = k;
    all_pinned = all_pinned && pin_a && pin_b;
    const double run = walbench::owner_run_length(owner);
    if (run > 0) out.push_back(run);  // 0: one thread finished before the other began
  }
  *pinned = all_pinned;
  return out;
}

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
// sample is the sum of the threads' rates (aggregate_rate_all_cpus).
std::vector<double> copy_all_cores(const std::vector<int>& cpus, int samples, double window_ns) {
  const size_t n = cpus.size();
  constexpr size_t kBlock = 4 * kMiB;
  const size_t ring = std::clamp<size_t>(256 * kMiB / n / kBlock * kBlock, 2 * kBlock, 64 * kMiB);
  const size_t blocks = ring / kBlock;
  std::vector<std::unique_ptr<Buffer>> buffers;  // mapped here (may throw), touched by their thread
  for (size_t k = 0; k < 2 * n; ++k) buffers.push_back(std::make_unique<Buffer>(ring, false));
  std::vector<size_t> at(n, 0);
  return aggregate_rate_all_cpus(
      cpus, samples, window_ns,
      [&](size_t k) {  // first touch by this thread: its own NUMA node
        buffers[2 * k]->touch();
        buffers[2 * k + 1]->touch();
      },
      [&](size_t k) {
        char* dst = buffers[2 * k + 1]->data;
        std::memcpy(dst + ((at[k] + 1) % blocks) * kBlock,
                    buffers[2 * k]->data + (at[k] % blocks) * kBlock, kBlock);
        escape(dst);
        ++at[k];
        return kBlock;
      });
}

CasLoopFigures cas_loop_contention(const std::vector<int>& cpus, int samples, double window_ns) {
  struct alignas(64) Count {
    uint64_t tries = 0, wins = 0;
  };
  struct alignas(64) Word {
    std::atomic<uint64_t> v{0};
  };
  auto word = std::make_unique<Word>();
  std::vector<Count> counts(cpus.size());
  CasLoopFigures out;
  out.successes_per_ns = aggregate_rate_all_cpus(
      cpus, samples, window_ns, [](size_t) {},
      [&](size_t k) {
        constexpr int kBatch = 16;
        Count& c = counts[k];
        for (int i = 0; i < kBatch; ++i) {
          uint64_t v = word->v.load(std::memory_order_relaxed);
          do ++c.tries;
          while (!word->v.compare_exchange_strong(v, v + 1));  // no spurious failures counted
          ++c.wins;
        }
        return kBatch;
      });
  uint64_t tries = 0, wins = 0;
  for (const Count& c : counts) {
    tries += c.tries;
    wins += c.wins;
  }
  out.tries_per_success = wins ? static_cast<double>(tries) / static_cast<double>(wins) : 0.0;
  return out;
}

TtasLockFigures ttas_lock_contention(const std::vector<int>& cpus, int samples, double window_ns) {
  constexpr uint32_t kLocked = 1;
  struct alignas(64) Count {
    uint64_t failed = 0, acquisitions = 0;
  };
  struct alignas(64) Word {
    std::atomic<uint32_t> v{0};
  };
  auto word = std::make_unique<Word>();
  auto links = std::make_unique<Word>();
  std::vector<Count> counts(cpus.size());
  TtasLockFigures out;
  out.acquisitions_per_ns = aggregate_rate_all_cpus(
      cpus, samples, window_ns, [](size_t) {},
      [&](size_t k) {
        constexpr int kBatch = 16;
        Count& c = counts[k];
        for (int i = 0; i < kBatch; ++i) {
          uint32_t old = word->v.fetch_or(kLocked);
          while (old & kLocked) {
            ++c.failed;
            do {
              cpu_relax();
              old = word->v.load(std::memory_order_relaxed);
            } while (old & kLocked);
            old = word->v.fetch_or(kLocked);
          }
          links->v.store(static_cast<uint32_t>(k), std::memory_order_relaxed);
          word->v.fetch_and(~kLocked);
          ++c.acquisitions;
        }
        return kBatch;
      });
  uint64_t failed = 0, acquisitions = 0;
  for (const Count& c : counts) {
    failed += c.failed;
    acquisitions += c.acquisitions;
  }
  out.failed_rmws_per_acquisition =
      acquisitions ? static_cast<double>(failed) / static_cast<double>(acquisitions) : 0.0;
  return out;
}

namespace {
// Bytes per ns of crc(buffer) over a cache-resident 64 KiB buffer of random bytes.
template <class Crc>
std::vector<double> crc_rate(int samples, Crc crc) {
  std::vector<unsigned char> buf(64 * 1024);
  std::mt19937 rng(3);
  for (auto& b : buf) b = static_cast<unsigned char>(rng());
  uint32_t sink = 0;
  auto v = per_op(samples, 16, [&](int n) {
    for (int i = 0; i < n; ++i) sink ^= crc(buf.data(), buf.size());
  });
  escape(&sink);
  for (double& x : v) x = static_cast<double>(buf.size()) / x;
  return v;
}
}  // namespace

std::vector<double> crc_rate_postgres(int samples) {
  return crc_rate(samples, [](const unsigned char* p, size_t n) {
    return ~crc32c_sse42_loop(0xFFFFFFFFu, p, n);
  });
}

std::vector<double> crc_rate_model(int samples) {
  return crc_rate(samples, [](const unsigned char* p, size_t n) { return crc32c(p, n); });
}

}  // namespace walbench::calibration

// The sim platform's page cache and device (core/platform/sim_storage.cc): concurrent writers
// pay the modelled factor, writers to one file serialise, the device may fluctuate, and the old
// model stays reachable (page_cache_bytes_per_ns 0, storage_fluctuation 0). Exact: virtual time.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/platform/sim.h"

namespace walbench {
namespace {

using SP = SimPlatform;

// N fibers on N cores each pwrite `bytes` once, to their own file or all to one; returns when
// the last write finished.
uint64_t writers_end(const SimConfig& cfg, uint32_t n, size_t bytes, bool one_file) {
  Simulation sim(cfg, 1);
  std::vector<char> files(n);
  uint64_t first_start = ~uint64_t{0}, last_end = 0;
  for (uint32_t i = 0; i < n; ++i)
    sim.spawn([&, i] {
      first_start = std::min(first_start, SP::now_ns());  // after its dispatch
      SP::storage_write(bytes, one_file ? &files[0] : &files[i]);
      last_end = std::max(last_end, SP::now_ns());
    }, "writer " + std::to_string(i));
  REQUIRE(sim.run().finished());
  return last_end - first_start;
}

SimConfig storage_machine() {
  SimConfig c;
  c.cores = 16;
  c.sockets = 1;
  c.syscall_ns = 0;  // the factors below are then exact
  c.page_cache_write_bytes_per_ns = 2;  // one writer: 1 MiB in 524,288 ns
  c.page_cache_bytes_per_ns = 4;        // all together: twice one writer
  return c;
}

}  // namespace

TEST_CASE("page cache: N concurrent writers take longer than one by the modelled factor",
          "[sim][storage]") {
  const SimConfig c = storage_machine();
  const size_t mib = size_t{1} << 20;
  const uint64_t one = writers_end(c, 1, mib, false);
  CHECK(one == mib / 2);
  // Separate files: the shared server lets two go at full speed, then N x n / 4 GB/s.
  CHECK(writers_end(c, 2, mib, false) == one);
  CHECK(writers_end(c, 8, mib, false) == 8 * mib / 4);  // 4x one writer's time
  // One file: the inode lock serialises them, N x n / 2 GB/s.
  CHECK(writers_end(c, 8, mib, true) == 8 * one);
  // The old model: no shared cap, every writer at its own rate, whatever the number.
  SimConfig old = c;
  old.page_cache_bytes_per_ns = 0;
  CHECK(writers_end(old, 8, mib, false) == one);
  // page_cache_write_bytes_per_ns 0: a writer goes at copy_bytes_per_ns (the old default).
  old.page_cache_write_bytes_per_ns = 0;
  old.copy_bytes_per_ns = 8;
  CHECK(writers_end(old, 1, mib, false) == mib / 8);
}

TEST_CASE("device: fluctuating bandwidth is deterministic and averages out", "[sim][storage]") {
  // One fiber writes 64 KiB and fsyncs, 400 times; the device at 1 GB/s +- 50 % per 100 us.
  auto run = [](double fluct, uint64_t seed) {
    SimConfig c;
    c.cores = 2;
    c.sockets = 1;
    c.fsync_ns = 0;
    c.syscall_ns = 0;
    c.context_switch_ns = 0;  // the wake-up after fsync costs nothing: only the device counts
    c.storage_write_bytes_per_ns = 1;
    c.storage_fluctuation = fluct;
    c.storage_fluctuation_period_ns = 100000;
    Simulation sim(c, seed);
    std::vector<uint64_t> took;
    sim.spawn([&] {
      for (int i = 0; i < 400; ++i) {
        SP::storage_write(65536);
        const uint64_t t0 = SP::now_ns();
        SP::storage_sync();
        took.push_back(SP::now_ns() - t0);
      }
    }, "w");
    REQUIRE(sim.run().finished());
    return took;
  };
  const std::vector<uint64_t> steady = run(0, 1);
  for (uint64_t t : steady) CHECK(t == 65536);
  const std::vector<uint64_t> a = run(0.5, 1), b = run(0.5, 1), other = run(0.5, 2);
  CHECK(a == b);
  CHECK(a != other);
  uint64_t lo = ~uint64_t{0}, hi = 0, sum = 0;
  for (uint64_t t : a) {
    lo = std::min(lo, t);
    hi = std::max(hi, t);
    sum += t;
  }
  CHECK(lo >= 65536 * 2 / 3 - 1);  // at most 1.5 GB/s
  CHECK(hi <= 65536 * 2 + 1);      // at least 0.5 GB/s
  CHECK(hi > lo + 20000);          // it does fluctuate
  // Time-weighted, the mean bandwidth stays near 1 GB/s (harmonic effects aside: within 25 %).
  CHECK(static_cast<double>(sum) / 400 > 65536 * 0.9);
  CHECK(static_cast<double>(sum) / 400 < 65536 * 1.25);
}

TEST_CASE("device: with no device (tmpfs) fdatasync is a system call on the caller's CPU",
          "[sim][storage]") {
  // One CPU, two fibers: the first pwrites and fsyncs 100 times. With a device each sync sleeps
  // and the second fiber, which runs a long computation, takes the CPU; with none (tmpfs:
  // noop_fsync) every sync costs syscall_ns and the writer never leaves its CPU.
  auto run = [](uint64_t fsync_ns, double device_rate) {
    SimConfig c;
    c.cores = 1;
    c.sockets = 1;
    c.syscall_ns = 300;
    c.fsync_ns = fsync_ns;
    c.storage_write_bytes_per_ns = device_rate;
    c.page_cache_write_bytes_per_ns = 8;
    Simulation sim(c, 1);
    uint64_t writer_took = 0;
    sim.spawn([&] {
      const uint64_t t0 = SP::now_ns();
      for (int i = 0; i < 100; ++i) {
        SP::storage_write(8192);
        SP::storage_sync();
      }
      writer_took = SP::now_ns() - t0;
    }, "writer");
    sim.spawn([] { SP::work(1000000); }, "other");
    REQUIRE(sim.run().finished());
    return std::pair{writer_took, sim.counters()};
  };
  const auto [tmpfs_took, tmpfs] = run(0, 0);
  CHECK(tmpfs.storage_syncs == 100);
  CHECK(tmpfs_took == 100 * (300 + 8192 / 8 + 300));  // write and sync, nothing else
  CHECK(tmpfs.dispatches == 2);                        // each fiber put on the CPU once
  const auto [nvme_took, nvme] = run(50000, 2);
  CHECK(nvme.storage_syncs == 100);
  CHECK(nvme.dispatches > 100);  // every sync slept and was dispatched again
  CHECK(nvme_took > 100 * 50000);
}

}  // namespace walbench

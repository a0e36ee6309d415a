// Tests for the sim platform's range model (core/platform/sim_ranges.cc, sim.h "RANGES"):
// P::touch_range charges what the model says, exactly, in virtual time.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>

#include "core/platform/sim.h"
#include "core/platform/threads.h"

namespace walbench {
namespace {

using SP = SimPlatform;

// 4 cores on 2 sockets, compact: the first two fibers run on cores 0 and 1 (one socket).
SimConfig two_cores() {
  SimConfig c;
  c.cores = 4;
  c.sockets = 2;
  c.placement = SimPlacement::kCompact;
  c.wake_jitter = 0;
  return c;
}

struct alignas(4096) Page {
  uint8_t b[8192];
};

// Runs `first` on core 0, then (1 ms later) `second` on core 1 or, with same_core, on core 0
// after `first`; returns the virtual ns `second` spent in its body after the wait.
template <class F, class G>
uint64_t time_second(bool same_core, F first, G second) {
  Simulation sim(two_cores(), 1);
  uint64_t spent = 0;
  auto timed = [&] {
    SP::work(1000000);
    const uint64_t t0 = SP::now_ns();
    second();
    spent = SP::now_ns() - t0;
  };
  if (same_core) {
    sim.spawn([&] { first(); timed(); }, "both");
  } else {
    sim.spawn([&] { first(); }, "first");
    sim.spawn(timed, "second");
  }
  REQUIRE(sim.run().finished());
  return spent;
}

}  // namespace

TEST_CASE("sim ranges: a record sharing a line with another core's record pays a transfer",
          "[sim][ranges]") {
  const SimConfig cfg = two_cores();
  const uint64_t t = cfg.same_socket_transfer_ns;
  auto page = std::make_unique<Page>();
  uint8_t* p = page->b;
  auto first = [&] { SP::touch_range(p, 100, RangeAccess::kWrite); };  // lines 0-1
  // [100, 192): line 1 is shared with the first record (partial), line 2 is whole.
  auto second = [&] { SP::touch_range(p + 100, 92, RangeAccess::kWrite); };
  const uint64_t remote = time_second(false, first, second);
  const uint64_t own = time_second(true, first, second);
  CHECK(own == 0);
  CHECK(remote == t + t / Simulation::kRangeLineParallelism);
  // Aligned to a line: no partial line, only the overlapped per-line charge.
  auto aligned = [&] { SP::touch_range(p + 128, 64, RangeAccess::kWrite); };
  CHECK(time_second(false, first, aligned) == t / Simulation::kRangeLineParallelism);
}

TEST_CASE("sim ranges: reading a page another core filled costs more than one's own",
          "[sim][ranges]") {
  const SimConfig cfg = two_cores();
  const uint64_t t = cfg.same_socket_transfer_ns;
  auto page = std::make_unique<Page>();
  uint8_t* p = page->b;
  auto fill = [&] { SP::touch_range(p, 8192, RangeAccess::kWrite); };
  auto read_twice = [&] {
    SP::touch_range(p, 8192, RangeAccess::kRead);
    SP::touch_range(p, 8192, RangeAccess::kRead);  // now a holder: free
  };
  CHECK(time_second(true, fill, read_twice) == 0);
  CHECK(time_second(false, fill, read_twice) == 128 * t / Simulation::kRangeLineParallelism);
}

TEST_CASE("sim ranges: overwriting a page pays for the farther holder, once", "[sim][ranges]") {
  // Core 0 fills, core 1 reads, then core 1 zeroes it: the writer (core 0) still holds it.
  SimConfig cfg = two_cores();
  const uint64_t t = cfg.same_socket_transfer_ns;
  auto page = std::make_unique<Page>();
  uint8_t* p = page->b;
  Simulation sim(cfg, 1);
  uint64_t read_ns = 0, zero_ns = 0, again_ns = 0;
  sim.spawn([&] { SP::touch_range(p, 8192, RangeAccess::kWrite); }, "filler");
  sim.spawn([&] {
    SP::work(1000000);
    uint64_t t0 = SP::now_ns();
    SP::touch_range(p, 8192, RangeAccess::kRead);
    read_ns = SP::now_ns() - t0;
    t0 = SP::now_ns();
    SP::touch_range(p, 8192, RangeAccess::kWrite);
    zero_ns = SP::now_ns() - t0;
    t0 = SP::now_ns();
    SP::touch_range(p, 8192, RangeAccess::kWrite);  // its own now
    again_ns = SP::now_ns() - t0;
  }, "reader");
  REQUIRE(sim.run().finished());
  CHECK(read_ns == 128 * t / Simulation::kRangeLineParallelism);
  CHECK(zero_ns == 128 * t / Simulation::kRangeLineParallelism);
  CHECK(again_ns == 0);
  CHECK(sim.range_counters().remote_lines_read == 128);
  CHECK(sim.range_counters().remote_lines_written == 128);
  CHECK(sim.range_counters().partial_line_transfers == 0);
}

TEST_CASE("sim ranges: no cost outside a simulation or on threads", "[sim][ranges]") {
  auto page = std::make_unique<Page>();
  SP::touch_range(page->b, 8192, RangeAccess::kWrite);  // no simulation: nothing happens
  ThreadsPlatform::touch_range(page->b, 8192, RangeAccess::kRead);
  SUCCEED();
}

}  // namespace walbench

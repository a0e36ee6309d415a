// The WAL writer follows XLogBackgroundFlush (core/wal/wal.h, "THE WAL WRITER'S SIDE"):
// wal_writer_flush_after decides how often it fsyncs between wal_writer_delay wake-ups (through
// the latch that async commits set), and after each round it pre-initialises buffer pages
// through the WAL's BufferInit. Runs on the simulated platform: exact, and virtual time makes
// the predicted fsync counts hold.
#include <catch2/catch.hpp>

#include "tests/conformance.h"

using namespace walbench;
using namespace walbench::conformance;

namespace {

constexpr double kRunS = 0.02;     // virtual seconds
constexpr double kDelayMs = 5;     // wal_writer_delay

CellSpec async_cell(const std::string& strategy, uint32_t flush_after,
                    const std::string& buffer_init = "mapping_lock") {
  CellSpec spec;
  spec.strategy = strategy;
  spec.clients = 4;
  spec.platform.kind = "sim";
  spec.workload.name = "emit_message";
  spec.workload.transactional = true;
  spec.workload.client_overhead_us = 2;
  spec.wal.fsync = true;
  spec.wal.buffer_init = buffer_init;
  spec.wal.wal_buffers = 64;  // 512 KiB: the ring laps inside the run
  spec.commit.synchronous_commit = false;
  spec.commit.wal_writer_delay_ms = kDelayMs;
  spec.commit.wal_writer_flush_after = flush_after;
  spec.run.seed = 3;
  return spec;
}

uint64_t fsyncs(const Outcome& o) { return o.model.at("fsyncs").get<uint64_t>(); }

}  // namespace

TEST_CASE("wal_writer_flush_after: the writer fsyncs once per delay, or whenever that many pages "
          "are pending", "[walwriter][sim]") {
  for (const char* strategy : {"insert_locks", "ideal"}) {
    INFO(strategy);
    const Outcome rare = run_cell(async_cell(strategy, 1u << 20), kRunS);
    const Outcome often = run_cell(async_cell(strategy, 1), kRunS);
    INFO("flush_after=1M: " << rare.model.dump() << "\nflush_after=1: " << often.model.dump());
    REQUIRE(rare.verify.ok);
    REQUIRE(often.verify.ok);
    // 1M pages are never pending: one fsync per wal_writer_delay (the first round, then one
    // per delay of the run and the drain after it), plus the end-of-run flush.
    const uint64_t rounds = static_cast<uint64_t>(kRunS * 1000 / kDelayMs) + 2;
    CHECK(fsyncs(rare) >= rounds - 2);
    CHECK(fsyncs(rare) <= rounds + 1);
    // One page: each async commit that completes a page sets the latch, and the writer wakes
    // within its poll interval and fsyncs: many times per delay.
    CHECK(fsyncs(often) >= 10 * fsyncs(rare));
  }
}

TEST_CASE("the WAL writer pre-initialises buffer pages through either BufferInit",
          "[walwriter][sim]") {
  for (const char* strategy : {"insert_locks", "ideal"})
    for (const char* init : {"mapping_lock", "lockfree"}) {
      INFO(strategy << " buffer_init=" << init);
      const Outcome o = run_cell(async_cell(strategy, 128, init), kRunS);
      INFO(o.model.dump());
      REQUIRE(o.verify.ok);
      const uint64_t pre = o.model.at("pages_preinitialised").get<uint64_t>();
      const uint64_t all = o.model.at("pages_initialised").get<uint64_t>();
      CHECK(pre > 0);
      CHECK(pre <= all);
      // The ring is lapped several times: pages ahead of the inserters keep being prepared,
      // not only the first lap of never-used slots.
      const uint64_t ring = o.model.at("ring_pages").get<uint64_t>() *
                            o.model.at("streams").get<uint64_t>();
      CHECK(pre > ring);
    }
}

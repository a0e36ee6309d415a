// What is special to consolidation_array (the conformance suite covers the WAL format, eviction,
// pages and segments): the packed slot word carries each member's offset and its predecessor's
// offset (xl_prev, C2), and under contention groups really consolidate: the leader takes
// insertpos_lck once for the whole group, so far fewer acquisitions than records (a version that
// reserved per record would fail), with and without delegated release, on the sim.
#include <catch2/catch.hpp>

#include "strategies/consolidation_array/consolidation_array.h"
#include "tests/conformance.h"

using namespace walbench;
using namespace walbench::conformance;

TEST_CASE("consolidation array word: offsets and predecessor offsets of successive joins",
          "[consolidation]") {
  using Wd = CArrayWord;
  uint64_t w = 0;
  const uint64_t sizes[] = {3, 1, 7, 2};  // in 8-byte units
  uint64_t expected_offset = 0, expected_prev = 0;
  for (uint64_t i = 0; i < 4; ++i) {
    REQUIRE(Wd::fits(w, sizes[i]));
    CHECK(Wd::count(w) == i);
    CHECK(Wd::bytes(w) == expected_offset);  // this member's offset
    if (i > 0) CHECK(Wd::last_off(w) == expected_prev);  // its predecessor's offset
    expected_prev = expected_offset;
    expected_offset += sizes[i];
    w = Wd::joined(w, sizes[i]);
  }
  CHECK(Wd::count(w) == 4);
  CHECK(Wd::bytes(w) == 13);
  CHECK(Wd::last_off(w) == 11);  // offsets 0, 3, 4, 11: the group's last record, PrevBytePos after the group
  CHECK_FALSE(Wd::fits(Wd::kClosed, 1));
  CHECK_FALSE(Wd::fits(w, Wd::kMaxUnits - 12));
  CHECK(Wd::fits(w, Wd::kMaxUnits - 13));
  uint64_t full = 0;
  for (uint64_t i = 0; i < Wd::kMaxCount; ++i) full = Wd::joined(full, 1);
  CHECK_FALSE(Wd::fits(full, 1));
  CHECK_FALSE(Wd::closed(full));
}

namespace {

// One sim cell like conformance::run_cell, also returning insertpos_lck's acquisitions.
struct LockedOutcome {
  VerifyResult verify;
  uint64_t records = 0;
  uint64_t insertpos_acquisitions = 0;
};

LockedOutcome run_counting(const CellSpec& spec, double seconds) {
  auto cell = find_strategy(spec.strategy)->make_cell(spec, spec.run.seed);
  RunControl ctl(spec.clients);
  ctl.measuring = true;
  RunSpec rs = spec.run;
  rs.warmup_s = 0;
  rs.duration_s = seconds;
  rs.progress_interval_s = 0;
  const DrivenRun d = cell->drive(ctl, rs);
  INFO("drive: " << d.error);
  REQUIRE(d.error.empty());
  cell->finish();
  LockedOutcome o;
  o.verify = cell->verify();
  o.records = o.verify.records;
  const nlohmann::json locks = cell->lock_stats();
  if (locks.contains("Spinlock:insertpos_lck"))
    o.insertpos_acquisitions = locks.at("Spinlock:insertpos_lck").at("acquisitions").get<uint64_t>();
  return o;
}

CellSpec contended_spec(const Variant& v) {
  CellSpec spec = stress_spec(v);
  spec.platform.kind = "sim";
  spec.platform.sim = {{"cores", 32}};
  spec.clients = 32;
  spec.wal.page_size = 8192;
  spec.wal.segment_size = 64 * 1024;  // groups still cross segments
  spec.wal.wal_buffers = 64;
  spec.workload.record_size.kind = SizeSpec::Kind::kFixed;
  spec.workload.record_size.value = 16;
  spec.workload.transactional = false;  // no commit flushes: insertpos_lck is the leaders'
  spec.commit.synchronous_commit = false;
  spec.commit.wal_writer_delay_ms = 0.2;
  return spec;
}

}  // namespace

TEST_CASE("consolidation array: one insertpos_lck acquisition per group, not per record",
          "[consolidation][sim]") {
  // Baseline: insert_locks takes insertpos_lck once per record (plus flushers' reads).
  const LockedOutcome base = run_counting(contended_spec({"insert_locks", nlohmann::json::object()}), 0.002);
  REQUIRE(base.verify.ok);
  REQUIRE(base.records > 1000);
  CHECK(base.insertpos_acquisitions >= base.records);
  INFO("insert_locks: records " << base.records << " insertpos_lck " << base.insertpos_acquisitions);
  for (bool delegated : {false, true}) {
    for (int slots : {1, 3}) {
      Variant v{"consolidation_array", {{"slots", slots}, {"delegated_release", delegated}}};
      const CellSpec spec = contended_spec(v);
      const LockedOutcome o = run_counting(spec, 0.002);
      INFO(describe(v, spec) << " records " << o.records << " insertpos_lck "
                             << o.insertpos_acquisitions << " verify " << o.verify.error);
      REQUIRE(o.verify.ok);
      REQUIRE(o.records > 300);
      CHECK(o.insertpos_acquisitions > 0);
      CHECK(o.insertpos_acquisitions * 2 < o.records);  // groups of more than 2 on average
    }
  }
}

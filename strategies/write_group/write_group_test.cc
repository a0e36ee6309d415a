// What is special to write_group (the conformance suite covers the rest): groups really form
// under contention, their size obeys the byte cap and RocksDB's small-leader rule, a leader
// alone (cap below two records) makes groups of one, and every record's xl_prev is chained
// across members and groups (the verifier), with the leader copying and with members copying
// in parallel. Deterministic: clients are fibers on the simulated platform.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/platform/sim.h"
#include "core/wal/storage.h"
#include "core/wal/verifier.h"
#include "core/wal/wal.h"
#include "strategies/write_group/write_group.h"

using namespace walbench;

namespace {

using SP = SimPlatform;
using Group = WriteGroup<SP>;

struct GroupRun {
  Group::Totals totals;
  VerifyResult verify;
  uint64_t records = 0;
};

// `clients` fibers on `cores` simulated cores, each inserting `per_client` records of `len`
// bytes straight into a Wal (no transactions, no writer: evictions write the ring), then one
// flush of everything and the verifier.
GroupRun run_group(const WriteGroupParams& params, uint32_t clients, uint32_t cores,
                   uint32_t per_client, uint32_t len) {
  GroupRun out;
  std::thread t([&] {
    SimConfig cfg;
    cfg.cores = cores;
    cfg.sockets = 1;
    Simulation sim(cfg, 7);
    WalGeometry g;
    g.page_size = 1024;
    g.segment_size = 8192;
    std::unique_ptr<Storage> storage = make_memory_storage(g);
    ProcTable<SP> procs(clients + 1, 3);  // the clients and a final flusher
    Wal<SP, Group> wal(g, 16, *storage, procs, params);
    std::vector<uint64_t> counts(clients, 0);
    for (uint32_t i = 0; i < clients; ++i)
      sim.spawn(
          [&, i] {
            std::vector<uint8_t> buf(len);
            for (uint32_t k = 0; k < per_client; ++k) {
              const uint32_t crc = build_record(buf.data(), len, Xid{0}, kRmHeap, 0,
                                                ClientId{i}, counts[i]++);
              wal.insert(procs[static_cast<int32_t>(i)], buf.data(), len, crc);
            }
          },
          "client" + std::to_string(i));
    const SimOutcome o = sim.run();
    REQUIRE(o.finished());
    const Lsn end = g.bytepos_to_end_lsn(wal.strategy.reserved_end());
    wal.write_upto(procs[static_cast<int32_t>(clients)], end, true);
    VerifyExpect ex;
    ex.start = g.bytepos_to_lsn(BytePos{0});
    ex.end = end;
    ex.records_per_client = counts;
    ex.total_records = uint64_t{clients} * per_client;
    out.verify = verify_wal(*storage, g, ex);
    out.totals = wal.strategy.totals();
    out.records = ex.total_records;
  });
  t.join();
  return out;
}

}  // namespace

TEST_CASE("write_group: contended clients form groups; every member is inserted once",
          "[write_group]") {
  for (GroupCopy copy : {GroupCopy::kLeader, GroupCopy::kParallel}) {
    WriteGroupParams p;
    p.copy = copy;
    INFO("copy " << (copy == GroupCopy::kLeader ? "leader" : "parallel"));
    const GroupRun r = run_group(p, 16, 4, 40, 64);
    INFO(r.verify.error);
    CHECK(r.verify.ok);
    CHECK(r.verify.records == r.records);
    CHECK(r.totals.members == r.records);  // each record led or followed exactly once
    CHECK(r.totals.groups < r.records);    // some groups had followers
    CHECK(r.totals.largest > 1);
    CHECK(r.totals.followers == r.records - r.totals.groups);
  }
}

TEST_CASE("write_group: the byte cap and the small-leader rule bound a group", "[write_group]") {
  for (GroupCopy copy : {GroupCopy::kLeader, GroupCopy::kParallel}) {
    INFO("copy " << (copy == GroupCopy::kLeader ? "leader" : "parallel"));
    WriteGroupParams p;
    p.copy = copy;
    // A cap below two records: every leader is alone (its own record always goes).
    p.max_group_bytes = 96;
    GroupRun r = run_group(p, 16, 4, 20, 64);
    CHECK(r.verify.ok);
    CHECK(r.totals.largest == 1);
    CHECK(r.totals.groups == r.records);
    // Cap 1024 and 64-byte records: the leader's record is <= 1024 / 8, so the group is capped
    // at 64 + 128 bytes: three records, where the plain cap would allow sixteen.
    p.max_group_bytes = 1024;
    r = run_group(p, 16, 4, 40, 64);
    INFO(r.verify.error);
    CHECK(r.verify.ok);
    CHECK(r.totals.largest == 3);
    // A leader whose record is above 1/8 of the cap gets the plain cap: 200-byte records, cap
    // 1024, up to five records (the small-leader rule would allow 200 + 128 bytes: one).
    r = run_group(p, 16, 4, 40, 200);
    CHECK(r.verify.ok);
    CHECK(r.totals.largest >= 2);
    CHECK(r.totals.largest <= 5);
  }
}

TEST_CASE("write_group: records across pages and larger than the ring, copied in parallel",
          "[write_group]") {
  WriteGroupParams p;
  p.copy = GroupCopy::kParallel;
  // 16 x 1 KiB ring, 20000-byte records: a group spans more than the ring, so members evict
  // pages of their own group (W3, W6: a wrong progress word deadlocks here).
  const GroupRun r = run_group(p, 6, 2, 5, 20000);
  INFO(r.verify.error);
  CHECK(r.verify.ok);
  CHECK(r.verify.records == r.records);
  CHECK(r.totals.largest > 1);
}

TEST_CASE("write_group is registered with its parameters", "[write_group]") {
  const StrategyInfo* s = find_strategy("write_group");
  REQUIRE(s != nullptr);
  CHECK(s->origin.find("write_thread.cc") != std::string::npos);
  std::vector<std::string> names;
  for (const auto& ps : s->params) names.push_back(ps.name);
  CHECK(names == std::vector<std::string>{"max_group_bytes", "copy", "spin_count", "max_yield_us",
                                          "slow_yield_us", "adaptive_yield"});
  CHECK_NOTHROW(WriteGroupParams::from_json({{"copy", "parallel"}}));
  CHECK_THROWS_WITH(WriteGroupParams::from_json({{"copy", "followers"}}),
                    Catch::Contains("unknown copy \"followers\""));
}

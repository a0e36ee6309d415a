// What is special to per_client_progress (the conformance suite covers the rest): the flusher's
// horizon over the client slots (per_client_progress.h P1-P4): a reservation made but not yet
// published stays above the horizon (the announcement, P2), an idle client does not hold it back,
// a client in progress below upto is waited for, the own slot only grows through advertise; and
// a many-client run on the sim. The interleavings are forced by calling insert's steps one by one.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/platform/threads.h"
#include "core/wal/format.h"
#include "core/wal/storage.h"
#include "core/wal/wal.h"
#include "strategies/per_client_progress/per_client_progress.h"
#include "tests/conformance.h"

using namespace walbench;

namespace {

using TP = ThreadsPlatform;
using S = PerClientProgress<TP>;

struct TestWal {
  WalGeometry g;
  std::unique_ptr<Storage> storage;
  ProcTable<TP> procs{3, 1};
  std::unique_ptr<Wal<TP, S>> wal;
  std::vector<uint8_t> buf = std::vector<uint8_t>(8192);
  uint64_t records = 0;

  explicit TestWal(PrevLink link = PrevLink::kHashTable) {
    g.page_size = 1024;
    g.segment_size = 8192;
    storage = make_memory_storage(g);
    PerClientProgressParams p;
    p.prev_link = link;
    wal = std::make_unique<Wal<TP, S>>(g, 8, *storage, procs, p);
  }
  S& strategy() { return wal->strategy; }
  Wal<TP, S>::Inserted insert(uint32_t client, uint32_t len) {
    const uint32_t crc = build_record(buf.data(), len, Xid{0}, kRmHeap, 0,
                                      ClientId{client}, records++);
    return wal->insert(procs[client], buf.data(), len, crc);
  }
  Lsn wait(uint32_t client, Lsn upto) {
    return strategy().wait_insertions(*wal, procs[client], upto);
  }
  Lsn end_lsn(uint64_t bytepos) const { return g.bytepos_to_end_lsn(BytePos{bytepos}); }
};

}  // namespace

TEST_CASE("a reservation between fetch_add and its publication stays above the horizon (P2)",
          "[per_client_progress]") {
  TestWal t;
  const auto r1 = t.insert(1, 100);  // client 1's previous record: its next announcement
  const auto r2 = t.insert(0, 100);
  CHECK(t.strategy().progress_of(0) == S::kIdle);
  CHECK(t.strategy().progress_of(1) == S::kIdle);

  // Client 1 announces and reserves, and has not published its allocated position yet.
  t.strategy().announce(t.procs[1]);
  CHECK(t.strategy().progress_of(1) == r1.end.value);
  const uint64_t start = t.strategy().reserve(max_align(200));
  const Lsn start_lsn = t.g.bytepos_to_lsn(BytePos{start});
  CHECK(start_lsn == r2.end);  // right after client 0's record
  const Lsn reserved = t.end_lsn(start + max_align(200));

  // A flusher now reads a reserved end above client 1's start. Asking for r1's end (which the
  // announcement covers) it must not return more than client 1's start: without the
  // announcement the slot would read idle and the horizon would be the reserved end.
  const Lsn h = t.wait(2, r1.end);
  CHECK(h == r1.end);
  CHECK(h < start_lsn);

  // The allocated position lets a flusher through up to client 1's start, not beyond.
  t.strategy().publish_allocated(t.procs[1], t.end_lsn(start));
  CHECK(t.wait(2, start_lsn) == start_lsn);

  // Beyond it, the flusher waits until client 1 is done.
  std::atomic<uint64_t> result{0};
  std::thread flusher([&] { result = t.wait(2, reserved).value; });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(result.load() == 0);
  t.strategy().finish(t.procs[1], reserved);
  flusher.join();
  CHECK(Lsn{result.load()} == reserved);
  CHECK(t.strategy().progress_of(1) == S::kIdle);
}

TEST_CASE("idle clients do not hold the horizon back; kIdle is the neutral value (P1)",
          "[per_client_progress]") {
  for (PrevLink link : {PrevLink::kHashTable, PrevLink::kHashTableOffset}) {
    TestWal t(link);
    // Only client 0 ever inserts; clients 1 and 2 never did.
    Lsn end{0};
    for (int i = 0; i < 20; ++i) end = t.insert(0, 300).end;  // crosses pages
    for (uint32_t c = 0; c < 3; ++c) CHECK(t.strategy().progress_of(c) == S::kIdle);
    CHECK(t.wait(1, end) == end);
    CHECK(t.strategy().log_insert_result() == end);
    // PG 17's early exit: an older upto returns the logInsertResult read.
    CHECK(t.wait(2, Lsn{100}) == end);
  }
}

TEST_CASE("advertise: the own slot only grows, and is ignored while idle (P1, P4)",
          "[per_client_progress]") {
  TestWal t;
  t.insert(0, 100);
  t.strategy().advertise(t.procs[2], Lsn{5000});  // the WAL writer: nothing in progress
  CHECK(t.strategy().progress_of(2) == S::kIdle);

  t.strategy().announce(t.procs[1]);
  const uint64_t start = t.strategy().reserve(max_align(3000));
  t.strategy().publish_allocated(t.procs[1], t.end_lsn(start));
  const uint64_t allocated = t.strategy().progress_of(1);
  CHECK(allocated == t.end_lsn(start).value);
  t.strategy().advertise(t.procs[1], Lsn{allocated + 1000});
  CHECK(t.strategy().progress_of(1) == allocated + 1000);
  t.strategy().advertise(t.procs[1], Lsn{allocated + 500});  // never backwards
  CHECK(t.strategy().progress_of(1) == allocated + 1000);
  // A flusher asking for what was advertised gets it without waiting.
  CHECK(t.wait(0, Lsn{allocated + 1000}) == Lsn{allocated + 1000});
  t.strategy().finish(t.procs[1], t.end_lsn(start + max_align(3000)));
}

TEST_CASE("the link table has room for every concurrent inserter + 1 (P5, T4)",
          "[per_client_progress]") {
  for (uint32_t n : {1u, 3u, 64u, 1025u}) {
    ProcTable<TP> procs(n, 1);
    S s(procs, {});
    INFO("clients " << n);
    CHECK(s.link_capacity() >= n + 1);
    CHECK((s.link_capacity() & (s.link_capacity() - 1)) == 0);
  }
}

TEST_CASE("per_client_progress on the sim: 64 clients on 8 cores, every xl_prev verified",
          "[per_client_progress]") {
  for (const char* pl : {"hash_table", "hash_table_offset"}) {
    conformance::Variant v{"per_client_progress", {{"prev_link", pl}}};
    CellSpec spec = conformance::stress_spec(v);
    spec.platform.kind = "sim";
    spec.platform.sim = {{"cores", 8}};
    spec.clients = 64;
    spec.workload.record_size.max = 4096;
    INFO(conformance::describe(v, spec));
    const conformance::Outcome a = conformance::run_cell(spec, 0.002);
    INFO("verify: " << a.verify.error);
    CHECK(a.txns > 0);
    CHECK(a.verify.ok);
    CHECK(a.verify.records > 0);
    const conformance::Outcome b = conformance::run_cell(spec, 0.002);
    CHECK(b.txns == a.txns);  // deterministic
  }
}

TEST_CASE("per_client_progress is registered with its parameter", "[per_client_progress]") {
  const StrategyInfo* s = find_strategy("per_client_progress");
  REQUIRE(s != nullptr);
  REQUIRE(s->params.size() == 1);
  CHECK(s->params[0].name == "prev_link");
  CHECK(s->params[0].default_value == "hash_table");
  CHECK(s->params[0].choices == std::vector<std::string>{"hash_table", "hash_table_offset"});
  CHECK(PerClientProgressParams::from_json({{"prev_link", "hash_table_offset"}}).prev_link ==
        PrevLink::kHashTableOffset);
  CHECK_THROWS_AS(PerClientProgressParams::from_json({{"prev_link", "next_header"}}),
                  std::invalid_argument);
  CHECK_THROWS_AS(PerClientProgressParams::from_json({{"prev_link", "nope"}}),
                  std::invalid_argument);
}

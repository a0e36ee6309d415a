// What is special to link_buf (the conformance suite covers the rest): the ring's tail stops at
// the first unpublished position and jumps over links longer than the ring's window; a slot is
// refused while the tail is a window behind; who advances the tail (tail_advancer); a record
// larger than the buffer ring publishes its copied prefix before it evicts (R4), with every
// prev_link; threaded clients on a ring of one slot.
#include <catch2/catch.hpp>

#include <memory>
#include <thread>
#include <vector>

#include "core/platform/threads.h"
#include "core/wal/storage.h"
#include "core/wal/verifier.h"
#include "core/wal/wal.h"
#include "strategies/link_buf/link_buf.h"
#include "tests/conformance.h"

using namespace walbench;

namespace {

using TP = ThreadsPlatform;

// Clients inserting directly into a Wal on real threads; client `clients` is the flusher.
struct DirectWal {
  using S = LinkBuf<TP>;
  WalGeometry g;
  std::unique_ptr<Storage> storage;
  ProcTable<TP> procs;
  std::unique_ptr<Wal<TP, S>> wal;
  std::vector<std::vector<uint8_t>> bufs;
  std::vector<uint64_t> records;

  DirectWal(const LinkBufParams& p, uint32_t buffers, uint32_t clients = 1)
      : procs(clients + 1, 1), bufs(clients, std::vector<uint8_t>(70000)), records(clients) {
    g.page_size = 1024;
    g.segment_size = 8192;
    storage = make_memory_storage(g);
    wal = std::make_unique<Wal<TP, S>>(g, buffers, *storage, procs, p);
  }
  void insert(uint32_t client, uint32_t len) {
    const uint32_t crc = build_record(bufs[client].data(), len, Xid{0}, kRmHeap, 0,
                                      ClientId{client}, records[client]++);
    wal->insert(procs[client], bufs[client].data(), len, crc);
  }
  uint64_t pos() const { return wal->strategy.reserved_end().value; }
  VerifyResult finish() {
    const Lsn end = g.bytepos_to_end_lsn(wal->strategy.reserved_end());
    wal->write_upto(procs[procs.size() - 1], end, true);
    VerifyExpect ex;
    ex.start = g.bytepos_to_lsn(BytePos{0});
    ex.end = end;
    ex.records_per_client = records;
    for (uint64_t r : records) ex.total_records += r;
    return verify_wal(*storage, g, ex);
  }
};

}  // namespace

TEST_CASE("link ring: the tail stops at the first hole and jumps over long links", "[link_buf]") {
  LinkRing<TP> r(4);  // a window of 32 bytes
  REQUIRE(r.window() == 32);
  REQUIRE(r.has_space(8));
  r.add_link(8, 16);
  CHECK(r.advance() == 0);  // [0, 8) is not published: the tail waits for it
  r.add_link(0, 8);
  CHECK(r.advance() == 16);
  CHECK(r.link_at(0) == 0);  // followed links are emptied (R2)
  CHECK(r.link_at(8) == 0);
  CHECK(r.has_space(40));   // 16 + 32 > 40
  CHECK_FALSE(r.has_space(48));  // slot of 16, one window ahead: the tail is not past 16 (R1)
  CHECK_FALSE(r.has_space(1024));  // beyond the window
  r.add_link(16, 16 + 1000);  // longer than the window: one slot, at its start
  CHECK(r.advance() == 1016);
  REQUIRE(r.has_space(1024));
  r.add_link(1024, 2000);  // beyond a hole at 1016
  CHECK(r.advance() == 1016);
  CHECK(r.link_at(1024) == 2000);
  r.add_link(1016, 1024);
  CHECK(r.advance() == 2000);
  CHECK(r.has_space(2000 + 24));
}

TEST_CASE("tail_advancer: inserters advance the tail themselves only with \"inserter\"",
          "[link_buf]") {
  for (TailAdvancer ta : {TailAdvancer::kWaiter, TailAdvancer::kInserter}) {
    LinkBufParams p;
    p.tail_advancer = ta;
    DirectWal d(p, 16);
    for (int i = 0; i < 20; ++i) d.insert(0, kMinRecordSize + 8 * i);
    INFO("inserter " << (ta == TailAdvancer::kInserter));
    if (ta == TailAdvancer::kInserter) {
      CHECK(d.wal->strategy.ring().tail() == d.pos());
    } else {
      CHECK(d.wal->strategy.ring().tail() == 0);  // nobody waited: the links wait for a waiter
    }
    const VerifyResult v = d.finish();  // the flusher's wait follows every link
    INFO(v.error);
    CHECK(v.ok);
    CHECK(d.wal->strategy.ring().tail() == d.pos());
  }
}

TEST_CASE("records larger than the buffer ring publish their copied prefix before evicting",
          "[link_buf]") {
  for (PrevLink pl : {PrevLink::kNextHeader, PrevLink::kHashTable, PrevLink::kHashTableOffset}) {
    for (TailAdvancer ta : {TailAdvancer::kWaiter, TailAdvancer::kInserter}) {
      LinkBufParams p;
      p.prev_link = pl;
      p.tail_advancer = ta;
      p.ring_slots = 8;
      DirectWal d(p, 4);  // 4 x 1 KiB pages
      d.insert(0, 100);
      d.insert(0, 5000);   // evicts pages of its own record: would wait for itself unpublished
      d.insert(0, 65536);  // 16 x the ring
      for (int i = 0; i < 30; ++i) d.insert(0, kMinRecordSize + (i * 37) % 900);
      INFO("prev_link " << static_cast<int>(pl) << " inserter " << (ta == TailAdvancer::kInserter));
      CHECK(d.wal->strategy.chunks() > 0);
      if (pl == PrevLink::kNextHeader) CHECK(d.wal->strategy.links_after_copy() >= 2);  // N4
      const VerifyResult v = d.finish();
      INFO(v.error);
      CHECK(v.ok);
    }
  }
}

TEST_CASE("a ring of one slot: threaded clients publish one at a time, in order", "[link_buf]") {
  for (TailAdvancer ta : {TailAdvancer::kWaiter, TailAdvancer::kInserter}) {
    LinkBufParams p;
    p.ring_slots = 1;
    p.tail_advancer = ta;
    p.spin_rounds = 10;
    p.sleep_us = 1;
    constexpr uint32_t kClients = 4;
    DirectWal d(p, 8, kClients);
    std::vector<std::thread> threads;
    for (uint32_t c = 0; c < kClients; ++c)
      threads.emplace_back([&d, c] {
        for (int i = 0; i < 400; ++i) d.insert(c, kMinRecordSize + 8 * ((i + c) % 40));
      });
    for (auto& t : threads) t.join();
    INFO("inserter " << (ta == TailAdvancer::kInserter));
    const VerifyResult v = d.finish();
    INFO(v.error);
    CHECK(v.ok);
    CHECK(v.records == kClients * 400);
    CHECK(d.wal->strategy.ring().tail() == d.pos());
  }
}

TEST_CASE("link_buf on the sim with a 2-slot ring: verified, and identical runs agree", "[link_buf]") {
  conformance::Variant v{"link_buf", {{"ring_slots", 2}, {"spin_rounds", 0}}};
  CellSpec spec = conformance::stress_spec(v);
  spec.platform.kind = "sim";
  spec.clients = 16;
  INFO(conformance::describe(v, spec));
  const conformance::Outcome a = conformance::run_cell(spec, 0.002);
  const conformance::Outcome b = conformance::run_cell(spec, 0.002);
  INFO("verify: " << a.verify.error);
  CHECK(a.verify.ok);
  CHECK(a.txns > 0);
  CHECK(a.txns == b.txns);
}

TEST_CASE("link_buf is registered with its parameters", "[link_buf]") {
  const StrategyInfo* s = find_strategy("link_buf");
  REQUIRE(s != nullptr);
  std::vector<std::string> names;
  for (const auto& p : s->params) names.push_back(p.name);
  CHECK(names == std::vector<std::string>{"ring_slots", "tail_advancer", "spin_rounds",
                                          "sleep_us", "prev_link"});
  const auto p = LinkBufParams::from_json(
      {{"ring_slots", 64}, {"tail_advancer", "waiter"}, {"prev_link", "next_header"}});
  CHECK(p.ring_slots == 64);
  CHECK(p.tail_advancer == TailAdvancer::kWaiter);
  CHECK(p.prev_link == PrevLink::kNextHeader);
  CHECK_THROWS_AS(LinkBufParams::from_json({{"ring_slots", 12}}), std::invalid_argument);
  CHECK_THROWS_AS(LinkBufParams::from_json({{"tail_advancer", "log_writer"}}),
                  std::invalid_argument);
}

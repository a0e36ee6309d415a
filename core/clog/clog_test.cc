// The CLOG model on its own: bit packing, page boundaries, LRU eviction with write-back and
// re-read, the tree-status order across pages, group LSNs and WAL-before-data, XidGen, and the
// verifier (positive and corrupted images). A tiny "strategy" that just takes the control lock
// stands in for strategies/clog_* (they have their own tests).
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <thread>
#include <utility>
#include <vector>

#include "core/clog/clog.h"
#include "core/platform/threads.h"

using namespace walbench;
using P = ThreadsPlatform;

namespace {

// clog_exclusive in four lines, recording the page-level calls.
struct LockingStrategy {
  Clog<P>& clog;
  std::vector<std::pair<uint32_t, bool>> calls;  // (pageno, all_xact_same_page)
  void set_page_status(Proc<P>& me, Xid xid, std::span<const Xid> subxids, XidStatus status,
                       Lsn lsn, uint32_t pageno, bool all_same) {
    calls.emplace_back(pageno, all_same);
    clog.control_lock().acquire(me, kLwExclusive);
    clog.set_page_status_locked(me, xid, subxids, status, lsn, pageno);
    clog.control_lock().release(me);
  }
};

void commit(Clog<P>& clog, Proc<P>& me, Xid xid, std::vector<Xid> subs = {}, Lsn lsn = kInvalidLsn) {
  LockingStrategy s{clog, {}};
  clog.set_tree_status(s, me, xid, subs, XidStatus::kCommitted, lsn);
}

// Extend page by page up to and including the page of `upto` (as XidGen would).
void extend_to(Clog<P>& clog, Proc<P>& me, Xid upto) {
  const uint32_t per = clog.geometry().xacts_per_page();
  for (uint32_t p = clog.latest_page() + 1; p <= clog.geometry().page_of(upto); ++p)
    clog.extend(me, Xid{p * per});
}

}  // namespace

TEST_CASE("CLOG geometry: 2 bits per xid, 32768 xids per 8 KiB page", "[clog]") {
  const ClogGeometry g;
  CHECK(g.xacts_per_page() == 32768);
  CHECK(g.page_of(Xid{32767}) == 0);
  CHECK(g.page_of(Xid{32768}) == 1);
  CHECK(g.index_of(Xid{32768}) == 0);
  CHECK(g.page_of(Xid{70000}) == 2);  // the worked example in clog.h
  CHECK(g.index_of(Xid{70000}) == 4464);
  CHECK(g.lsn_groups_per_page() == 1024);
}

TEST_CASE("CLOG bit packing matches PostgreSQL's byte layout", "[clog]") {
  ProcTable<P> procs(1, 1);
  Proc<P>& me = procs[0];
  Clog<P> clog(procs, 4);
  commit(clog, me, Xid{5});
  commit(clog, me, Xid{6});
  LockingStrategy s{clog, {}};
  clog.set_tree_status(s, me, Xid{7}, {}, XidStatus::kAborted, kInvalidLsn);
  clog.set_tree_status(s, me, kInvalidXid, std::vector<Xid>{Xid{9}}, XidStatus::kSubCommitted,
                       kInvalidLsn);
  const ClogImage img = clog.image();
  REQUIRE(img.pages.size() == 1);
  REQUIRE(img.pages[0].size() == 8192);
  // xid 5: byte 1, bits 2-3; xid 6: bits 4-5; xid 7: bits 6-7 (ABORTED = 2).
  CHECK(img.pages[0][1] == ((1u << 2) | (1u << 4) | (2u << 6)));
  CHECK(img.pages[0][2] == (3u << 2));  // xid 9 SUB_COMMITTED
  CHECK(img.pages[0][0] == 0);
  CHECK(clog.get_status(me, Xid{5}) == XidStatus::kCommitted);
  CHECK(clog.get_status(me, Xid{7}) == XidStatus::kAborted);
  CHECK(clog.get_status(me, Xid{8}) == XidStatus::kInProgress);
  CHECK(clog.get_status(me, Xid{9}) == XidStatus::kSubCommitted);
  CHECK(img.status(Xid{6}) == XidStatus::kCommitted);
  // SUB_COMMITTED -> COMMITTED is a legal transition (C1).
  clog.set_tree_status(s, me, kInvalidXid, std::vector<Xid>{Xid{9}}, XidStatus::kCommitted,
                       kInvalidLsn);
  CHECK(clog.get_status(me, Xid{9}) == XidStatus::kCommitted);
}

TEST_CASE("CLOG page boundary at 32768: ExtendCLOG zeroes the next page", "[clog]") {
  ProcTable<P> procs(1, 1);
  Proc<P>& me = procs[0];
  Clog<P> clog(procs, 4);
  clog.extend(me, Xid{32767});  // not the first xid of a page: nothing
  CHECK(clog.latest_page() == 0);
  clog.extend(me, Xid{32768});
  CHECK(clog.latest_page() == 1);
  commit(clog, me, Xid{32767});
  commit(clog, me, Xid{32768});
  const ClogImage img = clog.image();
  REQUIRE(img.pages.size() == 2);
  CHECK(img.pages[0][8191] == (1u << 6));  // last xid of page 0: byte 8191, bits 6-7
  CHECK(img.pages[1][0] == 1u);            // first xid of page 1: byte 0, bits 0-1
  CHECK(clog.counters().page_zeroes == 2);
}

TEST_CASE("CLOG tree status order across pages (TransactionIdSetTreeStatus)", "[clog]") {
  ProcTable<P> procs(1, 1);
  Proc<P>& me = procs[0];
  Clog<P> clog(procs, 4);
  extend_to(clog, me, Xid{65536});
  std::vector<std::pair<Xid, XidStatus>> trace;
  clog.trace = &trace;
  LockingStrategy s{clog, {}};
  const std::vector<Xid> subs = {Xid{32766}, Xid{32767}, Xid{32768}, Xid{32769}, Xid{65536}};

  SECTION("all on one page: one page step, subxids SUB_COMMITTED, parent, subxids") {
    const std::vector<Xid> same = {Xid{101}, Xid{102}};
    clog.set_tree_status(s, me, Xid{100}, same, XidStatus::kCommitted, kInvalidLsn);
    REQUIRE(s.calls.size() == 1);
    CHECK(s.calls[0] == std::make_pair(0u, true));
    const std::vector<std::pair<Xid, XidStatus>> want = {
        {Xid{101}, XidStatus::kSubCommitted}, {Xid{102}, XidStatus::kSubCommitted},
        {Xid{100}, XidStatus::kCommitted},    {Xid{101}, XidStatus::kCommitted},
        {Xid{102}, XidStatus::kCommitted}};
    CHECK(trace == want);
  }
  SECTION("spanning three pages: other pages subcommitted first, parent's page, then the rest") {
    clog.set_tree_status(s, me, Xid{32765}, subs, XidStatus::kCommitted, kInvalidLsn);
    // Page steps: page 1 and 2 SUB_COMMITTED, page 0 (parent, not all on one page), 1, 2.
    const std::vector<std::pair<uint32_t, bool>> calls = {
        {1, false}, {2, false}, {0, false}, {1, false}, {2, false}};
    CHECK(s.calls == calls);
    const std::vector<std::pair<Xid, XidStatus>> want = {
        {Xid{32768}, XidStatus::kSubCommitted}, {Xid{32769}, XidStatus::kSubCommitted},
        {Xid{65536}, XidStatus::kSubCommitted},
        // the parent's page: its subxids subcommitted, the parent, the subxids
        {Xid{32766}, XidStatus::kSubCommitted}, {Xid{32767}, XidStatus::kSubCommitted},
        {Xid{32765}, XidStatus::kCommitted},    {Xid{32766}, XidStatus::kCommitted},
        {Xid{32767}, XidStatus::kCommitted},
        // the other pages
        {Xid{32768}, XidStatus::kCommitted},    {Xid{32769}, XidStatus::kCommitted},
        {Xid{65536}, XidStatus::kCommitted}};
    CHECK(trace == want);
    clog.trace = nullptr;
    for (Xid x : subs) CHECK(clog.get_status(me, x) == XidStatus::kCommitted);
    CHECK(clog.get_status(me, Xid{32765}) == XidStatus::kCommitted);
    CHECK(clog.get_status(me, Xid{32770}) == XidStatus::kInProgress);
  }
  SECTION("an abort spanning pages is not subcommitted first") {
    clog.set_tree_status(s, me, Xid{32765}, subs, XidStatus::kAborted, kInvalidLsn);
    CHECK(s.calls.size() == 3);
    for (const auto& [x, st] : trace) CHECK(st == XidStatus::kAborted);
  }
  clog.trace = nullptr;
}

TEST_CASE("CLOG LRU eviction writes back dirty pages and reads them again", "[clog]") {
  ProcTable<P> procs(1, 1);
  Proc<P>& me = procs[0];
  Clog<P> clog(procs, 2, /*page_size=*/16);  // 64 xids per page, 2 buffers
  const uint32_t per = clog.geometry().xacts_per_page();
  REQUIRE(per == 64);
  // Ten pages, one committed xid on each, committed while the page is the latest.
  for (uint32_t p = 0; p < 10; ++p) {
    if (p > 0) clog.extend(me, Xid{p * per});
    commit(clog, me, Xid{p * per + 7});
  }
  const ClogCounters c1 = clog.counters();
  CHECK(c1.page_zeroes == 10);
  CHECK(c1.page_writes >= 8);  // every page but the last two left its buffer dirty
  CHECK(c1.page_reads == 0);
  // Old pages come back from the backing store with their bits.
  for (uint32_t p = 0; p < 10; ++p) {
    CHECK(clog.get_status(me, Xid{p * per + 7}) == XidStatus::kCommitted);
    CHECK(clog.get_status(me, Xid{p * per + 8}) == XidStatus::kInProgress);
  }
  CHECK(clog.counters().page_reads >= 8);
  // Update an evicted page: read in, modified, written back again on the next eviction.
  commit(clog, me, Xid{2 * per + 9});
  commit(clog, me, Xid{5 * per + 9});
  commit(clog, me, Xid{8 * per + 9});
  CHECK(clog.get_status(me, Xid{2 * per + 9}) == XidStatus::kCommitted);
  const ClogImage img = clog.image();
  REQUIRE(img.pages.size() == 10);
  for (uint32_t p = 0; p < 10; ++p) {
    CHECK(img.status(Xid{p * per + 7}) == XidStatus::kCommitted);
    CHECK(img.status(Xid{p * per + 9}) ==
          (p == 2 || p == 5 || p == 8 ? XidStatus::kCommitted : XidStatus::kInProgress));
  }
}

TEST_CASE("CLOG never evicts the latest page", "[clog]") {
  ProcTable<P> procs(1, 1);
  Proc<P>& me = procs[0];
  Clog<P> clog(procs, 2, 16);
  clog.extend(me, Xid{64});  // latest = page 1; buffers: page 0, page 1
  // Touch page 0 repeatedly so page 1 is the least recently used: still not the victim.
  for (int i = 0; i < 5; ++i) commit(clog, me, Xid{static_cast<uint32_t>(10 + i)});
  clog.extend(me, Xid{128});  // needs a buffer: page 0 must go (C3), not page 1
  const ClogImage img = clog.image();
  CHECK(clog.counters().page_writes == 1);
  CHECK(img.status(Xid{12}) == XidStatus::kCommitted);  // came back from the store
}

TEST_CASE("CLOG flushes WAL up to a page's async-commit LSN before writing it", "[clog]") {
  ProcTable<P> procs(1, 1);
  Proc<P>& me = procs[0];
  Clog<P> clog(procs, 2, 16);
  std::vector<uint64_t> flushed;
  clog.set_flush_hook([](void* ctx, Proc<P>&, Lsn upto) {
    static_cast<std::vector<uint64_t>*>(ctx)->push_back(upto.value);
  }, &flushed);
  commit(clog, me, Xid{3}, {}, Lsn{1000});
  commit(clog, me, Xid{40}, {}, Lsn{3000});  // other LSN group (32 xids each)
  commit(clog, me, Xid{4}, {}, Lsn{2000});   // same group as xid 3: keeps the max
  clog.extend(me, Xid{64});
  clog.extend(me, Xid{128});  // evicts page 0
  REQUIRE(flushed.size() == 1);
  CHECK(flushed[0] == 3000);
  // A synchronously committed page (no LSN) is written without a flush.
  commit(clog, me, Xid{70});
  clog.extend(me, Xid{192});  // evicts page 1
  CHECK(flushed.size() == 1);
  CHECK(clog.counters().wal_flushes == 1);
  CHECK(clog.counters().page_writes == 2);
  // Read back in: the group LSNs start at zero again (SimpleLruZeroLSNs).
  CHECK(clog.get_status(me, Xid{40}) == XidStatus::kCommitted);
}

TEST_CASE("XidGen hands out xids in order, extends the CLOG and fills the Proc", "[clog]") {
  ProcTable<P> procs(2, 1);
  Clog<P> clog(procs, 4, 16);
  XidGen<P> gen(procs);
  Proc<P>& a = procs[0];
  const Xid top = gen.assign(a, &clog, false);
  CHECK(top == kFirstNormalXid);
  CHECK(a.xid.load() == top.value);
  const Xid s1 = gen.assign(a, &clog, true);
  const Xid s2 = gen.assign(a, &clog, true);
  CHECK(s1.value == top.value + 1);
  CHECK(s2.value == top.value + 2);
  CHECK(a.nsubxids.get() == 2);
  CHECK(a.subxids[0].get() == s1.value);
  CHECK(a.subxids[1].get() == s2.value);
  for (int i = 0; i < 70; ++i) gen.assign(procs[1], &clog, false);  // crosses into page 1
  CHECK(clog.latest_page() == 1);
  CHECK(gen.next().value == kFirstNormalXid.value + 73);
  XidGen<P>::end_transaction(a);
  CHECK(a.xid.load() == 0);
  CHECK(a.nsubxids.get() == 0);
  // The subxid cache overflows past 64.
  gen.assign(a, &clog, false);
  for (uint32_t i = 0; i < kMaxCachedSubxids + 1; ++i) gen.assign(a, &clog, true);
  CHECK(a.nsubxids.get() == kMaxCachedSubxids);
  CHECK(a.subxids_overflowed.get() == 1);
}

TEST_CASE("verify_clog accepts a complete CLOG and names the first wrong xid", "[clog]") {
  ProcTable<P> procs(1, 1);
  Proc<P>& me = procs[0];
  Clog<P> clog(procs, 2, 16);
  XidGen<P> gen(procs);
  for (int i = 0; i < 200; ++i) {  // 4 pages, most evicted
    const Xid x = gen.assign(me, &clog, false);
    commit(clog, me, x);
    XidGen<P>::end_transaction(me);
  }
  ClogExpect ex;
  ex.next = gen.next();
  ex.assigned = 200;
  ex.top_level = 200;
  ClogImage img = clog.image();
  const VerifyResult ok = verify_clog(img, ex);
  INFO(ok.error);
  CHECK(ok.ok);
  CHECK(ok.clog_checked);
  CHECK(ok.clog_committed == 200);
  CHECK(ok.clog_xids == 4 * 64);
  CHECK(ok.to_json()["clog"]["committed"] == 200);

  SECTION("a committed xid lost") {
    img.pages[1][3] = 0;  // xids 76..79
    const VerifyResult r = verify_clog(img, ex);
    CHECK_FALSE(r.ok);
    CHECK(r.error == "clog: xid 76 (page 1, byte 3) is IN_PROGRESS; expected COMMITTED");
  }
  SECTION("a bit set on an xid never assigned") {
    img.pages[3][15] |= 0x40;  // xid 255
    const VerifyResult r = verify_clog(img, ex);
    CHECK_FALSE(r.ok);
    CHECK(r.error.find("xid 255") != std::string::npos);
    CHECK(r.error.find("never committed or never assigned") != std::string::npos);
  }
  SECTION("xid 0-2 must stay IN_PROGRESS") {
    img.pages[0][0] = 0x01;
    CHECK_FALSE(verify_clog(img, ex).ok);
  }
  SECTION("a missing page") {
    img.pages[2].clear();
    const VerifyResult r = verify_clog(img, ex);
    CHECK(r.error == "clog: page 2 exists neither in a buffer nor in the backing store");
  }
  SECTION("an xid handed out twice or lost (counts differ)") {
    ex.assigned = 199;
    CHECK(verify_clog(img, ex).error.find("advanced by 200") != std::string::npos);
  }
}

TEST_CASE("CLOG after a history: older pages come from the backing store, all committed", "[clog]") {
  ProcTable<P> procs(1, 1);
  Proc<P>& me = procs[0];
  const Xid first{5 * 64 + 10};  // 64 xids per page: the run starts on page 5
  Clog<P> clog(procs, 2, 16, first);
  XidGen<P> gen(procs, first);
  CHECK(clog.latest_page() == 5);  // the page of the last history xid, in a buffer
  CHECK(clog.get_status(me, Xid{first.value - 1}) == XidStatus::kCommitted);
  CHECK(clog.get_status(me, first) == XidStatus::kInProgress);
  CHECK(clog.counters().page_reads == 0);
  CHECK(clog.get_status(me, Xid{3}) == XidStatus::kCommitted);  // page 0, read in
  CHECK(clog.get_status(me, Xid{2}) == XidStatus::kInProgress);  // xids 0-2 never are
  CHECK(clog.get_status(me, Xid{100}) == XidStatus::kCommitted);  // page 1 evicts page 0
  CHECK(clog.counters().page_reads == 2);
  CHECK(clog.counters().page_writes == 0);  // history pages read in are clean
  for (int i = 0; i < 150; ++i) {  // into page 7, evicting and writing back page 5
    const Xid x = gen.assign(me, &clog, false);
    if (i == 0) CHECK(x == first);
    commit(clog, me, x);
    XidGen<P>::end_transaction(me);
  }
  CHECK(clog.get_status(me, Xid{first.value + 3}) == XidStatus::kCommitted);  // page 5 again
  ClogExpect ex;
  ex.first = first;
  ex.next = gen.next();
  ex.assigned = 150;
  ex.top_level = 150;
  ClogImage img = clog.image();
  CHECK(img.pages[2].empty());  // never read: the backing store's as the history left it
  CHECK(img.status(Xid{150}) == XidStatus::kCommitted);
  const VerifyResult ok = verify_clog(img, ex);
  INFO(ok.error);
  CHECK(ok.ok);
  // The run's xids only (pages 0 and 1 left their buffers clean; page 5's 10 history xids are
  // checked, not counted as committed by the run).
  CHECK(ok.clog_committed == 150);
  CHECK(ok.clog_xids == 3 * 64);  // pages 5, 6 and 7

  SECTION("a history xid lost") {
    img.pages[5][1] = 0;  // xids 324..327
    CHECK(verify_clog(img, ex).error == "clog: xid 324 (page 5, byte 1) is IN_PROGRESS; expected COMMITTED");
  }
  SECTION("a page of the run missing") {
    img.pages[6].clear();
    CHECK(verify_clog(img, ex).error == "clog: page 6 exists neither in a buffer nor in the backing store");
  }
}

TEST_CASE("clog_history_page: history xids COMMITTED, the rest IN_PROGRESS, byte for byte", "[clog]") {
  const ClogGeometry g{16};
  const std::vector<uint8_t> p0 = clog_history_page(g, 0, Xid{9});
  CHECK(p0[0] == 0x40);  // xids 0-2 in progress, 3 committed
  CHECK(p0[1] == 0x55);  // 4-7
  CHECK(p0[2] == 0x01);  // 8 committed, 9- not
  CHECK(p0[3] == 0x00);
  const std::vector<uint8_t> p1 = clog_history_page(g, 1, Xid{1000});
  CHECK(std::all_of(p1.begin(), p1.end(), [](uint8_t b) { return b == 0x55; }));
}

TEST_CASE("CLOG page I/O outside the control lock: readers, committers and evictions race",
          "[clog][threads]") {
  // Eight clients on a tiny SLRU (3 buffers, 64-xid pages) after a history of 40 pages: each
  // looks up random history xids (reads that evict, waits on reads in progress) and commits
  // xids of its own (writes back dirty pages, with the WAL flush hook). Every lookup must find
  // a history xid COMMITTED; the verifier then checks the whole image.
  constexpr uint32_t kClients = 8;
  ProcTable<P> procs(kClients, 7);
  const Xid first{40 * 64 + 5};
  Clog<P> clog(procs, 3, 16, first);
  XidGen<P> gen(procs, first);
  std::atomic<uint64_t> flushes{0};
  clog.set_flush_hook([](void* ctx, Proc<P>&, Lsn) { static_cast<std::atomic<uint64_t>*>(ctx)->fetch_add(1); },
                      &flushes);
  std::atomic<uint32_t> wrong{0};
  std::vector<std::thread> threads;
  for (uint32_t c = 0; c < kClients; ++c)
    threads.emplace_back([&, c] {
      Proc<P>& me = procs[static_cast<int32_t>(c)];
      for (int i = 0; i < 300; ++i) {
        const Xid old{3 + static_cast<uint32_t>(me.next_random() % (first.value - 3))};
        if (clog.get_status(me, old) != XidStatus::kCommitted) wrong.fetch_add(1);
        const Xid x = gen.assign(me, &clog, false);
        commit(clog, me, x, {}, i % 2 ? Lsn{uint64_t(1000 + i)} : kInvalidLsn);
        XidGen<P>::end_transaction(me);
      }
    });
  for (auto& t : threads) t.join();
  CHECK(wrong.load() == 0);
  CHECK(clog.counters().page_reads > 100);
  CHECK(clog.counters().page_writes > 10);
  ClogExpect ex;
  ex.first = first;
  ex.next = gen.next();
  ex.assigned = kClients * 300;
  ex.top_level = kClients * 300;
  const VerifyResult r = verify_clog(clog.image(), ex);
  INFO(r.error);
  CHECK(r.ok);
}

// What is special to lockfree_reserve (the conformance suite covers the rest): the link table of
// the hash_table modes (a link is never lost nor read by the wrong successor, also when the table
// is full or every key collides; the random-swap rule; the 32-bit mode's distance and
// verification word), and next_header's links for records that reach N or more pages past their
// start, including ones larger than the whole buffer ring.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/platform/threads.h"
#include "core/wal/storage.h"
#include "core/wal/verifier.h"
#include "core/wal/wal.h"
#include "strategies/lockfree_reserve/lockfree_reserve.h"
#include "tests/conformance.h"

using namespace walbench;

namespace {

using TP = ThreadsPlatform;
template <bool kOffset>
using Table = PrevLinkTable<TP, kOffset>;

// Counts the spin-wait hints of the code under test: a test waits until a client has observably
// spun (instead of sleeping and hoping it got there). One test at a time uses it.
struct CountingPlatform : ThreadsPlatform {
  static inline std::atomic<uint64_t> spin_delays{0};
  static void spin_delay() {
    spin_delays.fetch_add(1, std::memory_order_relaxed);
    ThreadsPlatform::spin_delay();
  }
};
static_assert(Platform<CountingPlatform>);

uint32_t constant_hash(uint32_t) { return 0; }

// Three hash classes for the swap tests, with a 16-entry table (4 buckets of 4):
//   keys  8..32  -> buckets {0, 2}  ("A": their second bucket has room)
//   keys 40..64  -> buckets {1, 3}  ("B")
//   key  2000    -> buckets {2, 3}  (the predecessor link of the client under test)
//   other keys   -> buckets {0, 1}  (the client's own link: both buckets full of A and B)
uint32_t class_hash(uint32_t key32) {
  if (key32 >= 8 && key32 <= 32) return 0 | (2u << 16);
  if (key32 >= 40 && key32 <= 64) return 1 | (3u << 16);
  if (key32 == 2000) return 2 | (3u << 16);
  return 0 | (1u << 16);
}

template <bool kOffset>
BytePos consume_or_fail(Table<kOffset>& t, uint64_t key) {
  BytePos prev{~uint64_t{0}};
  const bool found = t.try_consume(BytePos{key}, &prev);
  INFO("key " << key);
  REQUIRE(found);
  return prev;
}

}  // namespace

TEST_CASE("murmur finaliser and the 32-bit key", "[lockfree]") {
  CHECK(murmur_fmix32(0) == 0u);
  CHECK(murmur_fmix32(1) == 0x514E28B7u);  // MurmurHash3 fmix32 reference value
  CHECK(murmur_fmix32(0x12345678) == 0xE37CD1BCu);
  CHECK(link_key32(0x1234) == 0x1234u);
  CHECK(link_key32((uint64_t{8} << 32) | 0x108) == 0x100u);  // collides with 0x100 (T5)
}

TEMPLATE_TEST_CASE("link table: insert and consume, only by the right key", "[lockfree]",
                   std::false_type, std::true_type) {
  constexpr bool kOffset = TestType::value;
  Table<kOffset> t(16);
  CHECK(t.occupied() == 0);
  REQUIRE(t.try_insert({BytePos{80}, BytePos{40}}));
  REQUIRE(t.try_insert({BytePos{120}, BytePos{80}}));
  CHECK(t.occupied() == 2);
  BytePos prev;
  CHECK_FALSE(t.try_consume(BytePos{40}, &prev));   // nobody left a link for 40
  CHECK_FALSE(t.try_consume(BytePos{160}, &prev));
  CHECK(consume_or_fail(t, 120) == BytePos{80});
  CHECK_FALSE(t.try_consume(BytePos{120}, &prev));  // consumed once
  CHECK(consume_or_fail(t, 80) == BytePos{40});
  CHECK(t.occupied() == 0);
  // The first link of the WAL has start 0 (a legal value, not "empty").
  REQUIRE(t.try_insert({BytePos{40}, BytePos{0}}));
  CHECK(consume_or_fail(t, 40) == BytePos{0});
}

TEMPLATE_TEST_CASE("link table: full of colliding keys, no link lost or misread", "[lockfree]",
                   std::false_type, std::true_type) {
  constexpr bool kOffset = TestType::value;
  // Every key hashes to the same buckets; capacities below, at and above the 8 candidates.
  for (uint32_t capacity : {2u, 4u, 8u, 16u}) {
    INFO("capacity " << capacity);
    Table<kOffset> t(capacity, &constant_hash);
    const uint32_t fits = std::min(capacity, 8u);
    std::vector<PrevLinkEntry> links;
    for (uint32_t i = 0; i < fits; ++i) {
      const uint64_t start = 1000 + 64 * i;
      links.push_back({BytePos{start + 24 + 8 * i}, BytePos{start}});  // distinct distances
    }
    for (const auto& l : links) REQUIRE(t.try_insert(l));
    CHECK(t.occupied() == fits);
    CHECK_FALSE(t.try_insert({BytePos{99992}, BytePos{99000}}));  // all candidates full
    BytePos prev;
    CHECK_FALSE(t.try_consume(BytePos{99992}, &prev));
    // Consume in a scrambled order: each key gets exactly its own start back.
    for (uint32_t k = 0; k < fits; ++k) {
      const auto& l = links[(k * 5 + 3) % fits];
      CHECK(consume_or_fail(t, l.end.value) == l.start);
      CHECK_FALSE(t.try_consume(l.end, &prev));
    }
    CHECK(t.occupied() == 0);
    // A freed entry is reused.
    REQUIRE(t.try_insert({BytePos{99992}, BytePos{99000}}));
    CHECK(consume_or_fail(t, 99992) == BytePos{99000});
  }
}

TEMPLATE_TEST_CASE("link table: the swap hands back the evicted link, which re-inserts elsewhere",
                   "[lockfree]", std::false_type, std::true_type) {
  constexpr bool kOffset = TestType::value;
  Table<kOffset> t(16, &class_hash);
  for (uint64_t k = 8; k <= 32; k += 8) REQUIRE(t.try_insert({BytePos{k}, BytePos{k - 8}}));
  for (uint64_t k = 40; k <= 64; k += 8) REQUIRE(t.try_insert({BytePos{k}, BytePos{k - 16}}));
  const PrevLinkEntry own{BytePos{1000}, BytePos{992}};
  REQUIRE_FALSE(t.try_insert(own));  // buckets 0 and 1 are full
  const auto c = t.candidates(own.end);
  PrevLinkEntry evicted;
  REQUIRE(t.try_swap(c[1], own, &evicted));
  // Bucket 0 held the A links in order: slot 1 held {16 -> 8}.
  CHECK(evicted.end == BytePos{16});
  CHECK(evicted.start == BytePos{8});
  REQUIRE(t.try_insert(evicted));  // into its second bucket (2)
  PrevLinkEntry l;
  bool in_bucket2 = false;
  for (uint32_t j = 8; j < 12; ++j) in_bucket2 |= t.holds(j, &l) && l.end == BytePos{16};
  CHECK(in_bucket2);
  CHECK(t.occupied() == 9);
  CHECK(consume_or_fail(t, 1000) == BytePos{992});
  for (uint64_t k = 8; k <= 32; k += 8) CHECK(consume_or_fail(t, k) == BytePos{k - 8});
  for (uint64_t k = 40; k <= 64; k += 8) CHECK(consume_or_fail(t, k) == BytePos{k - 16});
  CHECK(t.occupied() == 0);
  // An empty entry cannot be swapped.
  CHECK_FALSE(t.try_swap(0, own, &evicted));
}

TEMPLATE_TEST_CASE("link table: the wait loop swaps at random when its candidates stay full",
                   "[lockfree]", std::false_type, std::true_type) {
  constexpr bool kOffset = TestType::value;
  ProcTable<TP> procs(1, 7);
  Proc<TP>& me = procs[0];
  Table<kOffset> t(16, &class_hash);
  // Our predecessor's link {2000 -> 1900} sits in bucket 2 or 3; A and B fill buckets 0 and 1,
  // so our own link {2100 -> 2000} finds no empty candidate until a swap moves an A or B link.
  REQUIRE(t.try_insert({BytePos{2000}, BytePos{1900}}));
  for (uint64_t k = 8; k <= 32; k += 8) REQUIRE(t.try_insert({BytePos{k}, BytePos{k - 8}}));
  for (uint64_t k = 40; k <= 64; k += 8) REQUIRE(t.try_insert({BytePos{k}, BytePos{k - 16}}));
  const auto o = t.exchange(me, BytePos{2000}, BytePos{2100}, /*consume=*/true);
  CHECK(o.prev == BytePos{1900});
  CHECK(o.waited);
  CHECK(o.swaps >= 1);
  CHECK(me.stats.of(WaitEvent::kPrevLinkWait).acquisitions == 1);
  CHECK(me.stats.of(WaitEvent::kPrevLinkWait).contended == 1);
  CHECK(t.occupied() == 9);  // 8 foreign links + ours: none lost
  CHECK(consume_or_fail(t, 2100) == BytePos{2000});
  for (uint64_t k = 8; k <= 32; k += 8) CHECK(consume_or_fail(t, k) == BytePos{k - 8});
  for (uint64_t k = 40; k <= 64; k += 8) CHECK(consume_or_fail(t, k) == BytePos{k - 16});
  // Same seed, same run: the swap count is deterministic.
  ProcTable<TP> procs2(1, 7);
  Table<kOffset> t2(16, &class_hash);
  REQUIRE(t2.try_insert({BytePos{2000}, BytePos{1900}}));
  for (uint64_t k = 8; k <= 32; k += 8) REQUIRE(t2.try_insert({BytePos{k}, BytePos{k - 8}}));
  for (uint64_t k = 40; k <= 64; k += 8) REQUIRE(t2.try_insert({BytePos{k}, BytePos{k - 16}}));
  CHECK(t2.exchange(procs2[0], BytePos{2000}, BytePos{2100}, true).swaps == o.swaps);
}

TEMPLATE_TEST_CASE("link table: a client whose candidates stay full carries what it swapped out",
                   "[lockfree]", std::false_type, std::true_type) {
  constexpr bool kOffset = TestType::value;
  using CP = CountingPlatform;
  PrevLinkTable<CP, kOffset> t(16, &class_hash);
  // Its predecessor's link lies in bucket 2; eight links of other clients fill both of its own
  // buckets (0 and 1) and have the same candidates, so every swap hands back a link that cannot
  // go anywhere else: the client must keep it, spinning, until a consumer frees an entry.
  REQUIRE(t.try_insert({BytePos{2000}, BytePos{1900}}));
  std::vector<PrevLinkEntry> others;
  for (uint64_t k = 3000; k < 3064; k += 8) {
    others.push_back({BytePos{k}, BytePos{k - 8 - (k % 3) * 8}});
    REQUIRE(t.try_insert(others.back()));
  }
  ProcTable<CP> procs(1, 11);
  typename PrevLinkTable<CP, kOffset>::Outcome o;
  std::atomic<bool> done{false};
  CP::spin_delays.store(0);
  std::thread client([&] {
    o = t.exchange(procs[0], BytePos{2000}, BytePos{2100}, true);
    done = true;
  });
  // Wait until it has spun many times on its full candidates: it cannot finish by itself.
  constexpr uint64_t kSpins = 10000;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (CP::spin_delays.load() < kSpins && std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  REQUIRE(CP::spin_delays.load() >= kSpins);
  CHECK_FALSE(done.load());
  // Consume the other links in whatever order they can be found (one may be in the client's
  // hands at any moment).
  std::vector<bool> consumed(others.size(), false);
  size_t left = others.size();
  while (left > 0) {
    for (size_t i = 0; i < others.size(); ++i) {
      BytePos prev;
      if (consumed[i] || !t.try_consume(others[i].end, &prev)) continue;
      CHECK(prev == others[i].start);
      consumed[i] = true;
      --left;
    }
    std::this_thread::yield();
  }
  client.join();
  CHECK(o.prev == BytePos{1900});
  CHECK(o.waited);
  CHECK(o.swaps >= 1);
  CHECK(procs[0].stats.of(WaitEvent::kPrevLinkWait).spins >= kSpins);
  CHECK(t.occupied() == 1);
  BytePos prev{~uint64_t{0}};
  REQUIRE(t.try_consume(BytePos{2100}, &prev));
  CHECK(prev == BytePos{2000});
}

TEST_CASE("link table, 32-bit mode: the verification word and the distance", "[lockfree]") {
  Table<true> t(4, &constant_hash);
  const uint64_t p1 = 0x100;
  const uint64_t p2 = (uint64_t{8} << 32) | 0x108;  // same key32 as p1 (T5)
  REQUIRE(link_key32(p1) == link_key32(p2));
  REQUIRE(t.try_insert({BytePos{p1}, BytePos{p1 - 40}}));
  BytePos prev;
  CHECK_FALSE(t.try_consume(BytePos{p2}, &prev));  // key32 matches, high word does not
  // A distance close to the largest record (1 GiB) and a position above 4 GiB.
  const uint64_t far = (uint64_t{1} << 30) + 8;
  REQUIRE(t.try_insert({BytePos{p2}, BytePos{p2 - far}}));
  PrevLinkEntry l;
  bool seen = false;
  for (uint32_t j = 0; j < 4; ++j)
    if (t.holds(j, &l) && l.end == BytePos{p2}) {
      seen = true;
      CHECK(l.start == BytePos{p2 - far});  // position rebuilt from key32 ^ hi
    }
  CHECK(seen);
  CHECK(consume_or_fail(t, p2) == BytePos{p2 - far});
  CHECK(consume_or_fail(t, p1) == BytePos{p1 - 40});
  CHECK(t.occupied() == 0);
}

namespace {

// N threads, each always "holding an insertion lock": reserve by fetch_add, then exchange links
// through the table, as LockfreeReserve does. Checks that every start got its predecessor's.
template <bool kOffset>
void threaded_exchange(uint32_t threads, uint32_t capacity, LinkHash hash, uint32_t per_thread) {
  // A waiter's predecessor may be preempted between its fetch_add and its link on a loaded
  // machine: 50x PostgreSQL's NUM_DELAYS (about a minute of 10 ns "microseconds") before the
  // stuck abort, so that only a lost link, not a slow CI machine, ends the test.
  Table<kOffset> t(capacity, hash, SpinDelayParams{10, 50 * kNumDelays});
  ProcTable<TP> procs(threads, 3);
  std::atomic<uint64_t> curr{0};
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> seen(threads);
  std::vector<uint64_t> swaps(threads, 0);
  std::vector<std::thread> ts;
  for (uint32_t i = 0; i < threads; ++i)
    ts.emplace_back([&, i] {
      Proc<TP>& me = procs[static_cast<int32_t>(i)];
      for (uint32_t n = 0; n < per_thread; ++n) {
        const uint64_t size = 8 * (1 + me.next_random() % 512);
        const uint64_t start = curr.fetch_add(size);
        const auto o = t.exchange(me, BytePos{start}, BytePos{start + size}, start != 0);
        seen[i].push_back({start, start != 0 ? o.prev.value : ~uint64_t{0}});
        swaps[i] += o.swaps;
      }
    });
  for (auto& th : ts) th.join();
  std::vector<std::pair<uint64_t, uint64_t>> all;
  for (auto& s : seen) all.insert(all.end(), s.begin(), s.end());
  std::sort(all.begin(), all.end());
  REQUIRE(all.size() == size_t{threads} * per_thread);
  CHECK(all[0].first == 0);
  uint64_t bad = 0;
  for (size_t k = 1; k < all.size(); ++k) bad += all[k].second != all[k - 1].first ? 1 : 0;
  CHECK(bad == 0);
  // Only the last record's link (for a successor that never came) is left.
  CHECK(t.occupied() == 1);
  BytePos prev;
  CHECK(t.try_consume(BytePos{curr.load()}, &prev));
  CHECK(prev == BytePos{all.back().first});
  uint64_t total_swaps = 0;
  for (uint64_t s : swaps) total_swaps += s;
  INFO("swaps " << total_swaps);
  SUCCEED();
}

}  // namespace

TEMPLATE_TEST_CASE("link table under threads: every successor gets its predecessor's start",
                   "[lockfree]", std::false_type, std::true_type) {
  constexpr bool kOffset = TestType::value;
  SECTION("2 x N entries, murmur hash") { threaded_exchange<kOffset>(4, 8, &murmur_fmix32, 10000); }
  SECTION("2 x N entries, every key collides: the 8 candidates are full at N + 1 links") {
    threaded_exchange<kOffset>(8, 16, &constant_hash, 4000);
  }
  SECTION("N = 1: two entries") { threaded_exchange<kOffset>(1, 2, &murmur_fmix32, 2000); }
}

TEST_CASE("next_header: slot and advertise positions match the full conversions", "[lockfree]") {
  using S = LockfreeReserve<TP>;
  for (uint32_t page : {64u, 1024u}) {
    WalGeometry g;
    g.page_size = page;
    g.segment_size = 4 * page;
    for (uint64_t pos = 0; pos < 3 * g.usable_per_segment(); pos += kMaxAlign) {
      const Lsn lsn = g.bytepos_to_lsn(BytePos{pos});
      INFO("page " << page << " pos " << pos);
      const Lsn slot = S::slot_lsn(g, pos, lsn);
      REQUIRE(slot == g.bytepos_to_lsn(BytePos{pos + kRecordPrevOffset}));
      REQUIRE(slot.value % page + 8 <= page);  // N1: never straddles a page
      REQUIRE(S::start_end_lsn(g, pos, lsn) == g.bytepos_to_end_lsn(BytePos{pos}));
    }
  }
}

namespace {

// A single client inserting directly into a Wal: deterministic, and a self-wait would hang.
struct DirectWal {
  using S = LockfreeReserve<TP>;
  WalGeometry g;
  std::unique_ptr<Storage> storage;
  ProcTable<TP> procs{2, 1};  // client 0 and a flusher
  std::unique_ptr<Wal<TP, S>> wal;
  std::vector<uint8_t> buf;
  uint64_t records = 0;

  DirectWal(PrevLink mode, uint32_t buffers) {
    g.page_size = 1024;
    g.segment_size = 8192;
    storage = make_memory_storage(g);
    LockfreeReserveParams p;
    p.prev_link = mode;
    p.locks.num_locks = 8;
    wal = std::make_unique<Wal<TP, S>>(g, buffers, *storage, procs, p);
    buf.resize(70000);
  }
  void insert(uint32_t len) {
    const uint32_t crc =
        build_record(buf.data(), len, Xid{0}, kRmHeap, 0, ClientId{0}, records++);
    wal->insert(procs[0], buf.data(), len, crc);
  }
  uint64_t pos() const { return wal->strategy.reserved_end().value; }
  VerifyResult finish() {
    const Lsn end = g.bytepos_to_end_lsn(wal->strategy.reserved_end());
    wal->write_upto(procs[1], end, true);
    VerifyExpect ex;
    ex.start = g.bytepos_to_lsn(BytePos{0});
    ex.end = end;
    ex.records_per_client = {records};
    ex.total_records = records;
    return verify_wal(*storage, g, ex);
  }
};

}  // namespace

TEST_CASE("next_header: links of records reaching N pages ahead are written after the copy",
          "[lockfree]") {
  DirectWal d(PrevLink::kNextHeader, 4);  // ring = 4 x 1 KiB
  d.insert(100);
  d.insert(5000);  // larger than the ring (Zhou: after the copy)
  CHECK(d.wal->strategy.links_after_copy() == 1);
  d.insert(kMinRecordSize);
  d.insert(65536);  // 16 x the ring
  CHECK(d.wal->strategy.links_after_copy() == 2);
  // Start 8 bytes before a page boundary, then 3100 bytes (< the 4096-byte ring): the record
  // reaches 4 pages past its start page, so writing the link first would wait for itself (N4).
  const uint64_t p = d.pos();
  const Lsn l = d.g.bytepos_to_lsn(BytePos{p + 64});
  const uint64_t next_page = d.g.page_start(l).value + d.g.page_size;
  const uint64_t boundary = d.g.lsn_to_bytepos(Lsn{next_page}).value;
  d.insert(static_cast<uint32_t>(boundary - 8 - p));  // a multiple of 8, >= 56
  REQUIRE(d.pos() == boundary - 8);
  const uint64_t before = d.wal->strategy.links_after_copy();
  d.insert(3100);
  CHECK(d.wal->strategy.links_after_copy() == before + 1);
  for (int i = 0; i < 50; ++i) d.insert(kMinRecordSize + (i * 37) % 900);
  const VerifyResult r = d.finish();
  INFO(r.error);
  CHECK(r.ok);
  CHECK(r.records == d.records);
}

TEST_CASE("every prev_link: records larger than the whole ring get their link", "[lockfree]") {
  for (const char* pl : {"next_header", "hash_table", "hash_table_offset"}) {
    conformance::Variant v{"lockfree_reserve", {{"num_locks", 8}, {"prev_link", pl}}};
    CellSpec spec = conformance::stress_spec(v);  // 4 x 1 KiB ring, records up to 64 KiB
    spec.workload.record_size.min = 4096;         // every message at least the ring
    spec.commit.synchronous_commit = false;
    INFO(conformance::describe(v, spec));
    const conformance::Outcome o = conformance::run_cell(spec, 0.15);
    INFO("verify: " << o.verify.error);
    CHECK(o.txns > 0);
    CHECK(o.verify.ok);
    CHECK(o.verify.records > 0);
  }
}

TEST_CASE("lockfree_reserve is registered with its parameters", "[lockfree]") {
  const StrategyInfo* s = find_strategy("lockfree_reserve");
  REQUIRE(s != nullptr);
  std::vector<std::string> names;
  for (const auto& p : s->params) names.push_back(p.name);
  CHECK(names ==
        std::vector<std::string>{"num_locks", "insertingat", "lock_choice", "xlog", "prev_link"});
  CHECK(s->params.back().default_value == "hash_table");
  CHECK(s->params.front().default_value == 8);
  const auto p = LockfreeReserveParams::from_json(
      {{"num_locks", 128}, {"prev_link", "hash_table_offset"}, {"insertingat", "waitlist"}});
  CHECK(p.locks.num_locks == 128);
  CHECK(p.prev_link == PrevLink::kHashTableOffset);
  CHECK(p.locks.insertingat == VarProtocol::kWaitList);
  CHECK_THROWS_AS(LockfreeReserveParams::from_json({{"prev_link", "nope"}}), std::invalid_argument);
  CHECK_THROWS_AS(LockfreeReserveParams::from_json({{"num_locks", 12}}), std::invalid_argument);
}

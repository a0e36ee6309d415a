// lockfree_reserve: WAL space reserved by one atomic fetch-add; the previous-record link (xl_prev)
// handed from each record to its successor without a lock.
//
// Origin
//   Zhiguo Zhou, "[RFC] Lock-free XLog Reservation from WAL", pgsql-hackers 2025-01-02 (POC on a
//   480-vCPU Sapphire Rapids, NUM_XLOGINSERT_LOCKS raised to 128): PrevBytePos is removed,
//   CurrBytePos becomes atomic and ReserveXLogInsertLocation is one fetch_add; each inserter
//   writes its start into the xl_prev field of the *next* record's header in the WAL buffer and
//   busy-waits until its own header's xl_prev is non-zero.              prev_link "next_header"
//   Yura Sokolov's reply in that thread, "Lock-free XLog Reservation using lock-free
//   hash-table" (2025; rebased Oct 2025): the same fetch_add, but the link goes through a
//   lock-free table PrevLinksHash of 2 x NUM_XLOGINSERT_LOCKS 16-byte entries {end -> start},
//   cuckoo-style with 8 candidate slots (two 4-slot buckets, murmur hash), a random swap when
//   they are all full.                                                    prev_link "hash_table"
//   Its 32-bit mode for platforms without 64-bit atomics: a 32-bit key (pos ^ pos >> 32) plus
//   the high word for verification, and a 32-bit distance start - prev whose low bit locks the
//   entry.                                                         prev_link "hash_table_offset"
//   Facts: PROTOCOLS.md section 4. Neither design was committed (as of mid-2026). Not modelled:
//   XLOG_SWITCH (Zhou keeps the spinlock plus all locks; Sokolov a CAS loop) and startup.
//   The insertion locks themselves (num_locks, insertingat, lock_choice, WaitXLogInsertions-
//   ToFinish with PG 17's logInsertResult exit) are insert_locks' (insertion_locks.h).
//
// Design summary
//   insert_locks serialises two things under the insertpos_lck spinlock: moving CurrBytePos and
//   remembering PrevBytePos for the next record's xl_prev. Moving CurrBytePos alone is a
//   fetch_add; the hard part is xl_prev, which the designs hand over point to point: the record
//   that reserved [start, end) owes `start` to whoever reserves at `end`, and is owed its own
//   xl_prev by whoever reserved just before `start`. next_header uses the successor's header
//   slot in the WAL buffer as the mailbox (no extra shared memory, but it touches the page
//   where the successor will live, so page initialisation and eviction come into play);
//   hash_table uses a small table keyed by the position (no page involvement, but the table can
//   be full or collide). Copying still happens under one of N insertion locks, and flushers
//   still wait on insertingAt exactly as in insert_locks.
//
// Shared state (what protects it)
//   curr_byte_pos_       P::Atomic: end of reserved WAL; changed only by fetch_add (I1)
//   locks_               InsertionLocks<P>: the N insertion LWLocks with insertingAt,
//                        logInsertResult, per-client lock choice (insertion_locks.h)
//   WAL page bytes       next_header: the xl_prev slot of the record at `end` is written by the
//                        predecessor with a P atomic store and read by the successor with P
//                        atomic loads (N1-N5); every other byte as in insert_locks
//   table64_, table32_   PrevLinkTable: lock-free, entries owned through their lock bit (T1-T6)
//   clients_[]           owner-only: advertise cap, last advertised value, counters
//
// Invariants (checks and comments cite them)
//   I1 A client reserves only while holding one insertion lock, by one fetch_add on
//      curr_byte_pos_; a flusher reads curr_byte_pos_ before scanning the locks, so every
//      reservation below what it read belongs to a lock it finds held, or is finished
//      (insertion_locks.h L1).
//   I2 The record at `start` gets, as xl_prev, the start of the record whose fetch_add returned
//      `end == start` for it, i.e. its predecessor in reservation order; the first record
//      (start 0) gets 0. A position is returned by fetch_add once, so each link has exactly one
//      writer and one reader.
//   I3 A client publishes its own link (what its successor waits for) before it waits on
//      anything another inserter may be waiting for: next_header before its own link wait (or,
//      per N4, after its copy, which waits on nothing but older inserters); hash_table before
//      its copy, spinning only for table space (T4).
//   I4 Advertising (L2): while a client has copied nothing, the insertingAt it publishes is at
//      most end_lsn(start) (the cap; get_buffer's proposals are clamped to it), and a
//      next_header client advertises end_lsn(start) before it spins on its own link, so that a
//      flusher or an evicting inserter does not wait for it on a lock whose insertingAt says
//      "unknown" (0) while it waits for its predecessor. Values only grow until release.
//
//   next_header (the slot = the 8 bytes of xl_prev of the record that begins at `end`)
//   N1 The slot is at usable position end + 8 (offsetof(RecordHeader, prev)). With MAXALIGN 8
//      and page usable sizes multiples of 8 it never straddles a page; when the successor's
//      header straddles a page, the slot lies past the next page's header, which
//      bytepos_to_lsn skips. Checked: it fits in its page.
//   N2 A page number is initialised once (initialized_upto_ only grows). The predecessor writes
//      and the successor reads the slot only after get_buffer saw xlblocks == that page's end,
//      i.e. after the zeroing of that initialisation: the initialisation never wipes a written
//      link, and a non-zero value read is the link (pages are zeroed, and a record's LSN is
//      never 0: it lies past a page header).
//   N3 The slot's page P is not recycled (re-initialised for P + N) before the successor has
//      read the link and copied its header over it: recycling needs log_write_result >= end(P),
//      i.e. a wait_insertions result >= end(P) > end_lsn(end) (the slot lies on P past end).
//      Before the successor reserves, the reserved end is `end`, so no result exceeds
//      end_lsn(end). After, the successor holds a lock (I1) whose insertingAt is 0 or at most
//      end_lsn(end) until it has read the link (I4). The same bound covers the predecessor
//      between its get_buffer and its store: it holds its lock with insertingAt <= end_lsn(end).
//   N4 The link is written before the copy only if page(slot) - page(start) < N (N = ring
//      pages): initialising the slot's page then evicts at most page(slot) - N, whose end is
//      <= the start of page(start) <= end_lsn(start) = the writer's advertised insertingAt (I4),
//      so the eviction never waits for the writer itself. Otherwise it is written after the
//      copy, with the cap end_lsn(end) (true: everything is copied), which is >= the end of
//      page(slot) - N when N >= 2 (checked). Zhou's test is "record >= XLOGbuffers x BLCKSZ";
//      the page distance is the exact form: a record shorter than the ring that starts near a
//      page end can also reach N + 1 pages and would wait for itself.
//   N5 Progress: the holder M with the smallest start is never stuck. Its predecessor has
//      released, hence written M's link (I3). Every page M touches (its record's, its
//      successor's slot) needs evictions only of pages ending at or below end_lsn(M's end)
//      (N >= 2), and every other holder started at or after M's end and advertises at least
//      end_lsn(its start) before blocking (I4; get_buffer advertises before it blocks). The
//      WAL writer and flushers hold no insertion lock. By induction every holder finishes.
//      The same bounds hold with wal.buffer_init "lockfree": whoever initialises page Q waits
//      only for the previous lap's page and for insertions below end(Q - N).
//
//   hash_table / hash_table_offset (PrevLinkTable below)
//   T1 Entry ownership. 64-bit: an entry is empty iff value == ~0, and then the lock bit (bit 0)
//      of its key is set. A set key lock bit means the entry is owned (by a consumer removing
//      it, a swapper replacing it, or an inserter filling it after its CAS on value) or empty;
//      only the owner writes key, and value changes only by the inserter's CAS (empty -> start)
//      or by the owner. 32-bit: dist == 0 is empty, an odd dist is owned; only the owner writes
//      key32 and hi. Keys (positions) and distances are multiples of 8, so bit 0 is free.
//   T2 A link is in exactly one entry or in the hands of exactly one client (its inserter
//      before insertion, a swapper after evicting it); every move happens while owning the
//      entry, so a link is neither copied nor dropped; a swapper keeps spinning until it has
//      re-inserted what it evicted.
//   T3 Only the successor removes a link (consume of key == its own start, I2). A client that
//      locked an entry whose key is not its own (the key changed after its read) restores it
//      untouched; the 32-bit mode re-reads key32 and hi after locking (ABA on dist).
//   T4 At most N + 1 links are outstanding (each is consumed by a current lock holder, except
//      the one keyed by the current reserved end) <= 2N = capacity: a free entry always exists,
//      though perhaps not among a link's 8 candidates. Then, with probability 1/128 per round,
//      a random full candidate is swapped out (cuckoo) and the evicted link is re-inserted into
//      its own candidates, so insertion terminates with probability 1.
//   T5 32-bit mode: key32 = low word of (pos ^ pos >> 32), hi = pos >> 32 verifies it (pos is
//      recovered as hi << 32 | (key32 ^ hi)); dist = end - start is even, >= 8 and < 2^32 since
//      a record is at most 1 GiB (checked).
//   T6 A client spins (P::spin_delay) while it holds a link nobody else can see (its own before
//      insertion, an evicted one); only when nothing is pending may it back off with
//      perform_spin_delay, which may sleep, since then nobody depends on it.
//
// Insert
//   1 acquire an insertion lock (lock_choice)
//   2 start = fetch_add(curr_byte_pos_, MAXALIGN(len)); end = start + size       (I1)
//   3 next_header: cap = end_lsn(start); if N4 allows, write start into the slot at end (get_buffer
//     the slot's page, P atomic store); unless start == 0, read the own slot at start; if 0:
//     advertise cap (I4), publish kPrevLinkWait, spin until non-zero.
//     hash_table(_offset): the wait loop: try to consume the link keyed by start; insert
//     {end -> start}; if the candidates are full, 1/128: swap a random one and carry the
//     evicted link; spin / back off (T6); until both are done.
//   4 set xl_prev, finish the CRC; copy (get_buffer may advertise and block)
//   5 next_header, if N4 said "after": cap = end_lsn(end); write start into the slot at end
//   6 ReleaseClearVar(insertingAt := 0)
// Wait (WaitXLogInsertionsToFinish): insertion_locks.h, reserved end = curr_byte_pos_.load().
// Wake paths: a link waiter polls (no semaphore); lock and insertingAt waiters as insert_locks.
// Lock order: insertion lock -> WALBufMappingLock -> (released) -> WALWriteLock, as insert_locks.
//   Nothing else is held while waiting for a link.
// Hazards
//   - Waiting for the link while insertingAt is 0 deadlocks next_header (an evicting
//     predecessor waits for our lock, we wait for its link): hence I4.
//   - Writing the link before the copy when the slot is >= N pages ahead waits for oneself (N4).
//   - The slot word is a P::Atomic overlaid on 8 aligned page bytes (checked): the same bytes
//     are zeroed by page initialisation and overwritten by the successor's copy through
//     P::copy, ordered by xlblocks and by the link read (N2, N3).
//   - Busy-waiting on a descheduled predecessor burns the waiter's time slice: with more
//     clients than cores next_header spins (Zhou's design), the table modes back off (T6).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <new>
#include <source_location>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/locks/spinlock.h"
#include "core/proc.h"
#include "core/wal/format.h"
#include "core/wal/geometry.h"
#include "core/wal/types.h"
#include "core/wal/wal.h"
#include "strategies/insert_locks/insertion_locks.h"
#include "strategies/strategy.h"

namespace walbench {

StrategyInfo lockfree_reserve_info();

enum class PrevLink { kNextHeader, kHashTable, kHashTableOffset };

struct LockfreeReserveParams {
  InsertionLocksParams locks;  // num_locks, insertingat, lock_choice (shared parsing)
  PrevLink prev_link = PrevLink::kHashTable;
  static LockfreeReserveParams from_json(const nlohmann::json& j);
};

// ---------------------------------------------------------------------------------------------
// The link table (hash_table, hash_table_offset).

// A link: the record that reserved [start, end) tells its successor (the record at `end`) that
// its xl_prev is `start`. Keyed by `end`.
struct PrevLinkEntry {
  BytePos end;
  BytePos start;
};

// Murmur-style 32-bit finaliser (the avalanche step of MurmurHash3, written out here).
constexpr uint32_t murmur_fmix32(uint32_t h) {
  h ^= h >> 16;
  h *= 0x85EBCA6Bu;
  h ^= h >> 13;
  h *= 0xC2B2AE35u;
  h ^= h >> 16;
  return h;
}

// The 32-bit key of a position (T5), also what the bucket hash is computed from in both modes.
constexpr uint32_t link_key32(uint64_t pos) { return static_cast<uint32_t>(pos ^ (pos >> 32)); }

using LinkHash = uint32_t (*)(uint32_t key32);

// kOffset = false: 64-bit entries {key = end, value = start}.
// kOffset = true:  32-bit entries {key32, hi, dist = end - start}.
template <class P, bool kOffset>
class PrevLinkTable {
 public:
  static constexpr uint32_t kBucketSlots = 4;  // one 64-byte line of 16-byte entries
  static constexpr uint32_t kCandidates = 8;   // two buckets
  static constexpr uint32_t kSwapOneIn = 128;  // the random-swap probability, 1/128 per round

  // capacity: 2 x num_locks in the strategy (T4), a power of two. hash: bucket hash of key32
  // (tests inject colliding ones).
  explicit PrevLinkTable(uint32_t capacity, LinkHash hash = &murmur_fmix32,
                         SpinDelayParams spin = {})
      : capacity_(capacity),
        buckets_(std::max<uint32_t>(1, capacity / kBucketSlots)),
        hash_(hash),
        spin_(spin),
        lines_(new Line[(capacity + kBucketSlots - 1) / kBucketSlots]) {
    WALBENCH_CHECK(capacity >= 1 && (capacity & (capacity - 1)) == 0, "T4");
  }

  uint32_t capacity() const { return capacity_; }

  // The 8 candidate entries of a key: two 4-slot buckets chosen by the hash (distinct when
  // there are two buckets or more). With fewer than 8 entries, candidates repeat.
  std::array<uint32_t, kCandidates> candidates(BytePos key) const {
    // Powers of two: masks, not divisions (this runs twice per record).
    const uint32_t bucket_mask = buckets_ - 1;
    const uint32_t slot_mask = capacity_ - 1;
    const uint32_t h = hash_(link_key32(key.value));
    const uint32_t b1 = h & bucket_mask;
    uint32_t b2 = (h >> 16) & bucket_mask;
    if (b2 == b1 && buckets_ > 1) b2 = (b1 + 1) & bucket_mask;
    std::array<uint32_t, kCandidates> c{};
    for (uint32_t i = 0; i < kBucketSlots; ++i) {
      c[i] = (b1 * kBucketSlots + i) & slot_mask;
      c[kBucketSlots + i] = (b2 * kBucketSlots + i) & slot_mask;
    }
    return c;
  }

  // Consume: remove the link keyed by `key` if one of its candidates holds it (T3).
  bool try_consume(BytePos key, BytePos* prev) {
    for (const uint32_t j : candidates(key))
      if (consume_at(entry(j), key, prev)) return true;
    return false;
  }

  // Insert into the first empty candidate (T1).
  bool try_insert(const PrevLinkEntry& l) {
    for (const uint32_t j : candidates(l.end))
      if (insert_at(entry(j), l)) return true;
    return false;
  }

  // The swap of the random-swap rule: if entry `slot` holds a link and nobody owns it, put `in`
  // there and hand the link it held back in *evicted (T2). False if empty or owned.
  bool try_swap(uint32_t slot, const PrevLinkEntry& in, PrevLinkEntry* evicted) {
    return swap_at(entry(slot), in, evicted);
  }

  struct Outcome {
    BytePos prev;        // valid when asked to consume
    uint32_t swaps = 0;  // random swaps done
    bool waited = false;
  };

  // The wait loop (PROTOCOLS.md section 4, Sokolov): consume the link keyed by `start` (unless
  // consume is false: the first record), insert {end -> start}, swap at random when the
  // candidates are full, spin and retry (T6). Statistics go to kPrevLinkWait.
  Outcome exchange(Proc<P>& me, BytePos start, BytePos end, bool consume) {
    Outcome o;
    bool have_prev = !consume;
    PrevLinkEntry pending{end, start};
    bool have_pending = true;
    LockStats& st = me.stats.of(WaitEvent::kPrevLinkWait);
    if (!have_prev && try_consume(start, &o.prev)) have_prev = true;
    if (try_insert(pending)) have_pending = false;
    if (have_prev && !have_pending) {
      if (consume) ++st.acquisitions;
      return o;
    }
    o.waited = true;
    ++st.contended;
    const uint64_t t0 = P::now_ns();
    me.set_wait(WaitEvent::kPrevLinkWait);
    SpinDelay<P> delay(me, WaitEvent::kPrevLinkWait, spin_, st, std::source_location::current());
    bool slept = false;
    for (;;) {
      if (have_pending) {
        P::spin_delay();  // T6: somebody depends on `pending`: no sleeping
        ++st.spins;
      } else {
        delay.perform();  // may sleep: perform_spin_delay
        me.set_wait(WaitEvent::kPrevLinkWait);
        slept = true;
      }
      if (!have_prev && try_consume(start, &o.prev)) have_prev = true;
      if (have_pending) {
        if (try_insert(pending)) {
          have_pending = false;
        } else if (me.next_random() % kSwapOneIn == 0) {
          const auto c = candidates(pending.end);
          PrevLinkEntry evicted;
          if (try_swap(c[me.next_random() % kCandidates], pending, &evicted)) {
            ++o.swaps;
            if (!have_prev && evicted.end == start) {  // our own link came back to us (T3)
              o.prev = evicted.start;
              have_prev = true;
              have_pending = false;
            } else {
              pending = evicted;  // T2: ours to re-insert now
            }
          }
        }
      }
      if (have_prev && !have_pending) break;
    }
    if (slept) delay.finish();
    me.clear_wait();
    st.wait_ns += P::now_ns() - t0;
    if (consume) ++st.acquisitions;
    return o;
  }

  // Quiescent inspection (tests): is entry j full, and with which link.
  bool holds(uint32_t j, PrevLinkEntry* l) const {
    const Entry& e = entry(j);
    if constexpr (kOffset) {
      const uint32_t d = e.dist.load();
      if (d == 0) return false;
      const uint64_t hi = e.hi.load();
      const uint64_t pos = hi << 32 | (e.key32.load() ^ static_cast<uint32_t>(hi));
      *l = {BytePos{pos}, BytePos{pos - (d & ~1u)}};
    } else {
      const uint64_t v = e.value.load();
      if (v == kEmpty) return false;
      *l = {BytePos{e.key.load() & ~kLockBit}, BytePos{v}};
    }
    return true;
  }
  uint32_t occupied() const {
    uint32_t n = 0;
    PrevLinkEntry l;
    for (uint32_t j = 0; j < capacity_; ++j) n += holds(j, &l) ? 1 : 0;
    return n;
  }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  static constexpr uint64_t kLockBit = 1;

  struct Entry64 {
    typename P::template Atomic<uint64_t> key{kLockBit};  // T1: empty => locked
    typename P::template Atomic<uint64_t> value{kEmpty};
  };
  struct Entry32 {
    typename P::template Atomic<uint32_t> key32{0};
    typename P::template Atomic<uint32_t> hi{0};
    typename P::template Atomic<uint32_t> dist{0};  // 0 empty, odd owned (T1)
    typename P::template Atomic<uint32_t> pad{0};
  };
  using Entry = std::conditional_t<kOffset, Entry32, Entry64>;
  static_assert(sizeof(Entry) == 16, "16-byte entries, four to a cache line");
  struct alignas(64) Line {
    Entry e[kBucketSlots];
  };

  Entry& entry(uint32_t j) { return lines_[j / kBucketSlots].e[j % kBucketSlots]; }
  const Entry& entry(uint32_t j) const { return lines_[j / kBucketSlots].e[j % kBucketSlots]; }

  static uint32_t distance(const PrevLinkEntry& l) {
    const uint64_t d = l.end.value - l.start.value;
    WALBENCH_CHECK(d != 0 && d < (uint64_t{1} << 32) && (d & 1) == 0, "T5");
    return static_cast<uint32_t>(d);
  }

  bool consume_at(Entry& e, BytePos key, BytePos* prev) {
    if constexpr (kOffset) {
      const uint32_t k32 = link_key32(key.value);
      const uint32_t hi = static_cast<uint32_t>(key.value >> 32);
      if (e.key32.load() != k32 || e.hi.load() != hi) return false;
      uint32_t d = e.dist.load();
      if (d == 0 || (d & 1) != 0) return false;
      if (!e.dist.compare_exchange(d, d | 1)) return false;
      if (e.key32.load() == k32 && e.hi.load() == hi) {  // T3, T5: still ours under the lock
        e.dist.store(0);
        *prev = BytePos{key.value - d};
        return true;
      }
      e.dist.store(d);  // not ours after all: unlock untouched
      return false;
    } else {
      if (e.key.load() != key.value) return false;
      const uint64_t old = e.key.fetch_or(kLockBit);
      if (old == key.value) {  // T3: we own the entry that holds our link
        const uint64_t v = e.value.load();
        WALBENCH_CHECK(v != kEmpty, "T1");
        e.value.store(kEmpty);  // the key stays locked (T1)
        *prev = BytePos{v};
        return true;
      }
      if ((old & kLockBit) == 0) e.key.store(old);  // locked another full entry: restore (T3)
      return false;
    }
  }

  bool insert_at(Entry& e, const PrevLinkEntry& l) {
    if constexpr (kOffset) {
      const uint32_t d = distance(l);
      if (e.dist.load() != 0) return false;
      uint32_t expected = 0;
      if (!e.dist.compare_exchange(expected, 1)) return false;  // claimed and owned (T1)
      e.key32.store(link_key32(l.end.value));
      e.hi.store(static_cast<uint32_t>(l.end.value >> 32));
      e.dist.store(d);  // publish and unlock
      return true;
    } else {
      if (e.value.load() != kEmpty) return false;
      uint64_t expected = kEmpty;
      if (!e.value.compare_exchange(expected, l.start.value)) return false;
      e.key.store(l.end.value);  // T1: the key was locked since it was emptied; publish
      return true;
    }
  }

  bool swap_at(Entry& e, const PrevLinkEntry& in, PrevLinkEntry* evicted) {
    if constexpr (kOffset) {
      const uint32_t din = distance(in);
      uint32_t d = e.dist.load();
      if (d == 0 || (d & 1) != 0) return false;
      if (!e.dist.compare_exchange(d, d | 1)) return false;
      const uint64_t hi = e.hi.load();
      const uint64_t pos = hi << 32 | (e.key32.load() ^ static_cast<uint32_t>(hi));
      *evicted = {BytePos{pos}, BytePos{pos - d}};
      e.key32.store(link_key32(in.end.value));
      e.hi.store(static_cast<uint32_t>(in.end.value >> 32));
      e.dist.store(din);
      return true;
    } else {
      if ((e.key.load() & kLockBit) != 0) return false;
      const uint64_t old = e.key.fetch_or(kLockBit);
      if ((old & kLockBit) != 0) return false;
      const uint64_t v = e.value.load();  // full: an unlocked key means a full entry (T1)
      WALBENCH_CHECK(v != kEmpty, "T1");
      *evicted = {BytePos{old}, BytePos{v}};
      e.value.store(in.start.value);
      e.key.store(in.end.value);
      return true;
    }
  }

  const uint32_t capacity_;
  const uint32_t buckets_;
  const LinkHash hash_;
  const SpinDelayParams spin_;
  std::unique_ptr<Line[]> lines_;
};

// ---------------------------------------------------------------------------------------------
template <class P>
class LockfreeReserve {
 public:
  LockfreeReserve(ProcTable<P>& procs, const LockfreeReserveParams& params)
      : params_(params), locks_(procs, params.locks), clients_(procs.size()) {
    const uint32_t capacity = 2 * params.locks.num_locks;  // T4
    if (params.prev_link == PrevLink::kHashTable)
      table64_ = std::make_unique<PrevLinkTable<P, false>>(capacity);
    else if (params.prev_link == PrevLink::kHashTableOffset)
      table32_ = std::make_unique<PrevLinkTable<P, true>>(capacity);
  }

  BytePos reserved_end() const { return BytePos{curr_byte_pos_.load()}; }

  template <class W>
  typename W::Inserted insert(W& wal, Proc<P>& me, uint8_t* record, uint32_t len,
                              uint32_t payload_crc) {
    ClientState& c = clients_[me.id.value];
    locks_.acquire(me);
    c.last_advertised = Lsn{0};  // ReleaseClearVar left insertingAt at 0

    // ReserveXLogInsertLocation: one fetch_add (I1).
    const uint64_t size = max_align(len);
    const uint64_t start = curr_byte_pos_.fetch_add(size);
    const uint64_t end = start + size;
    const WalGeometry& g = wal.geom();
    const Lsn start_lsn = g.bytepos_to_lsn(BytePos{start});
    const Lsn end_lsn = g.bytepos_to_end_lsn(BytePos{end});

    Lsn prev = kInvalidLsn;  // I2: the first record has none
    bool link_after_copy = false;
    Lsn next_slot{0};
    if (params_.prev_link == PrevLink::kNextHeader) {
      c.cap = start_end_lsn(g, start, start_lsn);  // I4
      // N4: write the successor's link now unless its slot is N pages or more ahead.
      // The start LSN of `end`: end_lsn unless that is a page start (then past the header).
      const bool end_on_boundary = (end_lsn.value & (uint64_t{g.page_size} - 1)) == 0;
      next_slot = slot_lsn(g, end, end_on_boundary ? g.bytepos_to_lsn(BytePos{end}) : end_lsn);
      link_after_copy = g.page_number(next_slot) - g.page_number(start_lsn) >= wal.num_buffers();
      if (!link_after_copy) write_link(wal, me, start_lsn, next_slot);
      if (start != 0) prev = read_own_link(wal, me, c, slot_lsn(g, start, start_lsn));
      c.cap = kMaxLsn;
    } else if (params_.prev_link == PrevLink::kHashTable) {
      const auto o = table64_->exchange(me, BytePos{start}, BytePos{end}, start != 0);
      if (start != 0) prev = g.bytepos_to_lsn(o.prev);
      c.swaps += o.swaps;
    } else {
      const auto o = table32_->exchange(me, BytePos{start}, BytePos{end}, start != 0);
      if (start != 0) prev = g.bytepos_to_lsn(o.prev);
      c.swaps += o.swaps;
    }

    finish_record(record, payload_crc, prev);
    wal.copy_record(me, BytePos{start}, BytePos{end}, record, len);

    if (link_after_copy) {
      WALBENCH_CHECK(wal.num_buffers() >= 2, "N4");
      c.cap = end_lsn;  // N4: everything of ours is copied
      write_link(wal, me, start_lsn, next_slot);
      c.cap = kMaxLsn;
      ++c.links_after_copy;
    }

    locks_.release(me);
    return {start_lsn, end_lsn};
  }

  // WALInsertLockUpdateInsertingAt, clamped to the cap while nothing is copied (I4). Called by
  // Wal::get_buffer before it may block, and by read_own_link before spinning.
  void advertise(Proc<P>& me, Lsn pos) {
    ClientState& c = clients_[me.id.value];
    const Lsn v = std::min(pos, c.cap);
    if (v.value == 0 || v == c.last_advertised) return;  // 0 would say "unknown"; same value
    if (!locks_.holding(me)) return;                      // the WAL writer
    c.last_advertised = v;
    locks_.advertise(me, v);
  }

  // XLogFlush / XLogWrite in the form of the insertingAt protocol's release (core/wal/wal.h
  // "FLUSH AND WRITE REQUESTS"): PG 17's unless insertingat is "waitlist".
  bool logwrt_before_pg17() const { return locks_.logwrt_before_pg17(); }

  // WaitXLogInsertionsToFinish: CurrBytePos is an atomic read (I1).
  template <class W>
  Lsn wait_insertions(W& wal, Proc<P>& me, Lsn upto) {
    return locks_.wait_insertions(me, upto, [&] {
      return wal.geom().bytepos_to_end_lsn(BytePos{curr_byte_pos_.load()});
    });
  }

  // LSN of the xl_prev slot of the record that begins at usable position pos, whose start LSN
  // is pos_lsn (N1). NB: must equal g.bytepos_to_lsn(pos + kRecordPrevOffset); the shortcut
  // applies when the slot lies on pos_lsn's page (no page header in between).
  static Lsn slot_lsn(const WalGeometry& g, uint64_t pos, Lsn pos_lsn) {
    const uint64_t off = pos_lsn.value & (uint64_t{g.page_size} - 1);
    if (off + kRecordPrevOffset + sizeof(uint64_t) <= g.page_size)
      return pos_lsn + kRecordPrevOffset;
    return g.bytepos_to_lsn(BytePos{pos + kRecordPrevOffset});
  }
  // bytepos_to_end_lsn(start) from start's LSN: the page start if start lies right after a
  // page header, else the same LSN.
  static Lsn start_end_lsn(const WalGeometry& g, uint64_t start, Lsn start_lsn) {
    const uint64_t off = start_lsn.value & (uint64_t{g.page_size} - 1);
    if (off > WalGeometry::kLongHeader) return start_lsn;
    return g.bytepos_to_end_lsn(BytePos{start});
  }

  // Counters summed over clients; read only when no client runs (tests).
  uint64_t links_after_copy() const {
    uint64_t n = 0;
    for (const auto& c : clients_) n += c.links_after_copy;
    return n;
  }
  uint64_t swaps() const {
    uint64_t n = 0;
    for (const auto& c : clients_) n += c.swaps;
    return n;
  }

 private:
  using Word = typename P::template Atomic<uint64_t>;
  static_assert(sizeof(Word) == sizeof(uint64_t) && alignof(Word) <= 8,
                "a P::Atomic<uint64_t> must overlay 8 page bytes (xl_prev slot)");

  struct alignas(64) ClientState {
    Lsn cap = kMaxLsn;         // I4: advertise at most this
    Lsn last_advertised{0};    // what our insertingAt holds now (0 after release)
    uint64_t links_after_copy = 0;
    uint64_t swaps = 0;
  };

  template <class W>
  static Word& slot_word(W& wal, Proc<P>& me, Lsn slot) {
    const WalGeometry& g = wal.geom();
    WALBENCH_CHECK((slot.value & (uint64_t{g.page_size} - 1)) + sizeof(uint64_t) <= g.page_size,
                   "N1");
    uint8_t* p = wal.get_buffer(me, slot);  // N2: initialised, and stays so (N3)
    WALBENCH_CHECK(reinterpret_cast<uintptr_t>(p) % alignof(uint64_t) == 0, "N1");
    return *std::launder(reinterpret_cast<Word*>(p));
  }

  // Write our start into the xl_prev slot of the record that will begin at our end.
  template <class W>
  void write_link(W& wal, Proc<P>& me, Lsn start_lsn, Lsn next_slot) {
    slot_word(wal, me, next_slot).store(start_lsn.value);
  }

  // Zhou's busy-wait: read our own slot until the predecessor has written it (N2, N5).
  template <class W>
  Lsn read_own_link(W& wal, Proc<P>& me, ClientState& c, Lsn own_slot) {
    Word& w = slot_word(wal, me, own_slot);
    LockStats& st = me.stats.of(WaitEvent::kPrevLinkWait);
    uint64_t v = w.load();
    if (v == 0) {
      advertise(me, c.cap);  // I4: before spinning, never "unknown"
      ++st.contended;
      const uint64_t t0 = P::now_ns();
      me.set_wait(WaitEvent::kPrevLinkWait);
      while ((v = w.load()) == 0) {
        P::spin_delay();
        ++st.spins;
      }
      me.clear_wait();
      st.wait_ns += P::now_ns() - t0;
    }
    ++st.acquisitions;
    return Lsn{v};
  }

  const LockfreeReserveParams params_;
  alignas(128) typename P::template Atomic<uint64_t> curr_byte_pos_{0};
  alignas(128) InsertionLocks<P> locks_;
  std::unique_ptr<PrevLinkTable<P, false>> table64_;
  std::unique_ptr<PrevLinkTable<P, true>> table32_;
  std::vector<ClientState> clients_;
};

}  // namespace walbench

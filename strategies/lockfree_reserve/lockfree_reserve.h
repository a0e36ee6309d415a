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
//   (curr_byte_pos_ is FetchAddReservation's, the link table, cap and counters PrevLinks'; both
//   in prev_link.h, shared with link_buf)
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
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/proc.h"
#include "core/wal/format.h"
#include "core/wal/geometry.h"
#include "core/wal/types.h"
#include "core/wal/wal.h"
#include "strategies/insert_locks/insertion_locks.h"
#include "strategies/lockfree_reserve/prev_link.h"  // PrevLink, PrevLinkTable, PrevLinks, ...
#include "strategies/strategy.h"

namespace walbench {

StrategyInfo lockfree_reserve_info();

struct LockfreeReserveParams {
  InsertionLocksParams locks;  // num_locks, insertingat, lock_choice (shared parsing)
  PrevLink prev_link = PrevLink::kHashTable;
  static LockfreeReserveParams from_json(const nlohmann::json& j);
};

// ---------------------------------------------------------------------------------------------
template <class P>
class LockfreeReserve {
 public:
  LockfreeReserve(ProcTable<P>& procs, const LockfreeReserveParams& params)
      : locks_(procs, params.locks),
        links_(procs.size(), params.prev_link, 2 * params.locks.num_locks),  // T4
        clients_(procs.size()) {}

  BytePos reserved_end() const { return reservation_.reserved_end(); }

  template <class W>
  typename W::Inserted insert(W& wal, Proc<P>& me, uint8_t* record, uint32_t len,
                              uint32_t payload_crc) {
    ClientState& c = clients_[me.id.value];
    locks_.acquire(me);
    c.last_advertised = Lsn{0};  // ReleaseClearVar left insertingAt at 0

    // ReserveXLogInsertLocation: one fetch_add (I1).
    const auto [start, end] = reservation_.reserve(len);
    const WalGeometry& g = wal.geom();
    const Lsn start_lsn = g.bytepos_to_lsn(BytePos{start});
    const Lsn end_lsn = g.bytepos_to_end_lsn(BytePos{end});

    const auto link = links_.before_copy(wal, me, start, end, start_lsn, end_lsn,
                                         [&](Lsn pos) { advertise(me, pos); });
    finish_record(record, payload_crc, link.prev);
    wal.copy_record(me, BytePos{start}, BytePos{end}, record, len);
    links_.after_copy(wal, me, link, start_lsn, end_lsn);

    locks_.release(me);
    return {start_lsn, end_lsn};
  }

  // WALInsertLockUpdateInsertingAt, clamped to the cap while nothing is copied (I4). Called by
  // Wal::get_buffer before it may block, and by read_own_link before spinning.
  void advertise(Proc<P>& me, Lsn pos) {
    ClientState& c = clients_[me.id.value];
    const Lsn v = std::min(pos, links_.cap(me));
    if (v.value == 0 || v == c.last_advertised) return;  // 0 would say "unknown"; same value
    if (!locks_.holding(me)) return;                      // the WAL writer
    c.last_advertised = v;
    locks_.advertise(me, v);
  }

  // XLogFlush / XLogWrite in the form the xlog parameter chooses (core/wal/wal.h "FLUSH AND
  // WRITE REQUESTS"; default: PG 17's unless insertingat is "waitlist").
  bool logwrt_before_pg17() const { return locks_.logwrt_before_pg17(); }

  // WaitXLogInsertionsToFinish: CurrBytePos is an atomic read (I1).
  template <class W>
  Lsn wait_insertions(W& wal, Proc<P>& me, Lsn upto) {
    return locks_.wait_insertions(me, upto, [&] {
      return wal.geom().bytepos_to_end_lsn(reservation_.reserved_end());
    });
  }

  static Lsn slot_lsn(const WalGeometry& g, uint64_t pos, Lsn pos_lsn) {
    return PrevLinks<P>::slot_lsn(g, pos, pos_lsn);
  }
  static Lsn start_end_lsn(const WalGeometry& g, uint64_t start, Lsn start_lsn) {
    return PrevLinks<P>::start_end_lsn(g, start, start_lsn);
  }

  // Counters summed over clients; read only when no client runs (tests).
  uint64_t links_after_copy() const { return links_.links_after_copy(); }
  uint64_t swaps() const { return links_.swaps(); }

 private:
  struct alignas(64) ClientState {  // owner only
    Lsn last_advertised{0};  // what our insertingAt holds now (0 after release)
  };

  alignas(128) FetchAddReservation<P> reservation_;
  alignas(128) InsertionLocks<P> locks_;
  PrevLinks<P> links_;
  std::vector<ClientState> clients_;
};

}  // namespace walbench

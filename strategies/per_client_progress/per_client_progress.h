// per_client_progress: WAL space reserved by one fetch_add; every client publishes how far its own
// insertion got in its own padded slot; WaitXLogInsertionsToFinish is the minimum over the slots.
//
// Origin
//   Taurus: Xia, Yu, Butrovich, Pavlo, Devadas, "Taurus: Lightweight Parallel Logging for
//   In-Memory Database Management Systems", VLDB 2020 (PVLDB 14(2)); code: DBx1000_logging,
//   storage/log.cpp (/work/shared/BEYOND.md section 4; the code itself was not re-read here). Per
//   log stream a worker does lsn = fetch_add(size), copies, and publishes its allocated and its
//   filled position in its own slot; the logger flushes up to the minimum over the workers of
//   allocated-but-unfilled positions. One stream here (PostgreSQL has one WAL), so Taurus's
//   per-transaction LSN vectors across streams, its 512-byte rounding and its block-size /
//   interval flush trigger do not apply: flushing is PostgreSQL's (core/wal/wal.h).
//   xl_prev: Taurus has no back link; PostgreSQL's format needs one, so the record that reserved
//   [start, end) hands `start` to the record at `end` through lockfree_reserve's link table
//   (PrevLinkTable, Sokolov's hash table; strategies/lockfree_reserve/lockfree_reserve.h T1-T6),
//   used as it is.                                   prev_link "hash_table" / "hash_table_offset"
//
// What it replaces in PostgreSQL's path (xlog.c XLogInsertRecord)
//   ReserveXLogInsertLocation under insertpos_lck   -> fetch_add on CurrBytePos (no PrevBytePos)
//   PrevBytePos                                     -> the link table (lockfree_reserve)
//   WALInsertLockAcquire / the copy under 1 of N locks -> no lock: the copy is unsynchronised
//   insertingAt, one per insertion lock             -> progress_, one slot per client
//   WALInsertLockUpdateInsertingAt                  -> a release store into the own slot
//   WALInsertLockRelease (ReleaseClearVar)          -> slot := kIdle
//   WaitXLogInsertionsToFinish (WaitForVar per lock)-> a scan of the client slots, polling with
//                                                      perform_spin_delay on a slot below upto
//   logInsertResult (PG 17): kept, with its early exit and monotonic advance
//   (InsertionLocks<P>::monotonic_advance), so that the comparison with insert_locks "atomic"
//   and lockfree_reserve differs in the completion tracking and in how a flusher waits: here it
//   polls with perform_spin_delay (sleeps from 1 ms, growing), where insert_locks' flushers
//   sleep on the lock's semaphore and are woken; under oversubscription that adds milliseconds
//   to commits, so part of a difference between them is the wait policy, not the structure.
//
// Composition
//   Reservation: lockfree_reserve's (one fetch_add on curr_byte_pos_). Prev link: lockfree_reserve's
//   PrevLinkTable, the same exchange() call. Completion tracking: this file (P1-P5). Compared with
//   lockfree_reserve it differs only there: no insertion locks, so the link table is sized by the
//   number of clients instead of 2 x num_locks (T4 needs room for every concurrent inserter + 1).
//   prev_link "next_header" is not offered: its proofs (lockfree_reserve N3-N5) rest on the
//   insertion lock's capped insertingAt (I4) and its helpers are private to LockfreeReserve.
//
// Shared state (what protects it)
//   curr_byte_pos_   P::Atomic: end of reserved WAL; changed only by fetch_add
//   progress_[c]     P::Atomic, one 128-byte line per client: written only by client c (release
//                    stores), read by every waiter (seq_cst loads). kIdle or an LSN (P1)
//   table64_/32_     PrevLinkTable (lockfree_reserve.h T1-T6)
//   log_insert_result_  atomic, only grows (PG 17 logInsertResult)
//   clients_[c]      owner-only: the end LSN of c's previous record (its next announcement)
//
// Invariants (checks and comments cite them)
//   P1 Encoding. progress_[c] == kIdle (~0) iff client c has no insertion in progress: as the
//      largest value it is neutral in the minimum, so an idle client never holds the horizon
//      back. Any other value v promises: every byte c has reserved, or will reserve before it
//      stores kIdle again, that is not copied yet lies at or above v. v takes, in order, the
//      announcement (the end LSN of c's previous record, 0 before the first), the allocated
//      position (end_lsn(start), Taurus's "allocated"), then each position get_buffer
//      advertises (Taurus's "filled"; only growing), and kIdle once the copy is done.
//   P2 Announce before reserving. c stores its announcement before its fetch_add, and the
//      announcement is <= any start the fetch_add can return (curr_byte_pos_ only grows, and it
//      was >= c's previous end when c reserved that). This is the per-client form of
//      insertion_locks.h L1 ("read CurrBytePos, then scan"): there a client reserves only while
//      holding a lock, so a flusher that reads CurrBytePos first and then scans the locks finds
//      every reservation below what it read under a held lock. Here a flusher reads
//      curr_byte_pos_ first and then scans the slots; a reservation whose start lies below the
//      value read was a fetch_add earlier in curr_byte_pos_'s modification order, hence after
//      the announcement in c's program order; the flusher's load synchronises with that
//      fetch_add (every write to curr_byte_pos_ is an RMW: one release sequence), so its scan
//      sees the announcement or a later value of c's slot, never the kIdle of before. Without
//      the announcement, the window between fetch_add and the store of the allocated position
//      would let the flusher see kIdle and return a horizon above an uncopied record.
//      (Modelled and tested: per_client_progress_test.cc, "a reservation between fetch_add and
//      its publication".)
//   P3 wait_insertions(upto) returns p >= min(upto, reserved end) with every insertion below p
//      finished: it reads the reserved end R, clamps upto, waits on every slot below upto until
//      it is >= upto or kIdle, and returns min(R, the slots' values after the wait) (P1, P2).
//      A later insertion of a slot's client announces at least its previous end, so a slot
//      re-read below upto only makes the scan wait (safe), never skip.
//   P4 Self-wait. A client that may wait for insertions (get_buffer evicting a page) advertises
//      its position first (P1: everything it has not copied lies at or above it), and the
//      eviction's upto is at most that page's start: it never waits for itself. The WAL writer
//      has no insertion in progress; its advertise is ignored (its slot stays kIdle).
//   P5 Progress. The client M with the smallest non-idle slot value is never stuck: a client in
//      its announcement window waits for nothing before its fetch_add; M's link predecessor
//      published M's link before its copy (lockfree_reserve I3) and the table has room for
//      every concurrent inserter + 1 (capacity = bit_ceil(2 x clients) >= clients + 1, T4);
//      M's get_buffer evictions wait only for slots below M's advertised position. The
//      argument is PostgreSQL's for insertingAt with one lock per client.
//
// Insert
//   1 progress_[me] := announcement (release store)                                      (P2)
//   2 start = fetch_add(curr_byte_pos_, MAXALIGN(len)); end = start + size
//   3 progress_[me] := end_lsn(start)                                  (allocated; P1)
//   4 link exchange: consume the link keyed by start, insert {end -> start} (lockfree_reserve)
//   5 set xl_prev, finish the CRC; copy (get_buffer advertises its position before blocking)
//   6 progress_[me] := kIdle (release: the copied bytes are visible to whoever sees it)
// Wait (WaitXLogInsertionsToFinish)
//   inserted = fetch_add(log_insert_result_, 0); upto <= inserted: return inserted.
//   R = end_lsn(curr_byte_pos_.load()); upto = min(upto, R); for each client slot: while the
//   value is below upto (kIdle is not): perform_spin_delay (may sleep; wait event
//   LWLock:wal_insert, what PostgreSQL shows for this wait). finished = min(R, values);
//   return monotonic_advance(log_insert_result_, finished).
// Wake path: none; the waiter polls (Taurus's logger polls too).
// Lock order: no lock of its own; get_buffer's WALBufMappingLock -> (released) -> WALWriteLock
//   as in every strategy; nothing is held while waiting for a link or for a slot.
// Hazards
//   - The scan costs one line per client (BEYOND.md: "the flusher scans clients (cost grows with
//     clients) instead of NUM_XLOGINSERT_LOCKS locks"); every flusher and every evicting client
//     pays it.
//   - Every client copies at once (no lock bounds it), so more clients than cores spin on links
//     and slots; the table modes back off (lockfree_reserve T6), the flusher with
//     perform_spin_delay.
// Departures: no XLOG_SWITCH (as lockfree_reserve); Taurus's multiple streams are not modelled.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <memory>
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
#include "strategies/lockfree_reserve/lockfree_reserve.h"
#include "strategies/strategy.h"

namespace walbench {

StrategyInfo per_client_progress_info();

struct PerClientProgressParams {
  PrevLink prev_link = PrevLink::kHashTable;  // kHashTable or kHashTableOffset
  // Throws std::invalid_argument naming the strategy on a bad or unsupported value.
  static PerClientProgressParams from_json(const nlohmann::json& j);
};

template <class P>
class PerClientProgress {
 public:
  static constexpr uint64_t kIdle = ~uint64_t{0};  // P1

  PerClientProgress(ProcTable<P>& procs, const PerClientProgressParams& params)
      : params_(params), progress_(procs.size()), clients_(procs.size()) {
    WALBENCH_CHECK(params.prev_link != PrevLink::kNextHeader, "next_header is not offered");
    const uint32_t capacity = std::bit_ceil(std::max<uint32_t>(2, 2 * procs.size()));  // P5, T4
    if (params.prev_link == PrevLink::kHashTable)
      table64_ = std::make_unique<PrevLinkTable<P, false>>(capacity);
    else
      table32_ = std::make_unique<PrevLinkTable<P, true>>(capacity);
  }

  BytePos reserved_end() const { return BytePos{curr_byte_pos_.load()}; }

  template <class W>
  typename W::Inserted insert(W& wal, Proc<P>& me, uint8_t* record, uint32_t len,
                              uint32_t payload_crc) {
    const WalGeometry& g = wal.geom();
    announce(me);
    const uint64_t start = reserve(max_align(len));
    const uint64_t end = start + max_align(len);
    publish_allocated(me, g.bytepos_to_end_lsn(BytePos{start}));

    Lsn prev = kInvalidLsn;  // lockfree_reserve I2: the first record has none
    if (table64_) {
      const auto o = table64_->exchange(me, BytePos{start}, BytePos{end}, start != 0);
      if (start != 0) prev = g.bytepos_to_lsn(o.prev);
    } else {
      const auto o = table32_->exchange(me, BytePos{start}, BytePos{end}, start != 0);
      if (start != 0) prev = g.bytepos_to_lsn(o.prev);
    }

    finish_record(record, payload_crc, prev);
    wal.copy_record(me, BytePos{start}, BytePos{end}, record, len);

    const Lsn end_lsn = g.bytepos_to_end_lsn(BytePos{end});
    finish(me, end_lsn);
    return {g.bytepos_to_lsn(BytePos{start}), end_lsn};
  }

  // The steps of insert, public for the tests that interleave them (P2).
  // 1: the announcement, before the fetch_add (P2).
  void announce(Proc<P>& me) {
    progress_[me.id.value].value.store(clients_[me.id.value].previous_end.value,
                                       std::memory_order_release);
  }
  // 2: ReserveXLogInsertLocation as one fetch_add (lockfree_reserve's reservation).
  uint64_t reserve(uint64_t size) { return curr_byte_pos_.fetch_add(size); }
  // 3: the allocated position (P1).
  void publish_allocated(Proc<P>& me, Lsn start_end_lsn) {
    progress_[me.id.value].value.store(start_end_lsn.value, std::memory_order_release);
  }
  // 6: done; the next announcement is this record's end (P2).
  void finish(Proc<P>& me, Lsn end_lsn) {
    clients_[me.id.value].previous_end = end_lsn;
    progress_[me.id.value].value.store(kIdle, std::memory_order_release);
  }

  // WALInsertLockUpdateInsertingAt for the own slot: called by Wal::get_buffer before it may
  // block (P4). Values only grow; ignored while idle (the WAL writer).
  void advertise(Proc<P>& me, Lsn pos) {
    auto& slot = progress_[me.id.value].value;
    const uint64_t now = slot.load();  // we are the only writer
    if (now == kIdle || pos.value <= now) return;
    slot.store(pos.value, std::memory_order_release);
  }

  // PG 17 surroundings (atomic LogwrtResult), as lockfree_reserve with insertingat "atomic".
  bool logwrt_before_pg17() const { return false; }

  // WaitXLogInsertionsToFinish (P3).
  template <class W>
  Lsn wait_insertions(W& wal, Proc<P>& me, Lsn upto) {
    const uint64_t inserted = log_insert_result_.fetch_add(0);  // read_membarrier (PG 17)
    if (upto.value <= inserted) return Lsn{inserted};

    // P2: the reserved end first, then the scan.
    const Lsn reserved = wal.geom().bytepos_to_end_lsn(BytePos{curr_byte_pos_.load()});
    if (upto > reserved) upto = reserved;

    uint64_t finished = reserved.value;
    for (auto& slot : progress_) {
      uint64_t v = slot.value.load();
      if (v < upto.value) v = wait_for_slot(me, slot.value, upto.value);
      finished = std::min(finished, v);  // kIdle is neutral (P1)
    }
    return Lsn{InsertionLocks<P>::monotonic_advance(log_insert_result_, finished)};
  }

  // Inspection for tests (racy while clients run).
  uint64_t progress_of(uint32_t client) const { return progress_[client].value.load(); }
  uint32_t link_capacity() const {
    return table64_ ? table64_->capacity() : table32_->capacity();
  }
  Lsn log_insert_result() const { return Lsn{log_insert_result_.load()}; }

 private:
  struct alignas(128) Slot {
    typename P::template Atomic<uint64_t> value{kIdle};
  };
  struct alignas(64) ClientState {
    Lsn previous_end{0};  // the announcement (P2); 0 before the first record
  };

  // Poll a slot until it reaches upto or goes idle (P3). perform_spin_delay: may sleep.
  uint64_t wait_for_slot(Proc<P>& me, typename P::template Atomic<uint64_t>& slot,
                         uint64_t upto) {
    LockStats& st = me.stats.of(WaitEvent::kWalInsert);
    ++st.contended;
    const uint64_t t0 = P::now_ns();
    me.set_wait(WaitEvent::kWalInsert);
    SpinDelay<P> delay(me, WaitEvent::kWalInsert, spin_, st,
                       std::source_location::current());
    uint64_t v;
    while ((v = slot.load()) < upto) {
      delay.perform();
      me.set_wait(WaitEvent::kWalInsert);
    }
    delay.finish();
    me.clear_wait();
    st.wait_ns += P::now_ns() - t0;
    return v;
  }

  const PerClientProgressParams params_;
  const SpinDelayParams spin_{};  // PostgreSQL's s_lock.c defaults (SpinDelay keeps a reference)
  alignas(128) typename P::template Atomic<uint64_t> curr_byte_pos_{0};
  alignas(128) typename P::template Atomic<uint64_t> log_insert_result_{0};
  std::vector<Slot> progress_;
  std::unique_ptr<PrevLinkTable<P, false>> table64_;
  std::unique_ptr<PrevLinkTable<P, true>> table32_;
  std::vector<ClientState> clients_;
};

}  // namespace walbench

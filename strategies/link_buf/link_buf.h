// link_buf: WAL space reserved by one fetch_add, records copied with no lock at all, and each
// finished copy published as a link in a ring of atomics indexed by position (MySQL 8.0's
// recent_written Link_buf); the contiguous tail of the links answers WaitXLogInsertionsToFinish.
//
// Origin
//   MySQL 8.0 redo log, WL#10310 "Redo log optimization: dedicated threads and concurrent log
//   buffer" (8.0.11): storage/innobase/log/log0buf.cc (log_buffer_reserve,
//   log_buffer_write, log_buffer_write_completed), include/ut0link_buf.h (Link_buf: add_link,
//   has_space, advance_tail, tail). Facts: /work/shared/BEYOND.md section 2.
//   Who advances the tail: in 8.0.11 only the dedicated log_writer thread followed the links;
//   after Bug#30088404 (a regression report on low-end machines, 2020) user threads advance it
//   too (add_link_advance_tail) and innodb_log_writer_threads ON/OFF was added.
//   InnoDB redo has no back link; xl_prev comes from lockfree_reserve's mechanisms (prev_link.h:
//   next_header, hash_table, hash_table_offset), reused, not copied.
//
// Design summary
//   What it replaces in PostgreSQL's path (xlog.c XLogInsertRecord):
//     ReserveXLogInsertLocation under insertpos_lck  -> one fetch_add (FetchAddReservation)
//     PrevBytePos under insertpos_lck                -> PrevLinks (prev_link parameter)
//     CopyXLogRecordToWAL under an insertion lock    -> the same copy under no lock
//     insertingAt / WALInsertLockUpdateInsertingAt   -> a completion link per finished range
//     WaitXLogInsertionsToFinish's scan of the locks -> the ring's contiguous tail
//   A client that finished copying [start, end) stores `end` into slot (start / 8) % ring_slots.
//   The tail T is the position below which everything is finished: while the slot at T holds a
//   link e > T, T moves to e and the slot is emptied. A slot is reused for position start only
//   when T > start - W (W = 8 x ring_slots, the window of positions the ring covers) and the slot
//   is empty: until then the client waits (ring full). Nothing here scales with the number of
//   inserters except the contention on the tail and the ring's lines.
//
// Shared state (what protects it)
//   reservation_    FetchAddReservation: curr_byte_pos_, moved only by fetch_add (prev_link.h)
//   links_          PrevLinks: the xl_prev handover and its per-client cap (prev_link.h, I2-I4)
//   ring_.tail_     P::Atomic: only grows, moved only by CAS from T to the link found at T (R2)
//   ring_.slots_[]  P::Atomic: 0 (empty) or the end of the finished range starting at a position
//                   p with slot index p / 8 % ring_slots. Written non-zero only by the client that
//                   owns p (R1), emptied only by the client whose CAS moved the tail from p (R2)
//   WAL page bytes  as in lockfree_reserve: a client writes only the range it reserved (and the
//                   next_header slot of its successor)
//   clients_[]      owner-only: the reservation being inserted, how far it is published, counters
//
// Invariants (checks and comments cite them)
//   R1 Each position p carries at most one link: p is the start of a reservation or a position
//      inside it that its owner advertised (chunks, below), both owned by one client. The owner
//      stores the link only when T > p - W and the slot is empty, so the slot's previous
//      occupant (position p - W or earlier laps) was consumed and emptied: no link overwrites
//      another.
//   R2 The tail moves from T only by CAS(T -> e) where e is the link read at T with e > T; the
//      CAS winner empties the slot afterwards. A slot holding e <= T is the previous lap's link
//      not yet emptied (the tail passed it by a CAS from T - W' to e <= T), never a link for T.
//      A link for a later lap (T + W) is stored only once the tail is past T, so a CAS from a
//      stale T fails: the tail never follows a wrong link.
//   R3 Everything below T is copied: a link [p, e) is published after its bytes are copied (and
//      after the next_header link of the successor is written, N4); the tail crosses only
//      published links, contiguously from 0.
//   R4 Progress: the client whose unpublished position is the lowest, M, is never stuck. Its
//      position equals T (everything below is published), so its slot has space. Every page it
//      touches needs evictions only of pages ending at or below what it advertised before
//      blocking (get_buffer advertises; advertising publishes the copied prefix as a chunk, as
//      MySQL publishes each mtr log block), and every tail waiter advances the tail itself.
//      next_header's N3 and N5 carry over with "holds an insertion lock with insertingAt <= x"
//      read as "has published nothing at or beyond x": a client publishes at most its cap (I4).
//   R5 tail_advancer "inserter": a publisher stores its link and then reads the tail (both
//      sequentially consistent); an advancer CASes the tail and then reads the next slot. So
//      either the publisher sees the tail at its position and advances, or the advancer sees
//      the link: no finished link is left behind with nobody to follow it.
//
// Insert (log_buffer_reserve, log_buffer_write, log_buffer_write_completed)
//   1 start, end = fetch_add(curr_byte_pos_, MAXALIGN(len))                 (no lock: I1 form)
//   2 PrevLinks::before_copy: xl_prev from the predecessor, our start to the successor
//   3 finish the CRC; copy (get_buffer may advertise: publish [published, pos) as a chunk, R4)
//   4 PrevLinks::after_copy (next_header's link written after the copy, N4)
//   5 publish [published, end): wait until the slot has space (spin_rounds x spin_delay, then
//     sleep_us sleeps, advancing the tail meanwhile), store end into the slot; "inserter":
//     advance the tail (add_link_advance_tail)
// Wait (WaitXLogInsertionsToFinish(upto))
//   upto = min(upto, reserved end); advance the tail (follow links, R2); until it reaches upto,
//   spin then sleep, advancing it on every round; return the tail (as an end LSN).
//   tail_advancer "waiter": only tail waiters (flushers, the WAL writer, evicting inserters,
//   inserters waiting for ring space) follow links, as 8.0.11's log_writer was the one that
//   needed the tail; "inserter": each publisher also advances (after Bug#30088404).
// Wake paths: none; every waiter polls the tail (spin, then sleep).
// Lock order: no lock of this strategy; the WAL's own locks as in insert_locks. A client waits
//   for ring space or the tail holding nothing (get_buffer advertises with no lock held).
// Departures
//   - Slots are indexed by position / 8 (MAXALIGN units) instead of MySQL's byte LSN: record
//     starts are 8-aligned here, and a chunk's advertised end is rounded down to 8 (advertising
//     less is always true). ring_slots = 131072 covers 1 MiB of WAL, MySQL's default window.
//   - No dedicated log_writer thread: PostgreSQL's processes write WAL themselves (the WAL writer
//     sleeps wal_writer_delay between rounds), so the "dedicated advancer" of 8.0.11 is modelled
//     as "the processes that need the tail advance it" (tail_advancer "waiter"). MySQL's
//     log_buffer_reserve wait for buffer space is PostgreSQL's page eviction here (Wal).
//   - The tail and ring-full waits report as LWLock:wal_insert (PostgreSQL's event for
//     WaitXLogInsertionsToFinish); their counts are also kept per strategy (ring_full_waits).
//   - hash_table modes: up to clients + 1 links are outstanding (no lock bounds them), so the
//     link table has 2 x (number of clients rounded up to a power of two) entries (T4).
// Hazards
//   - A client that published nothing and blocks while older clients wait for it deadlocks:
//     hence get_buffer's advertise publishes the copied prefix, and next_header's cap (I4).
//   - A tiny ring serialises publishing (ring_slots 1: only the oldest may publish).
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/aligned_array.h"
#include "core/proc.h"
#include "core/wal/format.h"
#include "core/wal/geometry.h"
#include "core/wal/types.h"
#include "core/wal/wal.h"
#include "strategies/lockfree_reserve/prev_link.h"
#include "strategies/strategy.h"

namespace walbench {

StrategyInfo link_buf_info();

enum class TailAdvancer { kWaiter, kInserter };

struct LinkBufParams {
  uint32_t ring_slots = 131072;  // power of two; covers 8 x ring_slots bytes of WAL
  TailAdvancer tail_advancer = TailAdvancer::kInserter;
  uint32_t spin_rounds = 100;  // spin_delay rounds before sleeping, in every wait
  uint32_t sleep_us = 20;      // then sleeps of this length (MySQL's ring-full wait: 20 us)
  PrevLink prev_link = PrevLink::kHashTable;
  static LinkBufParams from_json(const nlohmann::json& j);
};

// The spin-then-sleep wait of the ring-full and tail waits, accounted to one wait event.
template <class P>
class PollWait {
 public:
  PollWait(Proc<P>& me, const LinkBufParams& params)
      : me_(me), params_(params), st_(me.stats.of(WaitEvent::kWalInsert)), t0_(P::now_ns()) {
    ++st_.contended;
    me_.set_wait(WaitEvent::kWalInsert);
  }
  ~PollWait() {
    me_.clear_wait();
    st_.wait_ns += P::now_ns() - t0_;
  }
  void round() {
    if (spins_ < params_.spin_rounds || params_.sleep_us == 0) {
      ++spins_;
      ++st_.spins;
      P::spin_delay();
    } else {
      P::sleep_ns(uint64_t{params_.sleep_us} * 1000);
    }
  }

 private:
  Proc<P>& me_;
  const LinkBufParams& params_;
  LockStats& st_;
  const uint64_t t0_;
  uint32_t spins_ = 0;
};

// Link_buf (ut0link_buf.h) over usable byte positions: the ring of completion links and its
// tail (R1, R2, R5).
template <class P>
class LinkRing {
 public:
  explicit LinkRing(uint32_t slots)
      : mask_(slots - 1),
        window_(uint64_t{slots} * kMaxAlign),
        slots_(make_aligned_array<Slot>(slots)) {
    WALBENCH_CHECK(slots >= 1 && std::has_single_bit(slots), "ring_slots");
  }

  uint64_t window() const { return window_; }
  uint64_t tail() const { return tail_.load(); }

  // has_space: the slot of p may take p's link (R1).
  bool has_space(uint64_t p) const {
    return tail_.load() + window_ > p && slot(p).load() == 0;
  }

  // add_link: p's owner publishes [p, e); has_space(p) must hold (R1).
  void add_link(uint64_t p, uint64_t e) {
    WALBENCH_CHECK(e > p && (p % kMaxAlign) == 0, "R1");
    slot(p).store(e);  // seq_cst: after the copy (R3), before the tail read of R5
  }

  // advance_tail: follow links from the tail (R2); returns the tail reached.
  uint64_t advance() {
    uint64_t t = tail_.load();
    for (;;) {
      Word& s = slot(t);
      const uint64_t e = s.load();
      if (e <= t) return t;  // empty, or the previous lap's link not yet emptied (R2)
      if (tail_.compare_exchange(t, e)) {
        s.store(0);  // R2: only the CAS winner empties
        t = e;
      }  // else t is the tail another advancer moved it to
    }
  }

  // Quiescent inspection (tests): the link stored for p's slot (0 = empty).
  uint64_t link_at(uint64_t p) const { return slot(p).load(); }

 private:
  using Word = typename P::template Atomic<uint64_t>;
  struct Slot {
    Word end{0};
  };
  Word& slot(uint64_t p) { return slots_[(p / kMaxAlign) & mask_].end; }
  const Word& slot(uint64_t p) const { return slots_[(p / kMaxAlign) & mask_].end; }

  const uint64_t mask_;
  const uint64_t window_;
  alignas(128) Word tail_{0};
  AlignedArray<Slot> slots_;  // from a line boundary: the sim's lines are addresses
};

template <class P>
class LinkBuf {
 public:
  LinkBuf(ProcTable<P>& procs, const LinkBufParams& params)
      : params_(params),
        links_(procs.size(), params.prev_link, 2 * std::bit_ceil(procs.size())),  // T4
        ring_(params.ring_slots),
        clients_(procs.size()) {}

  BytePos reserved_end() const { return reservation_.reserved_end(); }

  template <class W>
  typename W::Inserted insert(W& wal, Proc<P>& me, uint8_t* record, uint32_t len,
                              uint32_t payload_crc) {
    ClientState& c = clients_[me.id.value];
    const auto [start, end] = reservation_.reserve(len);  // log_buffer_reserve
    c.published = start;
    c.end = end;
    c.geom = &wal.geom();
    c.inserting = true;
    const WalGeometry& g = wal.geom();
    const Lsn start_lsn = g.bytepos_to_lsn(BytePos{start});
    const Lsn end_lsn = g.bytepos_to_end_lsn(BytePos{end});

    const auto link = links_.before_copy(wal, me, start, end, start_lsn, end_lsn,
                                         [&](Lsn pos) { advertise(me, pos); });
    finish_record(record, payload_crc, link.prev);
    wal.copy_record(me, BytePos{start}, BytePos{end}, record, len);  // log_buffer_write
    links_.after_copy(wal, me, link, start_lsn, end_lsn);

    // log_buffer_write_completed; an advertise after the copy (N4) may have published it all.
    if (c.published < end) publish(me, c, end);
    c.inserting = false;
    return {start_lsn, end_lsn};
  }

  // Called by Wal::get_buffer before it may block ("everything I reserved before pos is
  // copied") and by PrevLinks before a link wait: publish the copied prefix as a chunk (R4),
  // never beyond the cap (I4).
  void advertise(Proc<P>& me, Lsn pos) {
    ClientState& c = clients_[me.id.value];
    if (!c.inserting) return;  // the WAL writer, or a client between records
    const Lsn v = std::min(pos, links_.cap(me));
    if (v.value == 0) return;
    const uint64_t copied = c.geom->lsn_to_bytepos(v).value & ~(kMaxAlign - 1);
    const uint64_t upto = std::min(c.end, copied);
    if (upto <= c.published) return;
    publish(me, c, upto);
    ++c.chunks;
  }

  // PostgreSQL 17's XLogFlush / XLogWrite form (no insertion locks to release the old way).
  bool logwrt_before_pg17() const { return false; }

  // WaitXLogInsertionsToFinish: the contiguous tail of the links.
  template <class W>
  Lsn wait_insertions(W& wal, Proc<P>& me, Lsn upto) {
    const WalGeometry& g = wal.geom();
    upto = std::min(upto, g.bytepos_to_end_lsn(reservation_.reserved_end()));
    const uint64_t target = g.lsn_to_bytepos(upto).value;
    uint64_t t = ring_.advance();
    if (t < target) {
      PollWait<P> wait(me, params_);
      while ((t = ring_.advance()) < target) wait.round();
    }
    // t >= target: everything below upto is finished (bytes between a page start and upto are
    // page header only).
    return std::max(g.bytepos_to_end_lsn(BytePos{t}), upto);
  }

  // Counters summed over clients; read only when no client runs (tests).
  uint64_t ring_full_waits() const {
    uint64_t n = 0;
    for (const auto& c : clients_) n += c.ring_full_waits;
    return n;
  }
  uint64_t chunks() const {
    uint64_t n = 0;
    for (const auto& c : clients_) n += c.chunks;
    return n;
  }
  uint64_t links_after_copy() const { return links_.links_after_copy(); }
  const LinkRing<P>& ring() const { return ring_; }

 private:
  struct alignas(64) ClientState {  // owner only
    bool inserting = false;
    const WalGeometry* geom = nullptr;  // the WAL's, for advertise
    uint64_t published = 0;  // [start, published) of the current record is published
    uint64_t end = 0;        // the current record's reserved end
    uint64_t ring_full_waits = 0;
    uint64_t chunks = 0;     // partial publications (advertise)
  };

  // Publish [c.published, upto) (R1, R5).
  void publish(Proc<P>& me, ClientState& c, uint64_t upto) {
    const uint64_t p = c.published;
    if (!ring_.has_space(p)) {
      ++c.ring_full_waits;
      PollWait<P> wait(me, params_);
      do {
        ring_.advance();  // R4: a ring-full waiter is a tail waiter
        if (ring_.has_space(p)) break;
        wait.round();
      } while (true);
    }
    ring_.add_link(p, upto);
    c.published = upto;
    if (params_.tail_advancer == TailAdvancer::kInserter) ring_.advance();  // R5
  }

  const LinkBufParams params_;
  alignas(128) FetchAddReservation<P> reservation_;
  PrevLinks<P> links_;
  LinkRing<P> ring_;
  std::vector<ClientState> clients_;
};

}  // namespace walbench

// single_lock: one WALInsertLock (PostgreSQL <= 9.3).
//
// Origin
//   PostgreSQL up to 9.3, xlog.c XLogInsert: one exclusive LWLock WALInsertLock held for the
//   whole insertion (PROTOCOLS.md section 1, first part); replaced in 9.4 by 9a20a9b21b /
//   68a2e52bba ("Moving more work outside WALInsertLock", Heikki Linnakangas). The payload CRC
//   is computed before the lock; the header CRC (which covers xl_prev) under it.
//
// Design summary
//   Everything is serial: reservation, the prev link, the copy and any buffer advance happen
//   under the one lock, so everything below the position the holder has reached is finished.
//   In 9.3 AdvanceXLInsertBuffer ran under WALInsertLock itself; here the common buffer code
//   takes WALBufMappingLock as well, which is uncontended under the insert lock (only the
//   holder advances the ring), so the serialisation is the same.
//
// Shared state (what protects it)
//   insert_lock_                    LWLock WALInsertLock, exclusive
//   curr_byte_pos_, prev_byte_pos_  protected by insert_lock_
//   finished_upto_                  atomic end LSN of the last completely copied record; written
//                                   by the holder before release, read by flushers
//   holder_progress_                protected by insert_lock_: where the holder's copy has got
//                                   (advertised before it may block on a page)
//
// Invariants
//   I1 finished_upto_ only grows (records are copied one at a time, in order).
//   I2 Everything below holder_progress_ (while held) or finished_upto_ is copied.
//
// Insert: acquire WALInsertLock; reserve; set xl_prev and finish the CRC; copy (may advance and
//   evict buffer pages, writing under WALWriteLock while holding WALInsertLock, as 9.3 did);
//   publish finished_upto_; release.
// Wait (wait_insertions): the holder itself (evicting a page it needs) returns its own
//   progress; anyone else returns finished_upto_ if that suffices, else takes the lock shared
//   (waits for the holder to finish) and reads the insert position (9.3's XLogFlush read the
//   insert pointer under WALInsertLock).
// Wake path: LWLock release (core/locks/lwlock.h).
// Lock order: WALInsertLock -> WALBufMappingLock -> WALWriteLock.
// Hazards: a flusher must never wait for WALInsertLock while holding WALWriteLock (the holder
//   may need WALWriteLock to evict); Wal::flush calls wait_insertions before taking it.
#pragma once

#include <cstdint>
#include <vector>

#include "core/locks/lwlock.h"
#include "core/proc.h"
#include "core/wal/format.h"
#include "core/wal/types.h"
#include "strategies/strategy.h"

namespace walbench {

StrategyInfo single_lock_info();

template <class P>
class SingleLock {
 public:
  explicit SingleLock(ProcTable<P>& procs)
      : insert_lock_(&procs, WaitEvent::kWalInsert), holding_(procs.size()) {}

  BytePos reserved_end() const { return BytePos{curr_byte_pos_.get()}; }

  template <class W>
  typename W::Inserted insert(W& wal, Proc<P>& me, uint8_t* record, uint32_t len,
                              uint32_t payload_crc) {
    insert_lock_.acquire(me, kLwExclusive);
    holding_[me.id.value].flag = true;
    const uint64_t start = curr_byte_pos_.get();
    const uint64_t end = start + max_align(len);
    const uint64_t prev = prev_byte_pos_.get();
    curr_byte_pos_.set(end);
    prev_byte_pos_.set(start);
    const WalGeometry& g = wal.geom();
    const Lsn start_lsn = g.bytepos_to_lsn(BytePos{start});
    holder_progress_.set(start_lsn.value);
    finish_record(record, payload_crc,
                  prev == kNoPrev ? kInvalidLsn : g.bytepos_to_lsn(BytePos{prev}));
    wal.copy_record(me, BytePos{start}, BytePos{end}, record, len);
    const Lsn end_lsn = g.bytepos_to_end_lsn(BytePos{end});
    finished_upto_.store(end_lsn.value);  // I1
    holding_[me.id.value].flag = false;
    insert_lock_.release(me);
    return {start_lsn, end_lsn};
  }

  void advertise(Proc<P>& me, Lsn pos) {
    if (holding_[me.id.value].flag) holder_progress_.set(pos.value);
  }

  // <= 9.3's XLogFlush and XLogWrite keep LogwrtResult under info_lck, as up to 16
  // (core/wal/wal.h "FLUSH AND WRITE REQUESTS").
  bool logwrt_before_pg17() const { return true; }

  template <class W>
  Lsn wait_insertions(W& wal, Proc<P>& me, Lsn upto) {
    if (holding_[me.id.value].flag) return Lsn{holder_progress_.get()};  // I2
    const uint64_t done = finished_upto_.load();
    if (done >= upto.value) return Lsn{done};
    insert_lock_.acquire(me, kLwShared);
    const Lsn reserved = wal.geom().bytepos_to_end_lsn(BytePos{curr_byte_pos_.get()});
    insert_lock_.release(me);
    return reserved;
  }

 private:
  static constexpr uint64_t kNoPrev = ~uint64_t{0};
  alignas(128) LWLock<P> insert_lock_;
  typename P::template Shared<uint64_t> curr_byte_pos_{0};
  typename P::template Shared<uint64_t> prev_byte_pos_{kNoPrev};
  typename P::template Shared<uint64_t> holder_progress_{0};
  alignas(128) typename P::template Atomic<uint64_t> finished_upto_{0};
  struct alignas(64) Holding {
    bool flag = false;
  };
  std::vector<Holding> holding_;  // owner-only flag per client
};

}  // namespace walbench

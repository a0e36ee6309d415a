// The shared WAL model (PostgreSQL's XLogCtl): the buffer ring, page initialisation and eviction,
// copying records into pages, the writer and flush with group commit.
//
// Origin: PostgreSQL access/transam/xlog.c as of 9.4-17 (PROTOCOLS.md section 1):
// CopyXLogRecordToWAL, GetXLogBuffer, AdvanceXLInsertBuffer (WALBufMappingLock, 9a20a9b21b),
// XLogWrite, XLogFlush (group commit through LWLockAcquireOrWait, 9b38d46d9f), XLogBackgroundFlush.
// LogwrtResult is kept in atomics as in 17+ (ee1cbe806d).
//
// The insertion strategy S decides how space is reserved and how insertion progress is known;
// this class calls back into it for exactly two things (NB: every strategy must provide both):
//   S::advertise(me, pos)              "I am about to block at pos; everything I reserved before
//                                       pos is copied" (WALInsertLockUpdateInsertingAt)
//   S::wait_insertions(wal, me, upto)  WaitXLogInsertionsToFinish: returns a position p >= upto
//                                       (clamped to the reserved end) before which every insertion
//                                       has finished.
//
// Shared state and what protects it:
//   pages_[]             page bytes. A page is written by inserters (disjoint byte ranges they
//                        reserved, plus the continuation fields of a page header their record
//                        continues onto) after xlblocks_ says it is initialised; read by the
//                        writer only below a wait_insertions() result.
//   xlblocks_[slot]      atomic: end LSN of the page the slot holds, Invalid (0) while the slot is
//                        being (re)initialised.
//   initialized_upto_    protected by buf_mapping_lock_ (exclusive).
//   logwrt_rqst_write_   protected by info_lck_; async_xact_lsn_ likewise.
//   log_write_result_, log_flush_result_   atomics, advanced only under wal_write_lock_.
//   storage_             written only under wal_write_lock_.
//
// Invariants:
//   I1  A slot is re-initialised only after its old page is written (log_write_result_ >= old end).
//   I2  The writer writes [log_write_result_, upto) only with upto <= a wait_insertions() result.
//   I3  log_write_result_ and log_flush_result_ only grow; flush <= write.
//   I4  The record copy ends exactly at the reserved end (the MAXALIGN padding stays zero).
// Lock order: buf_mapping_lock_ is never held while waiting for insertions or for
// wal_write_lock_ (AdvanceXLInsertBuffer releases it first). wait_insertions() is never called
// with wal_write_lock_ held (inserters may need that lock to evict a page).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "core/locks/lwlock.h"
#include "core/locks/spinlock.h"
#include "core/proc.h"
#include "core/wal/format.h"
#include "core/wal/geometry.h"
#include "core/wal/storage.h"
#include "core/wal/types.h"

namespace walbench {

#define WALBENCH_CHECK(cond, inv)                                                         \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      std::fprintf(stderr, "walbench: invariant %s violated at %s:%d: %s\n", inv, __FILE__, \
                   __LINE__, #cond);                                                      \
      std::abort();                                                                       \
    }                                                                                     \
  } while (0)

// Model-level counters (instrumentation, written under the lock named, read after the run).
struct WalCounters {
  uint64_t writes = 0;            // storage write calls (under WALWriteLock)
  uint64_t fsyncs = 0;            // under WALWriteLock
  uint64_t wal_buffers_full = 0;  // writes forced by a page eviction (pg_stat_wal)
  uint64_t pages_initialised = 0; // under WALBufMappingLock
  uint64_t flush_calls = 0;       // XLogFlush calls that had to do something (racy, approximate)
};

template <class P, class S>
class Wal {
 public:
  template <class... StrategyArgs>
  Wal(const WalGeometry& geom, uint32_t num_buffers, Storage& storage, ProcTable<P>& procs,
      StrategyArgs&&... strategy_args)
      : strategy(procs, std::forward<StrategyArgs>(strategy_args)...),
        geom_(geom),
        num_buffers_(num_buffers),
        pages_(new uint8_t[size_t{num_buffers} * geom.page_size]()),
        zero_page_(new uint8_t[geom.page_size]()),
        xlblocks_(new typename P::template Atomic<uint64_t>[num_buffers]),
        storage_(storage),
        buf_mapping_lock_(&procs, WaitEvent::kWalBufMapping),
        wal_write_lock_(&procs, WaitEvent::kWalWrite),
        info_lck_(WaitEvent::kInfoSpin) {}

  S strategy;

  const WalGeometry& geom() const { return geom_; }
  uint32_t num_buffers() const { return num_buffers_; }
  Storage& storage() { return storage_; }
  const WalCounters& counters() const { return counters_; }
  Lsn log_write_result() const { return Lsn{log_write_result_.load()}; }
  Lsn log_flush_result() const { return Lsn{log_flush_result_.load()}; }

  // Insert one record (header + payload built by build_record, CRC of the payload in
  // payload_crc). Returns where it went.
  struct Inserted {
    Lsn start;
    Lsn end;
  };
  Inserted insert(Proc<P>& me, uint8_t* record, uint32_t len, uint32_t payload_crc) {
    return strategy.insert(*this, me, record, len, payload_crc);
  }

  // CopyXLogRecordToWAL: copy a finished record (prev and CRC set) into the reserved range
  // [start, end) of usable byte positions. Called by strategies with their insertion lock held.
  void copy_record(Proc<P>& me, BytePos start, BytePos end, const uint8_t* record, uint32_t len) {
    Lsn ptr = geom_.bytepos_to_lsn(start);
    uint8_t* dst = get_buffer(me, ptr);
    uint32_t freespace = geom_.page_size - static_cast<uint32_t>(ptr.value % geom_.page_size);
    uint32_t written = 0;
    while (len - written > freespace) {
      P::copy(dst, record + written, freespace);
      written += freespace;
      ptr += freespace;  // now at a page boundary
      dst = get_buffer(me, ptr);
      // The record continues on this page: say so in its header (xlp_rem_len, CONTRECORD).
      const uint32_t rem_len = len - written;
      uint16_t info;
      std::memcpy(&info, dst + offsetof(PageHeader, info), sizeof info);
      info |= kPageFirstIsContRecord;
      P::copy(dst + offsetof(PageHeader, info), &info, sizeof info);
      P::copy(dst + offsetof(PageHeader, rem_len), &rem_len, sizeof rem_len);
      const uint32_t hdr = geom_.header_size(ptr);
      ptr += hdr;
      dst += hdr;
      freespace = geom_.page_size - hdr;
    }
    P::copy(dst, record + written, len - written);
    ptr += len - written;
    // I4: the copy ends where the reservation says (before MAXALIGN padding).
    WALBENCH_CHECK(geom_.lsn_to_bytepos(ptr).value + (max_align(len) - len) == end.value, "I4");
  }

  // GetXLogBuffer: pointer to the byte at ptr in the ring, initialising (and first evicting)
  // the page if the slot does not hold it yet.
  uint8_t* get_buffer(Proc<P>& me, Lsn ptr) {
    const uint64_t page_no = ptr.value / geom_.page_size;
    const uint64_t slot = page_no % num_buffers_;
    const uint64_t expected_end = (page_no + 1) * geom_.page_size;
    if (xlblocks_[slot].load() != expected_end) {
      // Advertise how far we got before possibly blocking (358cde320b: the page start when
      // ptr is just past the header, so a flusher waiting for the previous page proceeds).
      Lsn upto = ptr;
      const uint64_t off = ptr.value % geom_.page_size;
      const uint64_t page_start = ptr.value - off;
      if (off == geom_.header_size(Lsn{page_start})) upto = Lsn{page_start};
      strategy.advertise(me, upto);
      advance_buffer(me, ptr);
      WALBENCH_CHECK(xlblocks_[slot].load() == expected_end, "GetXLogBuffer: page not ready");
    }
    return pages_.get() + slot * geom_.page_size + ptr.value % geom_.page_size;
  }

  // AdvanceXLInsertBuffer(upto, opportunistic=false) under WALBufMappingLock.
  void advance_buffer(Proc<P>& me, Lsn upto) {
    buf_mapping_lock_.acquire(me, kLwExclusive);
    while (upto.value >= initialized_upto_.get()) {
      const uint64_t new_start = initialized_upto_.get();
      const uint64_t slot = (new_start / geom_.page_size) % num_buffers_;
      const uint64_t old_end = xlblocks_[slot].load();
      if (log_write_result_.load() < old_end) {
        // The old page is not written yet: write it out first, without the mapping lock.
        buf_mapping_lock_.release(me);
        raise_write_request(me, Lsn{old_end});
        const Lsn finished = strategy.wait_insertions(*this, me, Lsn{old_end});
        WALBENCH_CHECK(finished.value >= old_end, "I2 (eviction)");
        wal_write_lock_.acquire(me, kLwExclusive);
        if (log_write_result_.load() < old_end) {
          ++counters_.wal_buffers_full;
          write_locked(me, Lsn{old_end}, /*flush=*/false);
        }
        wal_write_lock_.release(me);
        buf_mapping_lock_.acquire(me, kLwExclusive);
        continue;
      }
      // I1 holds: the old page is written. Re-initialise the slot.
      xlblocks_[slot].store(0);
      P::memory_barrier();
      uint8_t* page = pages_.get() + slot * geom_.page_size;
      P::copy(page, zero_page_.get(), geom_.page_size);
      uint8_t header[WalGeometry::kLongHeader] = {};
      init_page_header(header, Lsn{new_start}, geom_);
      P::copy(page, header, geom_.header_size(Lsn{new_start}));
      P::memory_barrier();
      xlblocks_[slot].store(new_start + geom_.page_size);
      initialized_upto_.set(new_start + geom_.page_size);
      ++counters_.pages_initialised;
    }
    buf_mapping_lock_.release(me);
  }

  // XLogFlush(rec): make everything up to rec durable, with group commit.
  void flush(Proc<P>& me, Lsn rec) {
    for (;;) {
      if (log_flush_result_.load() >= rec.value) return;
      const Lsn rqst = raise_write_request(me, rec);
      const Lsn insertpos = strategy.wait_insertions(*this, me, rqst);
      if (!wal_write_lock_.acquire_or_wait(me, kLwExclusive)) continue;  // someone flushed: recheck
      if (log_flush_result_.load() >= rec.value) {
        wal_write_lock_.release(me);
        return;
      }
      ++counters_.flush_calls;
      write_locked(me, insertpos, /*flush=*/true);
      wal_write_lock_.release(me);
      return;
    }
  }

  // Write (and optionally fsync) everything inserted up to upto, for the WAL writer and the
  // end of a run.
  void write_upto(Proc<P>& me, Lsn upto, bool flush_too) {
    const Lsn insertpos = strategy.wait_insertions(*this, me, upto);
    wal_write_lock_.acquire(me, kLwExclusive);
    if (log_write_result_.load() < insertpos.value ||
        (flush_too && log_flush_result_.load() < insertpos.value))
      write_locked(me, insertpos, flush_too);
    wal_write_lock_.release(me);
  }

  // XLogSetAsyncXactLSN: remember what the WAL writer must flush for async commits.
  void set_async_xact_lsn(Proc<P>& me, Lsn lsn) {
    info_lck_.acquire(me);
    if (async_xact_lsn_.get() < lsn.value) async_xact_lsn_.set(lsn.value);
    info_lck_.release();
  }
  Lsn async_xact_lsn(Proc<P>& me) {
    info_lck_.acquire(me);
    const Lsn l{async_xact_lsn_.get()};
    info_lck_.release();
    return l;
  }

 private:
  // Raise LogwrtRqst.Write to at least upto; returns max(upto, LogwrtRqst.Write).
  Lsn raise_write_request(Proc<P>& me, Lsn upto) {
    info_lck_.acquire(me);
    uint64_t r = logwrt_rqst_write_.get();
    if (r < upto.value)
      logwrt_rqst_write_.set(upto.value);
    else
      upto = Lsn{r};
    info_lck_.release();
    return upto;
  }

  // XLogWrite with wal_write_lock_ held: copy [log_write_result_, upto) from the ring to storage
  // in runs that neither wrap the ring nor cross a segment; then fsync if asked.
  void write_locked(Proc<P>& me, Lsn upto, bool flush) {
    uint64_t from = log_write_result_.load();
    if (from < upto.value) {
      me.set_wait(WaitEvent::kWalIoWrite);
      while (from < upto.value) {
        const uint64_t page_no = from / geom_.page_size;
        const uint64_t slot = page_no % num_buffers_;
        const uint64_t to_ring_end = (num_buffers_ - slot) * geom_.page_size - from % geom_.page_size;
        const uint64_t to_seg_end = geom_.segment_size - from % geom_.segment_size;
        const uint64_t n = std::min({upto.value - from, to_ring_end, to_seg_end});
        // I2: the bytes are finished insertions, and the pages are still in the ring (I1).
        WALBENCH_CHECK(xlblocks_[slot].load() == (page_no + 1) * geom_.page_size, "I1 (write)");
        storage_.write(Lsn{from}, pages_.get() + slot * geom_.page_size + from % geom_.page_size, n);
        ++counters_.writes;
        from += n;
      }
      log_write_result_.store(upto.value);
      me.clear_wait();
    }
    if (flush && log_flush_result_.load() < log_write_result_.load()) {
      me.set_wait(WaitEvent::kWalIoSync);
      storage_.sync();
      ++counters_.fsyncs;
      log_flush_result_.store(log_write_result_.load());
      me.clear_wait();
    }
  }

  const WalGeometry geom_;
  const uint32_t num_buffers_;
  std::unique_ptr<uint8_t[]> pages_;
  std::unique_ptr<uint8_t[]> zero_page_;  // source for zeroing a page (read-only)
  std::unique_ptr<typename P::template Atomic<uint64_t>[]> xlblocks_;
  Storage& storage_;

  alignas(128) LWLock<P> buf_mapping_lock_;
  typename P::template Shared<uint64_t> initialized_upto_{0};
  alignas(128) LWLock<P> wal_write_lock_;
  alignas(128) SpinLock<P> info_lck_;
  typename P::template Shared<uint64_t> logwrt_rqst_write_{0};
  typename P::template Shared<uint64_t> async_xact_lsn_{0};
  alignas(128) typename P::template Atomic<uint64_t> log_write_result_{0};
  typename P::template Atomic<uint64_t> log_flush_result_{0};
  WalCounters counters_;
};

}  // namespace walbench

// ideal: an upper bound for every insertion strategy, in every cell it accepts.
//
// Origin
//   walbench's own baseline (DESIGN.md section 5, "beyond PostgreSQL"): what any insertion
//   strategy could reach on this machine if inserting cost no contention, with the same commit
//   machinery (group commit, WAL writer) as the shared WAL.
//
// What "bound" means here
//   In every cell `ideal` accepts, no strategy reaches a higher throughput than `ideal` in the
//   same cell. Each part of a transaction is done with the same work per record as the
//   strategies do and with no shared state, or, where sharing is the physical fact (one storage
//   device), with a protocol at least as good as the shared WAL's:
//   - Insertion: every client owns a private WAL stream (PrivateStream below): its own ring, its
//     own storage and reservation counters, the same Wal code (payload CRC before the insert,
//     header CRC with the prev link, copy into pages, page initialisation and eviction, writes).
//     No lock is contended and no line moves between cores while inserting.
//   - XID assignment and the CLOG: each client has its own XidGen and its own CLOG (with its
//     share of clog_buffers, at least 4): the same work per transaction (XidGenLock, ExtendCLOG,
//     the CLOG strategy's status update), nothing contended. Sharing them, as the first version
//     did, is not a bound: with insertion free, clients hammer XidGenLock harder than behind a
//     WAL lock and it collapses (savepoints, 4 clients, async, on the sim: 0.37M tps against
//     1.2M for insert_locks). Each client's xids therefore start at 3 in its own CLOG.
//   - Flush (synchronous_commit): the streams share one device (DeviceSync, core/wal/wal.h): a
//     flusher takes a ticket right after its commit record is inserted, writes its own pages,
//     and joins a group whose leader issues one fsync for everyone (D1-D4 there). That covers
//     at least the commits the shared WAL's flusher covers (those inserted before it looked),
//     with less under the device lock; see D2 for the one optimism (a bound may have it).
//   - The WAL writer (asynchronous commit, and complete pages otherwise) serves every stream:
//     one XLogBackgroundFlush round writes each stream's complete pages (or up to its async
//     LSN), decides to fsync by the same rule on the streams' total of unflushed pages, issues
//     one fsync for all of them, and pre-initialises each stream's ring
//     (core/cell/wal_cell.h, background_flush_private). Async commits set its latch when their
//     own stream has wal_writer_flush_after / clients pages unflushed (so at least as often as
//     the shared WAL's writer is woken).
//   - Memory: each ring is twice the client's share of wal_buffers (room for one client running
//     ahead), at least 4 pages and enough for the longest record, at most wal_buffers; so at
//     most max(2 x wal_buffers, clients x max(4, record pages)) pages, not a full ring per
//     client (the first version's 16 GiB at 1024 clients).
//   Refused (the factory throws, the cell fails with ideal_refusal's one line):
//   - wal.storage "file" with wal.fsync: each stream's files are its own and one fdatasync does
//     not cover them, so a group fsync cannot be modelled honestly. (Memory storage's sync is a
//     counter; the sim's device is one FIFO under all storage.)
//   Measured, not proven: tests/ideal_bound_test.cc runs every strategy's main variants against
//   ideal on the sim (5 workloads x both commit modes x 1-64 clients, fsync on) and requires the
//   bound up to the window's quantisation. On threads the bound holds as far as timing noise
//   lets one tell; nothing there is checked.
//
// The output is one WAL and one CLOG per client: the verifier walks each private stream and
// each private CLOG and checks that client's records and xids.
//
// Shared state: none in PrivateStream. curr_byte_pos_ and progress_ are P atomics written by the
//   owner only and read by the owner, the WAL writer and the end-of-run flush; prev_byte_pos_ is
//   the owner's alone.
//
// Invariants
//   I1 Only the owner inserts into a stream, so reservation needs no lock.
//   I2 progress_ is a position below which the owner's records are copied: its current
//      record's start, or a point inside it that it advertised before blocking on an eviction.
//   I3 curr_byte_pos_ moves only after the record is copied, so it too is a finished position;
//      wait_insertions returns the larger of the two, for the owner and for the WAL writer.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "core/proc.h"
#include "core/wal/format.h"
#include "core/wal/types.h"
#include "core/cell/spec.h"
#include "strategies/strategy.h"

namespace walbench {

StrategyInfo ideal_info();
// Why `ideal` cannot be a bound in this cell (its factory throws this), or "" when it can.
std::string ideal_refusal(const CellSpec& spec);

template <class P>
class PrivateStream {
 public:
  explicit PrivateStream(ProcTable<P>&) {}

  BytePos reserved_end() const { return BytePos{curr_byte_pos_.load()}; }

  template <class W>
  typename W::Inserted insert(W& wal, Proc<P>& me, uint8_t* record, uint32_t len,
                              uint32_t payload_crc) {
    const uint64_t start = curr_byte_pos_.load();
    const uint64_t end = start + max_align(len);
    const uint64_t prev = prev_byte_pos_.get();
    const WalGeometry& g = wal.geom();
    const Lsn start_lsn = g.bytepos_to_lsn(BytePos{start});
    progress_.store(start_lsn.value, std::memory_order_release);  // I2 (a plain store)
    finish_record(record, payload_crc,
                  prev == kNoPrev ? kInvalidLsn : g.bytepos_to_lsn(BytePos{prev}));
    wal.copy_record(me, BytePos{start}, BytePos{end}, record, len);
    curr_byte_pos_.store(end, std::memory_order_release);  // I1, I3: owner only, after the copy
    prev_byte_pos_.set(start);
    return {start_lsn, g.bytepos_to_end_lsn(BytePos{end})};
  }

  // I2: the owner is about to block at pos (page eviction inside its own record).
  void advertise(Proc<P>&, Lsn pos) { progress_.store(pos.value, std::memory_order_release); }

  // Everything below the returned position is copied (I2, I3); callers check it covers upto.
  template <class W>
  Lsn wait_insertions(W& wal, Proc<P>&, Lsn) {
    const Lsn advertised{progress_.load()};
    const Lsn reserved = wal.geom().bytepos_to_end_lsn(BytePos{curr_byte_pos_.load()});
    return std::max(advertised, reserved);
  }

 private:
  static constexpr uint64_t kNoPrev = ~uint64_t{0};
  // Written by the owner only; read by the owner, the WAL writer and the end-of-run flush.
  typename P::template Atomic<uint64_t> curr_byte_pos_{0};
  typename P::template Atomic<uint64_t> progress_{0};
  typename P::template Shared<uint64_t> prev_byte_pos_{kNoPrev};  // owner only
};

}  // namespace walbench

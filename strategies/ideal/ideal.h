// ideal: the physical limit, no shared state.
//
// Origin
//   walbench's own baseline (DESIGN.md section 5, "beyond PostgreSQL"): what any insertion
//   strategy could reach on this machine if locking cost nothing.
//
// Design summary
//   Every client owns a private WAL stream: its own buffer ring, its own storage, its own
//   reservation counters. It does the same per-record work as a real strategy (payload CRC
//   before the insert, header CRC with the prev link, copying into buffer pages, initialising
//   and evicting pages, writing full pages to storage, flushing at commit), through the same
//   Wal code, but nobody else ever touches its state, so no lock is contended and no cache line
//   moves between cores. The output is one WAL per client, not one WAL: the verifier walks each
//   private stream and checks that client's records.
//
// Shared state: none. PrivateStream's fields are touched by the owning client only (and by the
//   WAL writer / end-of-run flush when the client is not inserting), through P so that a
//   simulated platform charges them as local hits.
//
// Invariants
//   I1 Only the owner inserts into a stream, so reservation needs no lock.
//   I2 wait_insertions during the owner's own insert returns the owner's advertised progress;
//      outside an insert, everything reserved is finished.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "core/proc.h"
#include "core/wal/format.h"
#include "core/wal/types.h"
#include "harness/spec.h"
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
    progress_.store(start_lsn.value);  // I2
    finish_record(record, payload_crc,
                  prev == kNoPrev ? kInvalidLsn : g.bytepos_to_lsn(BytePos{prev}));
    wal.copy_record(me, BytePos{start}, BytePos{end}, record, len);
    curr_byte_pos_.store(end);  // I1, I3: only the owner reserves, after the copy
    prev_byte_pos_.set(start);
    return {start_lsn, g.bytepos_to_end_lsn(BytePos{end})};
  }

  // I2: the owner is about to block at pos (page eviction inside its own record).
  void advertise(Proc<P>&, Lsn pos) { progress_.store(pos.value); }

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

// The sim platform's storage: writes into the page cache and a modelled device (FIFO queue,
// write bandwidth that may fluctuate, fsync latency). Design: sim.h ("COST MODEL"); parameters
// and their sources: SimConfig's storage block.
//
// PAGE CACHE (op_storage_write: a buffered pwrite)
//   The caller's CPU copies n bytes into the page cache: syscall_ns + n / w, w =
//   page_cache_write_bytes_per_ns (or copy_bytes_per_ns when 0). Concurrent writers contend in
//   two places, as in the kernel:
//   - One file: buffered writes take the inode's i_rwsem exclusive (ext4_buffered_write_iter:
//     inode_lock; XFS xfs_file_buffered_write: XFS_IOLOCK_EXCL), so writes to one file run one
//     after the other: a writer starts copying when the previous writer of that file finished.
//     The waiter keeps its CPU (rwsem optimistic spinning; its sleep is not modelled).
//   - All files: page allocation, LRU insertion and dirty accounting are machine-wide; modelled
//     as one FIFO bandwidth server of page_cache_bytes_per_ns that every pwrite's bytes pass
//     through (like the memory-bandwidth server of op_copy). A writer finishes when both its own
//     copy and its share of the server are done. 0 = no server.
//   N writers of n bytes each to N files thus take max(n / w, N x n / page_cache_bytes_per_ns)
//   instead of n / w; to one file, N x n / w.
//   PostgreSQL's WAL writes are serialised by WALWriteLock already (core/wal/wal.h calls
//   storage_write without a file), so the inode lock binds only where several writers write one
//   file without such a lock.
//   Not modelled: dirty-page throttling (balance_dirty_pages), stable-page waits.
//
// DEVICE (op_storage_sync: fdatasync)
//   The bytes written since the last sync go to the device after what it is still writing
//   (FIFO): the sync completes at max(device free, now + syscall_ns) + transfer + fsync_ns, with
//   the caller's CPU released. A sync with nothing to wait for (fsync_ns 0 and no device transfer
//   due: always so with no device, storage_write_bytes_per_ns 0, as for WAL on tmpfs, whose
//   fdatasync is noop_fsync) costs syscall_ns and keeps the CPU: no sleep, no context switch. Transfer at storage_write_bytes_per_ns, or, with
//   storage_fluctuation f > 0, at storage_write_bytes_per_ns x (1 + f x u_k) during period k
//   (storage_fluctuation_period_ns long) with u_k uniform in [-1, 1] a pure function of (seed,
//   k): the bandwidth at a virtual instant does not depend on what happened before it.
#include <algorithm>
#include <cmath>

#include "core/platform/sim.h"
#include "core/platform/sim_internal.h"

namespace walbench {

namespace {

// u_k in [-1, 1]: splitmix64 of (seed, k).
double fluctuation_draw(uint64_t seed, uint64_t k) {
  uint64_t z = seed ^ (k * 0x9E3779B97F4A7C15ULL) ^ 0xD1B54A32D192ED03ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-52 - 1.0;  // [-1, 1)
}

// When the device, starting at `start`, has transferred `bytes`.
uint64_t transfer_end(const SimConfig& c, uint64_t seed, uint64_t start, uint64_t bytes) {
  if (c.storage_write_bytes_per_ns <= 0 || bytes == 0) return start;
  if (c.storage_fluctuation <= 0)
    return start + static_cast<uint64_t>(
                       std::ceil(static_cast<double>(bytes) / c.storage_write_bytes_per_ns));
  const uint64_t period = c.storage_fluctuation_period_ns;
  double t = static_cast<double>(start);
  double left = static_cast<double>(bytes);
  for (;;) {
    const uint64_t k = static_cast<uint64_t>(t) / period;
    const double level_end = static_cast<double>((k + 1) * period);
    const double bw =
        c.storage_write_bytes_per_ns * (1.0 + c.storage_fluctuation * fluctuation_draw(seed, k));
    const double can = (level_end - t) * bw;
    if (can >= left) return static_cast<uint64_t>(std::ceil(t + left / bw));
    left -= can;
    t = level_end;
  }
}

}  // namespace

void Simulation::op_storage_write(size_t n, const void* file) {
  Fiber* fp = cur_;
  if (fp == nullptr) return;
  Fiber& f = *fp;
  if (f.replay) end_replay(f);
  f.spin_addr = nullptr;
  sync(f);  // the inode locks and the page-cache server are shared: serve in virtual-time order
  const double rate =
      cfg_.page_cache_write_bytes_per_ns > 0 ? cfg_.page_cache_write_bytes_per_ns : cfg_.copy_bytes_per_ns;
  f.frac += static_cast<double>(n) / rate;
  const uint64_t whole = static_cast<uint64_t>(f.frac);
  f.frac -= static_cast<double>(whole);
  uint64_t start = f.clock + cfg_.syscall_ns;
  uint64_t* inode = nullptr;
  if (file != nullptr) {
    for (auto& [key, free_at] : inode_free_)
      if (key == file) inode = &free_at;
    if (inode == nullptr) inode = &inode_free_.emplace_back(file, 0).second;
    start = std::max(start, *inode);
  }
  uint64_t done = start + whole;
  if (cfg_.page_cache_bytes_per_ns > 0) {
    page_cache_free_ = std::max(page_cache_free_, static_cast<double>(start)) +
                       static_cast<double>(n) / cfg_.page_cache_bytes_per_ns;
    done = std::max(done, static_cast<uint64_t>(std::ceil(page_cache_free_)));
  }
  if (inode != nullptr) *inode = done;
  f.clock = done;
  device_pending_ += n;
  ++counters_.storage_writes;
  sync(f);
}

void Simulation::op_storage_sync() {
  Fiber* fp = cur_;
  if (fp == nullptr) return;
  Fiber& f = *fp;
  if (f.replay) end_replay(f);
  f.spin_addr = nullptr;
  sync(f);
  const uint64_t t0 = f.clock + cfg_.syscall_ns;
  const uint64_t done = transfer_end(cfg_, seed_, std::max(device_free_, t0), device_pending_) + cfg_.fsync_ns;
  device_free_ = done;
  device_pending_ = 0;
  ++counters_.storage_syncs;
  f.clock = t0;
  if (done <= t0) {  // nothing to wait for (no device: tmpfs): returns on the caller's CPU
    sync(f);
    return;
  }
  release_cpu(f, t0);
  f.state = Fiber::State::kWaking;
  f.wait = Fiber::Wait::kStorage;
  push_event(f, done);
  switch_out(f);
}
}  // namespace walbench

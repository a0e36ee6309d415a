// Where written WAL goes (DESIGN.md section 4, "Storage").
//
// Who calls what:
//   - write() and sync() are called only by the holder of the WAL write lock (WALWriteLock), so
//     by one writer at a time; the implementations nevertheless serialize themselves with an
//     internal mutex (cheap next to a page copy or a system call), so a misuse is not a data race.
//   - read() is called after the run (by the verifier, tests). Bytes never written read as zero.
//   - bytes_written() / syncs() may be read at any time (samplers): relaxed atomics.
//
// Addresses are LSNs (page headers included): storage keeps the image of the WAL exactly as the
// buffer pages hold it. A write or read may span pages and segments.
//
// Kinds:
//   memory  keeps every byte; segments allocated lazily, zero-filled. The default, and what the
//           verifier reads after a run.
//   file    one file per segment, named like PostgreSQL's (segment_file_name), in a directory
//           created if missing; pwrite, and fdatasync of every segment written since the last
//           sync() when fsync is on. Errors throw std::runtime_error naming the path and errno.
// The modelled device of the sim platform (bandwidth, fsync latency) lives with that platform.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/wal/geometry.h"
#include "core/wal/types.h"

namespace walbench {

class Storage {
 public:
  virtual ~Storage() = default;
  // Store data[0, n) at [start, start + n). May span pages and segments.
  virtual void write(Lsn start, const uint8_t* data, size_t n) = 0;
  // Make everything written so far durable (fdatasync every segment written since the last
  // sync; a no-op for memory). Counted in syncs() whether or not anything was pending.
  virtual void sync() = 0;
  // Copy [start, start + n) into out; bytes never written read as zero.
  virtual void read(Lsn start, uint8_t* out, size_t n) const = 0;
  virtual const char* kind() const = 0;

  uint64_t bytes_written() const { return bytes_written_.load(std::memory_order_relaxed); }
  uint64_t syncs() const { return syncs_.load(std::memory_order_relaxed); }

 protected:
  void count_write(size_t n) { bytes_written_.fetch_add(n, std::memory_order_relaxed); }
  void count_sync() { syncs_.fetch_add(1, std::memory_order_relaxed); }

 private:
  // Instrumentation read by samplers: written only inside write()/sync(), i.e. by the
  // WALWriteLock holder, and those calls are charged by the platform (charge_storage_write/sync).
  std::atomic<uint64_t> bytes_written_{0};  // shared-state-lint: allow instrumentation; the write it counts is charged by P
  std::atomic<uint64_t> syncs_{0};          // shared-state-lint: allow instrumentation; the sync it counts is charged by P
};

// Throw std::invalid_argument if the geometry is invalid (WalGeometry::validate).
std::unique_ptr<Storage> make_memory_storage(const WalGeometry& g);
std::unique_ptr<Storage> make_file_storage(const WalGeometry& g, const std::string& dir,
                                           bool fsync);

// PostgreSQL's XLogFileName: "%08X%08X%08X" of timeline, segno / segments-per-4GiB,
// segno % segments-per-4GiB. Segment 1 of timeline 1 at 16 MiB: "000000010000000000000001".
std::string segment_file_name(uint64_t segno, const WalGeometry& g, uint32_t timeline = 1);

}  // namespace walbench

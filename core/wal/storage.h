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
//   memory  keeps every byte; segments allocated lazily, zero-filled. What tests and the
//           end-of-run verifier read (make_memory_storage).
//   ring    memory storage for runs: a fixed ring of chunks, pre-faulted at construction and
//           reused as PostgreSQL recycles WAL segments, with the streaming verifier
//           (verifier.h) reading behind the writer (StreamedStorage below). What
//           `wal.storage: "memory"` builds for a run.
//   file    one file per segment, named like PostgreSQL's (segment_file_name), in a directory
//           created if missing; pwrite, and fdatasync of every segment written since the last
//           sync() when fsync is on. Errors throw std::runtime_error naming the path and errno.
// The modelled device of the sim platform (bandwidth, fsync latency) lives with that platform.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
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

// Memory storage with bounded memory, read by one streaming reader (the verifier) while it is
// written. The WAL's bytes land in a ring of `chunks` chunks of chunk_bytes each (a power of
// two: ring_chunk_bytes(), so a chunk never spans segments and page boundaries fall on chunk
// boundaries or inside); the bytes of LSN x live in chunk (x / chunk_bytes) % chunks.
//
// The writer (write()) may only reuse a chunk once the reader released every LSN below the new
// bytes minus the ring's size: it waits for the reader otherwise (counted in stats(): a writer
// wait is time the WAL writer, and so the run, lost to verification). Writes are in LSN order
// and contiguous (XLogWrite writes [LogwrtResult.Write, upto) in order): the written frontier is
// the end of the last write, and everything below it is final.
//
// The reader (one thread) asks written_past(x) for bytes, reads [a, b) below the frontier with
// read() (no lock: writer and reader touch disjoint chunks), and releases what it is done with.
// A reader that stops early (a failed verification) calls reader_gone(): the writer then never
// waits again. Without a reader at all (verification off) construct it with reader = false.
class StreamedStorage : public Storage {
 public:
  struct Stats {
    uint64_t ring_bytes = 0;      // chunks x chunk_bytes: the storage's memory, whatever the run
    uint64_t chunk_bytes = 0;
    uint64_t max_lag_bytes = 0;   // most written-but-unreleased bytes the reader ever had
    uint64_t writer_waits = 0;    // writes that waited for the reader to release a chunk
    uint64_t writer_wait_ns = 0;  // host time those writes waited
  };

  // Blocks until the written frontier is past `lsn` or the end is declared; returns the frontier.
  virtual uint64_t written_past(uint64_t lsn) = 0;
  // The written frontier now (no wait).
  virtual uint64_t written() const = 0;
  // The end of WAL, once declare_end() was called (0 is a valid end: nothing was inserted).
  virtual std::optional<uint64_t> declared_end() const = 0;
  // The reader will not read below `lsn` again (monotonic; lower values are ignored).
  virtual void release(uint64_t lsn) = 0;
  virtual void reader_gone() = 0;
  // No more writes: the end of WAL is `end` (the reader finishes there).
  virtual void declare_end(uint64_t end) = 0;
  virtual Stats stats() const = 0;
  // Test hook: the write that covers `lsn` flips the bits of the stored byte there (a torn or
  // corrupted write the verifier must report).
  virtual void plant_corruption(uint64_t lsn) = 0;
};

// Throw std::invalid_argument if the geometry is invalid (WalGeometry::validate).
std::unique_ptr<Storage> make_memory_storage(const WalGeometry& g);
// ring_bytes is rounded up to whole chunks, at least 4.
std::unique_ptr<StreamedStorage> make_ring_storage(const WalGeometry& g, uint64_t ring_bytes,
                                                   bool reader);
// The chunk of a ring of ring_bytes: a quarter of it rounded down to a power of two, at most
// 1 MiB (the writer's waits come in steps of a chunk) and the segment size, at least a page.
uint64_t ring_chunk_bytes(const WalGeometry& g, uint64_t ring_bytes);
std::unique_ptr<Storage> make_file_storage(const WalGeometry& g, const std::string& dir,
                                           bool fsync);

// PostgreSQL's XLogFileName: "%08X%08X%08X" of timeline, segno / segments-per-4GiB,
// segno % segments-per-4GiB. Segment 1 of timeline 1 at 16 MiB: "000000010000000000000001".
std::string segment_file_name(uint64_t segno, const WalGeometry& g, uint32_t timeline = 1);

}  // namespace walbench

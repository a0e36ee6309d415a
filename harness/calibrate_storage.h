// What `walbench calibrate` measures of storage (harness/calibrate.h), in a temporary file of
// the --fsync-path directory (removed however calibrate ends): a small pwrite (syscall cost),
// large sequential pwrites then fdatasync (device bandwidth), and fdatasync after one 8 KiB
// pwrite into the preallocated region (latency, as a WAL page in a segment); and the rate of
// buffered writes, one writer's and every CPU's at once. Raw figures in ns (rates in bytes/ns);
// calibrate_preset converts them to the simulator's accounting.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace walbench::calibration {

struct StorageFigures {
  std::vector<double> syscall;        // one 8-byte pwrite, ns
  std::vector<double> write_ns;       // pwrites of `bytes` (page cache), per repetition
  std::vector<double> sync_ns;        // the fdatasync after them
  std::vector<double> small_sync_ns;  // fdatasync after one pwrite of small_bytes
  size_t bytes = 0;        // written before each sync_ns
  size_t small_bytes = 0;  // written before each small_sync_ns (8 KiB: a WAL page)
  size_t pwrites = 0;  // per repetition
};

// Throws UsageError (harness/config.h) naming the directory when the file cannot be created,
// written or synced.
StorageFigures storage_figures(const std::string& dir, bool quick);

// Buffered writes into the page cache: one thread pinned to each of `cpus` overwrites a region
// of `region_bytes` of its own temporary file in `dir` in pwrites of kPageCacheChunk, all at once
// in windows; one sample is the sum of their bytes per ns (calibrate_probe.h
// aggregate_rate_all_cpus). With one CPU: one writer's rate; with all: the page cache shared
// (page lookup, LRU and dirty accounting, memory bandwidth). A first pass allocates the region's
// blocks (what is timed are overwrites, as of a recycled WAL segment) in pwrites of
// first_write_bytes, which decides how the page cache holds the region where the kernel keeps
// large folios (ext4 since Linux 6.16, XFS since 5.18): written kWalPageBytes at a time, in 4 KiB
// pages or small folios, as ext4 held every file before 6.16; written in larger pwrites, in
// folios up to that size, which are overwritten faster per byte (on the development VM, Linux
// 6.18 ext4, 2026-12-07, 64 MiB regions: 11.1-17.3 B/ns when first written in 1 MiB pwrites,
// 6.8-8.6 in 8 KiB ones, 1.35-2.0x in the same run). Throws UsageError as above.
constexpr size_t kPageCacheChunk = size_t{1} << 20;
constexpr size_t kWalPageBytes = 8192;  // XLOG_BLCKSZ: the WAL's page (it writes whole pages)
std::vector<double> page_cache_rate(const std::string& dir, const std::vector<int>& cpus,
                                    size_t region_bytes, size_t first_write_bytes, bool quick);

// One writer's page-cache rate against the copy rate, measured side by side so that a host
// whose speed drifts between two measurements (a shared VM: memcpy at 16.7 and 20.7 B/ns in two
// runs minutes apart on 2026-12-07) does not move their ratio: on one CPU, rounds of a memcpy
// pass (copy_bytes_per_ns' own kind: 8 MiB blocks between two 64 MiB rings, each block timed and
// the pass's rate the median of its eight, as calibrate_cpu.h copy_one_core takes it) and a
// pwrite pass (1 MiB pwrites of the same source ring overwriting a region of `region_bytes`
// first written in kWalPageBytes pwrites, small folios as page_cache_rate's), the pass that
// goes first alternating (16 kept rounds, 6 when quick: as many of each order), a warm-up round
// dropped. One value per round each.
// Throws UsageError as above.
struct PageCacheAgainstCopy {
  std::vector<double> copy;    // the memcpy pass, bytes per ns
  std::vector<double> pwrite;  // the pwrite pass, bytes per ns (system calls included)
  std::vector<double> ratio;   // pwrite / copy, round by round
};
PageCacheAgainstCopy page_cache_against_copy(const std::string& dir, size_t region_bytes,
                                             bool quick);

}  // namespace walbench::calibration

// What `walbench calibrate` measures of the processor and its memory (harness/calibrate.h):
// cache-line transfers between cores, the costs of one core's hit / locked RMW / fence / pause,
// DRAM latency, copy bandwidth of one core and of all at once, and the CRC-32C rate.
//
// CRC: SimConfig::crc_bytes_per_ns is the CPU time the modelled PostgreSQL spends on a record's
// CRC, and PostgreSQL computes it with pg_comp_crc32c_sse42 (one crc32q per 8 bytes: a
// dependent chain of the instruction's latency), not with the ISA-L routine the model uses to
// produce and check real CRCs (interleaved streams: 101 against 10.7 bytes/ns side by side on
// the development VM, 2026-12-01). So the figure is
// crc32c_sse42_loop's rate: the same instruction loop, written here. crc_rate_model() measures
// the model's ISA-L CRC too, printed for comparison only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/wal/crc32c.h"

namespace walbench::calibration {

// Cache-line ping-pong between two pinned threads, as nviennot/core-to-core-latency: each
// thread compare-and-swaps the line from the other's value to its own, so every successful CAS
// moved the line across. One sample: `rounds` round trips; the figure is round trip / 2, ns.
std::vector<double> line_pingpong(int cpu_a, int cpu_b, int samples, int rounds, bool* pinned);

// Two pinned threads add 1 to one shared word `adds` times each with back-to-back fetch_adds
// (LOCK XADD), noting which thread got each value; one sample per round, its mean run length
// (walbench::owner_run_length: consecutive values one thread got). Strict alternation reads 1.
// SimConfig::request_at_issue is decided from it (calibrate.cc): with 0 the simulated holder
// keeps the line for about half a transfer of further adds (sim_fetch_add_run_length).
std::vector<double> fetch_add_run_length(int cpu_a, int cpu_b, int samples, uint32_t adds,
                                         bool* pinned);

// Per-operation times (ns) on the calling thread, one value per sample.
struct CoreFigures {
  std::vector<double> store, rmw_minus_store, empty, fence_minus_empty, pause, hit;
};
CoreFigures core_figures(int samples);

// DRAM load-to-use: a random cyclic chase over the lines of a 64 MiB buffer, ns per load.
std::vector<double> memory_latency(int samples, int steps);

// One core: memcpy of 8 MiB blocks between two 64 MiB rings (well beyond L2), bytes per ns.
std::vector<double> copy_one_core(int samples);

// Every listed CPU copies at once (each its own rings, 4 MiB blocks) for `window_ns`; one
// sample is the sum of the threads' rates, bytes per ns. A spin barrier starts each window.
std::vector<double> copy_all_cores(const std::vector<int>& cpus, int samples, double window_ns);

// Every listed CPU at once, one pinned thread each, increments one shared word with a CAS loop
// (load once, then compare_exchange until it succeeds: RocksDB's LinkOne, LWLockAttemptLock)
// for `window_ns` per sample. tries_per_success over all samples; successes_per_ns per sample.
// SimConfig::snoop_linger is decided from it (calibrate.cc): the simulator's prediction of the
// same loop is near 1 try per success with the holder's retry winning, and grows with the
// number of CPUs when requests are ordered at arrival (sim_cas_loop_tries_per_success).
struct CasLoopFigures {
  double tries_per_success = 0;
  std::vector<double> successes_per_ns;
};
CasLoopFigures cas_loop_contention(const std::vector<int>& cpus, int samples, double window_ns);

// Every listed CPU at once, one pinned thread each, takes one lock word as LWLockWaitListLock
// takes an LWLock's wait-list bit (fetch_or; while the bit was set, spin reading with a PAUSE
// per read, then fetch_or again), stores once to a second shared line (the wait list's links)
// and releases with fetch_and, for `window_ns` per sample. failed_rmws_per_acquisition: the
// fetch_ors that found the bit set, per acquisition (the herd after each release), over all
// samples; acquisitions_per_ns per sample. Printed beside the simulator's prediction of the
// same loop (sim_ttas_failed_rmws_per_acquisition); it sets no parameter.
struct TtasLockFigures {
  double failed_rmws_per_acquisition = 0;
  std::vector<double> acquisitions_per_ns;
};
TtasLockFigures ttas_lock_contention(const std::vector<int>& cpus, int samples, double window_ns);

// The loop PostgreSQL's CRC runs (crc32c_sse42_loop) lives with the model's CRC.
using walbench::crc32c_sse42_loop;
using walbench::have_crc32c_sse42;

// Bytes per ns over a cache-resident 64 KiB buffer (a record being inserted is in cache):
// crc_rate_postgres() with crc32c_sse42_loop (call only when have_crc32c_sse42()),
// crc_rate_model() with the model's ISA-L CRC (core/wal/crc32c.h).
std::vector<double> crc_rate_postgres(int samples);
std::vector<double> crc_rate_model(int samples);

}  // namespace walbench::calibration

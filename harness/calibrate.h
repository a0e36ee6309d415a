// `walbench calibrate`: measures this machine's cost parameters and writes them as a sim preset
// file (presets/README.md), so the simulated platform can model the machine it runs on.
//
// WHAT IS MEASURED (each by a short loop, repeated; the median is kept, the spread printed)
//   topology     cores / sockets / smt / cores_per_cluster from /sys/devices/system/cpu (online
//                CPUs; physical_package_id, core_id, the L3's shared_cpu_list)
//   line         same_socket_transfer_ns (and same_cluster / cross_socket when the machine has
//                clusters / sockets): two threads pinned to two cores ping-pong one cache line
//                with compare-and-swap, as nviennot/core-to-core-latency (the source of the
//                builtin presets); one transfer = round trip / 2
//   core         line_hit_ns (a dependent load chain in L1), rmw_extra_ns (lock xadd minus a
//                plain store on an owned line), fence_ns (seq_cst fence minus an empty loop),
//                pause_ns (_mm_pause; "yield" on AArch64), memory_ns (a random pointer chase
//                over 64 MiB)
//   OS           context_switch_ns (two threads pinned on one core ping-pong through two POSIX
//                semaphores, per switch), semaphore_wake_ns / semaphore_post_ns (sem_post to a
//                waiter blocked on another core: post -> waiter runs, and the post call),
//                idle_poll_ns (the same wake-up after 10-800 us and 2 ms of idle: how long an
//                idle core still polls; semaphore_wake_ns is taken from the idle times past it),
//                sleep_slack_ns (nanosleep(1 us) overshoot)
//   bandwidth    copy_bytes_per_ns (memcpy of 8 MiB blocks in 64 MiB rings, one core),
//                memory_bandwidth_bytes_per_ns (every CPU copying at once, aggregate),
//                crc_bytes_per_ns (PostgreSQL's CRC-32C loop, pg_comp_crc32c_sse42's shape: one
//                crc32q per 8 bytes, on cache-resident data; the model's own ISA-L CRC is
//                printed beside it, not used: it runs several times faster than PostgreSQL's loop)
//   storage      with a directory: syscall_ns (an 8-byte pwrite), storage_write_bytes_per_ns
//                (large sequential pwrites then fdatasync), fsync_ns (8 KiB pwrite + fdatasync
//                in a preallocated file, like a WAL segment); the temporary file is removed
//   Figures are converted to the sim's accounting where the sim charges several parameters for
//   one real event (calibrate_preset.h lists each sum; NB: must match Simulation::sem_post,
//   op_sleep and op_storage_sync in core/platform/sim.cc): e.g. the sim's wake-to-run is line
//   transfer + rmw_extra + semaphore_wake_ns + context_switch_ns, so semaphore_wake_ns is the
//   measured wake-to-run minus the others. Each conversion is spelled out in the file's
//   "sources".
//
// FILES: calibrate_topology (sysfs), calibrate_cpu (lines, one core, memory, copy, CRC),
// calibrate_os (context switch, semaphore wake-up, sleep), calibrate_storage (pwrite, fdatasync),
// calibrate_probe (clock, pinning, statistics), calibrate_preset (conversions, the file),
// calibrate.cc (the order of the measurements and the CPUs they run on; the CLI).
//   Everything else (time_slice_ns, wake_jitter, smt_work_factor, the simulator's own knobs)
//   keeps SimConfig's default, and "sources" says so.
//
// OUTPUT: a JSON object whose keys are every SimConfig key plus "description" (machine, CPU
// model, kernel, date, "measured by walbench calibrate") and "sources" (per key: how it was
// measured or where the value comes from). SimConfig::from_json loads it as
// {"preset": "FILE.json"}.
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>

namespace walbench {

struct CalibrateOptions {
  std::string fsync_dir = ".";  // storage measurements in this directory; "" skips them
  std::string name;             // machine name for "description"; "" = the host name
  bool quick = false;           // fewer repetitions: < 5 s instead of < 30 s
};

// Runs every measurement, printing one line per figure (median, interquartile range, samples)
// to `log`, and returns the preset object. Pins its own threads only (the caller's affinity is
// unchanged). Throws std::runtime_error when the storage directory cannot be used.
nlohmann::ordered_json calibrate(const CalibrateOptions& opts, std::ostream& log);

// The CLI: checks `output` first (its directory must exist; "" = print to `out`), measures,
// then writes the file atomically (tmp + rename). Throws UsageError (harness/config.h) for a bad
// output path or storage directory. Returns 0.
int calibrate_command(const CalibrateOptions& opts, const std::string& output, std::ostream& out,
                      std::ostream& log);

}  // namespace walbench

// `walbench calibrate` and sim preset files. Exact where the answer is known: the conversions
// from measured figures to SimConfig values make the simulator reproduce each measured event;
// the CRC loop computes CRC-32C; the topology of a fabricated sysfs tree. On this machine: a
// quick calibration writes a file that loads, with values inside physical bounds (wide enough
// for a loaded VM, narrow enough to catch a unit or a field mixed up) and the raw figure behind
// each measured value. Preset files: the shipped builtin files equal the builtins; errors are
// one line naming the file, the key and what was expected; inline keys win.
#include "harness/calibrate.h"

#include <stdlib.h>
#include <sys/vfs.h>
#include <sys/wait.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "tests/temp_dir.h"
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/platform/sim.h"
#include "core/wal/crc32c.h"
#include "harness/calibrate_cpu.h"
#include "harness/calibrate_preset.h"
#include "harness/calibrate_probe.h"
#include "harness/calibrate_storage.h"
#include "harness/calibrate_topology.h"
#include "harness/config.h"

namespace walbench {
namespace {

namespace fs = std::filesystem;

using testing::TempDir;
using testing::slurp;

// What SimConfig::from_json throws for `j` (fails the test if nothing).
std::string sim_error(const nlohmann::json& j, const std::string& path = "/platform") {
  try {
    (void)SimConfig::from_json(j, path);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  FAIL("no error for " << j.dump());
  return "";
}

struct Result {
  int rc = -1;
  std::string out, err;
};

Result walbench(const std::string& args, const TempDir& dir) {
  const auto out = dir.path / "stdout.txt";
  const auto err = dir.path / "stderr.txt";
  const std::string cmd = "cd '" + dir.path.string() + "' && '" + WALBENCH_BINARY + "' " + args +
                          " >'" + out.string() + "' 2>'" + err.string() + "'";
  const int status = std::system(cmd.c_str());
  Result r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

void check_bad_input(const Result& r) {
  INFO("stderr: " << r.err);
  CHECK(r.rc == 2);
  CHECK(r.err.rfind("walbench: error: ", 0) == 0);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}

bool memory_backed(const fs::path& dir) {
  struct statfs s {};
  return statfs(dir.c_str(), &s) == 0 &&
         (s.f_type == 0x01021994 /* TMPFS_MAGIC */ || s.f_type == 0x858458f6 /* RAMFS_MAGIC */);
}

// The keys of a preset file: exactly SimConfig's JSON keys plus "description" and "sources".
void check_preset_keys(const nlohmann::json& file) {
  nlohmann::json keys = SimConfig{}.to_json();
  for (auto it = keys.begin(); it != keys.end(); ++it) {
    INFO(it.key());
    CHECK(file.contains(it.key()));
  }
  for (auto it = file.begin(); it != file.end(); ++it) {
    INFO(it.key());
    CHECK((keys.contains(it.key()) || it.key() == "description" || it.key() == "sources"));
  }
  REQUIRE(file.contains("description"));
  CHECK(file["description"].is_string());
  REQUIRE(file.contains("sources"));
  REQUIRE(file["sources"].is_object());
  for (auto it = keys.begin(); it != keys.end(); ++it) {
    INFO("sources/" << it.key());
    CHECK(file["sources"].contains(it.key()));
  }
}

}  // namespace

TEST_CASE("calibrate --quick writes a preset file that loads with plausible values",
          "[calibrate]") {
  TempDir dir;
  CalibrateOptions opts;
  opts.quick = true;
  opts.fsync_dir = dir.path.string();
  opts.name = "test-machine";
  std::ostringstream log, out;
  const std::string file = (dir.path / "measured.json").string();
  REQUIRE(calibrate_command(opts, file, out, log) == 0);
  INFO(log.str());
  // The temporary file of the storage measurements is gone; only the preset (no .tmp) is left.
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir.path))
    names.push_back(e.path().filename().string());
  CHECK(names == std::vector<std::string>{"measured.json"});
  // Each figure was printed with its spread as it came.
  CHECK(log.str().find("IQR") != std::string::npos);
  CHECK(log.str().find("same-socket line transfer") != std::string::npos);

  const nlohmann::json j = nlohmann::json::parse(slurp(file));
  check_preset_keys(j);
  CHECK(j["description"].get<std::string>().find("test-machine") != std::string::npos);
  CHECK(j["description"].get<std::string>().find("measured by walbench calibrate") !=
        std::string::npos);

  const SimConfig c =
      SimConfig::from_json(nlohmann::json{{"kind", "sim"}, {"preset", file}}, "/platform");
  CHECK(c.to_json() == SimConfig::from_json(c.to_json(), "x").to_json());
  // The topology is this machine's (the fabricated-tree test checks how it is derived).
  const calibration::Topology topo = calibration::read_topology();
  CHECK(c.cores == topo.cores);
  CHECK(c.sockets == topo.sockets);
  CHECK(c.smt == topo.smt);
  // Physical bounds, in ns, with room for a loaded VM; a figure in the wrong unit (us, cycles)
  // or in the wrong field falls outside them.
  CHECK(c.line_hit_ns >= 1);
  CHECK(c.line_hit_ns <= 20);                    // an L1 hit: 4-5 cycles
  CHECK(c.memory_ns > c.line_hit_ns);            // DRAM is farther than L1
  CHECK(c.memory_ns >= 20);
  CHECK(c.memory_ns <= 2000);
  CHECK(c.same_socket_transfer_ns <= 10000);     // a cache line, not a page or a syscall
  CHECK(c.cross_socket_transfer_ns >= c.same_socket_transfer_ns);
  CHECK(c.rmw_extra_ns <= 1000);
  CHECK(c.fence_ns <= 1000);
  CHECK(c.pause_ns >= 1);
  CHECK(c.pause_ns <= 1000);                     // PAUSE: 10-150 cycles
  CHECK(c.context_switch_ns >= 100);             // a futex round trip through the kernel
  CHECK(c.context_switch_ns <= 10000000);        // below a scheduler tick even when loaded
  CHECK(c.semaphore_wake_ns <= 10000000);
  CHECK(c.semaphore_post_ns <= 10000000);
  CHECK(c.sleep_slack_ns <= 10000000);
  CHECK(c.copy_bytes_per_ns >= 0.5);             // bytes per ns = GB/s
  CHECK(c.copy_bytes_per_ns <= 200);
  CHECK(c.memory_bandwidth_bytes_per_ns >= 0.5);
  CHECK(c.memory_bandwidth_bytes_per_ns <= 5000);
  // PostgreSQL's loop is a dependent chain of crc32q (3 cycles each, 8 bytes): at most 8 bytes
  // per 3 cycles, 16 B/ns even at 6 GHz. The model's ISA-L CRC runs well above that on the same
  // CPU, so this also fails if calibrate measures the wrong CRC.
  CHECK(c.crc_bytes_per_ns >= 0.5);
  if (calibration::have_crc32c_sse42()) CHECK(c.crc_bytes_per_ns <= 16);
  CHECK(j["sources"]["crc_bytes_per_ns"].get<std::string>().find("pg_comp_crc32c_sse42") !=
        std::string::npos);
  CHECK(c.syscall_ns >= 10);                     // an 8-byte pwrite enters the kernel
  CHECK(c.syscall_ns <= 1000000);
  if (!memory_backed(dir.path)) CHECK(c.storage_write_bytes_per_ns > 0);
  CHECK(c.storage_write_bytes_per_ns <= 1000);
  CHECK(c.fsync_ns <= 1000000000);               // a sync within a second
  // Buffered writes: slower than the wire of any disk is no page cache (> 0.05 B/ns = 50 MB/s),
  // faster than memory is not a copy (<= 1000 B/ns); all CPUs together at least about one.
  CHECK(c.page_cache_write_bytes_per_ns > 0.05);
  CHECK(c.page_cache_write_bytes_per_ns <= 1000);
  CHECK(c.page_cache_bytes_per_ns > 0.05);
  CHECK(c.page_cache_bytes_per_ns <= 1000);
  CHECK(log.str().find("1 MiB pwrites (page cache, region first written in 8 KiB pwrites), all") !=
        std::string::npos);
  // The preset's rate is that of a region first written a WAL page at a time (small pages or
  // folios); the large-folio one is shown beside it, not taken.
  const std::string pc_source = j["sources"]["page_cache_write_bytes_per_ns"].get<std::string>();
  CHECK(pc_source.find("first written in 8 KiB pwrites") != std::string::npos);
  CHECK(pc_source.find("first written in 256 KiB pwrites") != std::string::npos);
  CHECK(pc_source.find("first written in 1 MiB pwrites") != std::string::npos);
  CHECK(log.str().find("region first written in 1 MiB pwrites") != std::string::npos);
  // It is the ratio measured beside the copy, times the preset's own copy rate.
  CHECK(pc_source.find("pwrite / memcpy per round") != std::string::npos);
  CHECK(pc_source.find("times copy_bytes_per_ns") != std::string::npos);
  CHECK(log.str().find("pwrite / memcpy, round by round") != std::string::npos);
  // Every measured value keeps its raw figure with its spread in "sources".
  for (const char* key :
       {"line_hit_ns", "memory_ns", "rmw_extra_ns", "fence_ns", "pause_ns", "context_switch_ns",
        "copy_bytes_per_ns", "memory_bandwidth_bytes_per_ns", "crc_bytes_per_ns", "syscall_ns",
        "fsync_ns", "page_cache_write_bytes_per_ns", "page_cache_bytes_per_ns"}) {
    INFO(key);
    CHECK(j["sources"][key].get<std::string>().find("IQR") != std::string::npos);
  }
  // The line hand-over: the CAS loop's tries per success next to the simulator's two
  // predictions; decided only when those differ by 1.5x or more.
  const std::string linger = j["sources"]["snoop_linger"].get<std::string>();
  if (topo.cpus.size() >= 2) {
    CHECK(linger.find("tries per success") != std::string::npos);
    CHECK(linger.find("predicts") != std::string::npos);
    CHECK(log.str().find("CAS loop on one word") != std::string::npos);
  }
  if (linger.find("too few CPUs") != std::string::npos) CHECK(c.snoop_linger == 0);
  // The request leg: two CPUs' fetch_add run length next to the simulator's two predictions.
  const std::string at_issue = j["sources"]["request_at_issue"].get<std::string>();
  if (at_issue.find("not measured") == std::string::npos) {
    CHECK(at_issue.find("mean run length") != std::string::npos);
    CHECK(at_issue.find("predicts") != std::string::npos);
    CHECK(log.str().find("fetch_add run length") != std::string::npos);
  }
  if (at_issue.find("undecided") != std::string::npos || at_issue.find("too close") != std::string::npos ||
      at_issue.find("nearer 0") != std::string::npos)
    CHECK(c.request_at_issue == 0);
  if (c.snoop_window_ns > 0) {  // fitted: only between the two rules, with request_at_issue 1
    CHECK(c.request_at_issue == 1);
    CHECK(at_issue.find("between the two") != std::string::npos);
  }
  // What was not measured keeps SimConfig's default.
  const SimConfig d;
  CHECK(c.time_slice_ns == d.time_slice_ns);
  CHECK(c.wake_jitter == d.wake_jitter);
  CHECK(c.stack_kib == d.stack_kib);
  CHECK(j["sources"]["time_slice_ns"].get<std::string>().find("default") != std::string::npos);
}

TEST_CASE("calibrate: the conversions make the simulator reproduce each measured event",
          "[calibrate]") {
  using namespace calibration;
  using SP = SimPlatform;
  // Made-up measurements (ns) of a machine, converted as calibrate converts them.
  SimConfig cfg;
  cfg.cores = 4;
  cfg.sockets = 1;
  cfg.wake_jitter = 0;
  cfg.context_switch_ns = 2400;
  cfg.same_socket_transfer_ns = 70;
  cfg.rmw_extra_ns = 8;
  cfg.copy_bytes_per_ns = 10;
  const uint64_t line_rmw = cfg.same_socket_transfer_ns + cfg.rmw_extra_ns;
  const double wake_to_run = 21112, post_call = 9876, overshoot = 61000;
  const double pwrite = 640, big_sync = 9.5e6, small_sync = 3.98e6;
  const size_t big = 16 << 20, small = 8192;
  cfg.semaphore_wake_ns = semaphore_wake_param(wake_to_run, line_rmw, cfg.context_switch_ns);
  cfg.semaphore_post_ns = semaphore_post_param(post_call, line_rmw);
  cfg.sleep_slack_ns = sleep_slack_param(overshoot, cfg.context_switch_ns);
  const StorageParams sp =
      storage_params(pwrite, big_sync, big, small_sync, small, cfg.copy_bytes_per_ns,
                     cfg.context_switch_ns);
  REQUIRE_FALSE(sp.instant);
  cfg.syscall_ns = sp.syscall_ns;
  cfg.storage_write_bytes_per_ns = sp.storage_write_bytes_per_ns;
  cfg.fsync_ns = sp.fsync_ns;

  // The same events, simulated: a post to a waiter blocked on another core; nanosleep(1 us); a
  // 16 MiB and an 8 KiB write, each followed by fdatasync.
  auto sem = std::make_unique<SP::Semaphore>();
  uint64_t posted = 0, post_returned = 0, woke = 0, slept = 0, big_sync_ns = 0, small_sync_ns = 0;
  Simulation sim(cfg, 1);
  sim.spawn([&] {
    sem->wait();
    woke = SP::now_ns();
  }, "waiter");
  sim.spawn([&] {
    SP::work(100000);  // the waiter is blocked by then
    posted = SP::now_ns();
    sem->post();
    post_returned = SP::now_ns();
    const uint64_t t0 = SP::now_ns();
    SP::sleep_ns(1000);
    slept = SP::now_ns() - t0;
    SP::storage_write(big);
    const uint64_t t1 = SP::now_ns();
    SP::storage_sync();
    big_sync_ns = SP::now_ns() - t1;
    SP::storage_write(small);
    const uint64_t t2 = SP::now_ns();
    SP::storage_sync();
    small_sync_ns = SP::now_ns() - t2;
  }, "poster");
  REQUIRE(sim.run().finished());
  CHECK(static_cast<double>(woke - posted) == Approx(wake_to_run).margin(1));
  CHECK(static_cast<double>(post_returned - posted) == Approx(post_call).margin(1));
  CHECK(static_cast<double>(slept) == Approx(1000 + overshoot).margin(1));
  CHECK(static_cast<double>(small_sync_ns) == Approx(small_sync).margin(2));
  // The bandwidth keeps 3 significant digits: the big transfer is off by at most 0.5%.
  CHECK(static_cast<double>(big_sync_ns) == Approx(big_sync).epsilon(0.005));

  // Buffered writes, converted and simulated: one writer measured 2.3 B/ns over 1 MiB pwrites
  // (system calls included), and four at once, one per core, 5 B/ns together (less than four
  // times one: the page cache is shared). Both made up.
  {
    const size_t mib = size_t{1} << 20, pwrites = 64;
    const double one_rate = 2.3, aggregate = 5.0;
    SimConfig pc = cfg;
    pc.page_cache_write_bytes_per_ns = page_cache_write_param(one_rate, mib, pc.syscall_ns);
    pc.page_cache_bytes_per_ns = aggregate;
    uint64_t one_writer_ns = 0, all_done = 0;
    Simulation one(pc, 1);
    one.spawn([&] {
      const uint64_t t0 = SP::now_ns();
      for (size_t i = 0; i < pwrites; ++i) SP::storage_write(mib);
      one_writer_ns = SP::now_ns() - t0;
    }, "writer");
    REQUIRE(one.run().finished());
    // 3 significant digits in the rate: within 0.5%.
    CHECK(static_cast<double>(pwrites * mib) / static_cast<double>(one_writer_ns) ==
          Approx(one_rate).epsilon(0.005));
    Simulation four(pc, 1);
    for (int w = 0; w < 4; ++w)
      four.spawn([&] {
        for (size_t i = 0; i < pwrites; ++i) SP::storage_write(mib);  // each its own file
        all_done = std::max(all_done, SP::now_ns());
      }, "writer " + std::to_string(w));
    REQUIRE(four.run().finished());
    // The four start after their dispatch (context_switch_ns); then the shared rate binds.
    const double moved = 4.0 * static_cast<double>(pwrites * mib);
    CHECK(moved / static_cast<double>(all_done - pc.context_switch_ns) ==
          Approx(aggregate).epsilon(0.01));
    // Calls no slower than their system calls leave nothing to copy: 0, the copy rate.
    CHECK(page_cache_write_param(static_cast<double>(mib) / 600.0, mib, 640) == 0);
    CHECK(page_cache_write_param(0, mib, 640) == 0);
  }

  // A memory-backed directory: both syncs take about as long; no device time.
  const StorageParams mem = storage_params(640, 30000, big, 29000, small, 10, 2400);
  CHECK(mem.instant);
  CHECK(mem.storage_write_bytes_per_ns == 0);
  CHECK(mem.fsync_ns == 29000 - 640 - 2400);
  // Subtractions that would go negative are 0, not a wrapped unsigned.
  CHECK(semaphore_wake_param(1000, 500, 2400) == 0);
  CHECK(sleep_slack_param(-5, 0) == 0);
}

TEST_CASE("calibrate: the page cache against the copy is one ratio per round of both passes",
          "[calibrate]") {
  TempDir dir;
  const calibration::PageCacheAgainstCopy r =
      calibration::page_cache_against_copy(dir.path.string(), 4 * calibration::kMiB, true);
  REQUIRE(r.ratio.size() == 6);  // quick: six rounds (three of each order), the warm-up dropped
  REQUIRE(r.copy.size() == r.ratio.size());
  REQUIRE(r.pwrite.size() == r.ratio.size());
  for (size_t i = 0; i < r.ratio.size(); ++i) {
    INFO(i);
    CHECK(r.copy[i] > 0.05);  // bytes per ns of a real pass, not 0 or a sign-flipped time
    CHECK(r.pwrite[i] > 0.05);
    CHECK(r.ratio[i] == Approx(r.pwrite[i] / r.copy[i]));
  }
  // Its temporary file is gone.
  CHECK(fs::directory_iterator(dir.path) == fs::directory_iterator());
}

TEST_CASE("calibrate: the idle-polling window is the longest idle time whose wake-ups were "
          "all priced nearer the polled charge than the halted one", "[calibrate]") {
  using calibration::idle_poll_param;
  const std::vector<double> idle = {10e3, 25e3, 50e3, 100e3, 200e3, 400e3, 800e3};
  // The polled charge on this development VM (a KVM guest): line RMW 118 ns + context switch
  // 2,384 ns (presets/vm-2core.json).
  const double polled = 118 + 2384;
  // `walbench calibrate` on that VM with guest_halt_poll_ns set to 200 us by hand (2026-12-06):
  // medians after each idle time, 46,790 ns after 2 ms (polled below sqrt(2502 * 46790) = 10.8 us).
  CHECK(idle_poll_param(idle, {2396, 2554, 2579, 3000, 5362, 35271, 37434}, 46790, polled) ==
        200000);
  // The same VM as it runs (guest_halt_poll_ns 0): every wake-up pays the exit from halt.
  CHECK(idle_poll_param(idle, {34302, 31398, 31098, 31376, 31999, 33552, 37915}, 47329, polled) ==
        0);
  // Shaped like a --quick run there without polling, whose wake-ups grew with idle time (22-23
  // us up to 100 us and 68 us after 2 ms as measured; the longer idle times' figures here are
  // made up to keep growing). Each is under half the 2 ms median but nearer 68 us than 2.5 us
  // as a ratio (above sqrt(2502 * 68000) = 13 us): not polling (the halving rule said 100000).
  CHECK(idle_poll_param(idle, {22100, 22400, 22900, 22700, 35000, 38000, 42000}, 68000, polled) ==
        0);
  // A fast wake after a slow one does not extend the window (the prefix counts).
  CHECK(idle_poll_param(idle, {2000, 30000, 2000, 2000, 2000, 2000, 2000}, 30000, polled) ==
        10000);
  // Polling through the longest idle measured: the window is at least that.
  CHECK(idle_poll_param(idle, std::vector<double>(7, 2600), 30000, polled) == 800000);
  // Under the geometric mean (sqrt(1000 * 1600) = 1265) but not under half the 2 ms median:
  // a wake-up no cheaper than that is not polled, however near the polled charge.
  CHECK(idle_poll_param(idle, std::vector<double>(7, 1100), 1600, 1000) == 0);
  CHECK_THROWS(idle_poll_param(idle, {1, 2}, 3, polled));
  // The bound calibrate's source line prints is the one the window is decided by.
  using calibration::polled_wake_bound;
  CHECK(polled_wake_bound(46790, polled) == Approx(std::sqrt(2502.0 * 46790)));
  CHECK(polled_wake_bound(1600, 1000) == Approx(800));
  CHECK(idle_poll_param(idle, std::vector<double>(7, polled_wake_bound(46790, polled)), 46790,
                        polled) == 0);
  CHECK(idle_poll_param(idle, std::vector<double>(7, polled_wake_bound(46790, polled) - 1),
                        46790, polled) == 800000);
}

TEST_CASE("calibrate: the CAS loop counts every try and every success", "[calibrate]") {
  // Two threads (unpinned when the CPU list is unknown) in the CAS loop of snoop_linger's
  // measurement: at least one try per success, and a positive rate in every sample.
  std::vector<int> cpus;
  for (const auto& c : calibration::read_topology().cpus) cpus.push_back(c.cpu);
  if (cpus.size() < 2) cpus = {-1, -1};
  cpus.resize(2);
  const calibration::CasLoopFigures m = calibration::cas_loop_contention(cpus, 3, 2e6);
  CHECK(m.tries_per_success >= 1.0);
  REQUIRE(m.successes_per_ns.size() == 3);
  for (const double r : m.successes_per_ns) CHECK(r > 0);
}

TEST_CASE("calibrate: the wait-list lock loop counts acquisitions and failed RMWs", "[calibrate]") {
  // Two threads (unpinned when the CPU list is unknown) in the TTAS loop printed beside the
  // simulator's herd prediction: every acquisition counted, a positive rate in every sample, and
  // at most one failed fetch_or per acquisition: with one other contender, each failure of a
  // thread needs an acquisition of the other's since its previous try.
  std::vector<int> cpus;
  for (const auto& c : calibration::read_topology().cpus) cpus.push_back(c.cpu);
  if (cpus.size() < 2) cpus = {-1, -1};
  cpus.resize(2);
  const calibration::TtasLockFigures m = calibration::ttas_lock_contention(cpus, 3, 2e6);
  CHECK(m.failed_rmws_per_acquisition >= 0.0);
  CHECK(m.failed_rmws_per_acquisition <= 1.0);
  REQUIRE(m.acquisitions_per_ns.size() == 3);
  for (const double r : m.acquisitions_per_ns) CHECK(r > 0);
}

TEST_CASE("calibrate: the fetch_add runs of two threads are at least one add long",
          "[calibrate]") {
  // Two threads (unpinned when the CPU list is unknown) in request_at_issue's measurement.
  const auto topo = calibration::read_topology();
  const int a = topo.cpus.size() >= 2 ? topo.cpus[0].cpu : -1;
  const int b = topo.cpus.size() >= 2 ? topo.cpus[1].cpu : -1;
  bool pinned = false;
  const std::vector<double> runs = calibration::fetch_add_run_length(a, b, 3, 20000, &pinned);
  CHECK(runs.size() <= 3);
  for (const double r : runs) {
    CHECK(r >= 1.0);
    CHECK(r <= 40000.0);
  }
}

TEST_CASE("owner_run_length: runs of one thread's values while both were adding", "[calibrate]") {
  using V = std::vector<uint8_t>;
  CHECK(owner_run_length(V{}) == 0.0);
  CHECK(owner_run_length(V{0, 0, 0}) == 0.0);        // one thread only
  CHECK(owner_run_length(V{0, 0, 1, 1}) == 0.0);     // one after the other: no overlap
  CHECK(owner_run_length(V{0, 0, 1, 0, 1, 1}) == 1.0);  // 1 0 between the lone starts and ends
  CHECK(owner_run_length(V{0, 1, 1, 1, 0, 0, 1, 0}) == Approx(6.0 / 3.0));  // 1 1 1 | 0 0 | 1
}

TEST_CASE("calibrate: the PostgreSQL-style CRC loop computes CRC-32C", "[calibrate]") {
  using namespace calibration;
  if (!have_crc32c_sse42()) {
    WARN("no SSE4.2 here: calibrate falls back to the ISA-L rate; loop not tested");
    return;
  }
  const std::string check = "123456789";
  CHECK(~crc32c_sse42_loop(0xFFFFFFFFu, check.data(), check.size()) == 0xE3069283u);
  // Every alignment and tail length agrees with the model's ISA-L CRC.
  std::vector<unsigned char> buf(4096 + 16);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<unsigned char>(i * 131 + 7);
  for (size_t off = 0; off < 8; ++off)
    for (size_t n : {0, 1, 7, 8, 9, 63, 4096}) {
      INFO("offset " << off << " length " << n);
      CHECK(~crc32c_sse42_loop(0xFFFFFFFFu, buf.data() + off, n) == crc32c(buf.data() + off, n));
    }
}

TEST_CASE("calibrate: topology from a sysfs tree", "[calibrate]") {
  using calibration::parse_cpu_list;
  CHECK(parse_cpu_list("0-3,5,7-8") == std::vector<int>{0, 1, 2, 3, 5, 7, 8});
  CHECK(parse_cpu_list("4") == std::vector<int>{4});
  CHECK(parse_cpu_list("x,2") == std::vector<int>{2});
  // 2 packages x 4 cores x 2 threads, Linux numbering (cpu c and c + 8 are siblings); each pair
  // of cores shares an L3 (AMD CCX-like clusters).
  TempDir dir;
  auto put = [&](const std::string& rel, const std::string& text) {
    const fs::path p = dir.path / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text << "\n";
  };
  put("online", "0-15");
  for (int c = 0; c < 16; ++c) {
    const int package = (c % 8) / 4, core = c % 4, pair = (c % 8) / 2;
    const std::string d = "cpu" + std::to_string(c) + "/";
    put(d + "topology/physical_package_id", std::to_string(package));
    put(d + "topology/core_id", std::to_string(core));
    put(d + "cache/index0/level", "1");
    put(d + "cache/index0/shared_cpu_list",
        std::to_string(c % 8) + "," + std::to_string(c % 8 + 8));
    put(d + "cache/index1/level", "3");
    put(d + "cache/index1/type", "Unified");
    put(d + "cache/index1/size", "32M");
    put(d + "cache/index2/level", "2");
    put(d + "cache/index2/type", "Unified");
    put(d + "cache/index2/size", "512K");
    const int a = 2 * pair, b = 2 * pair + 1;
    put(d + "cache/index1/shared_cpu_list",
        std::to_string(a) + "-" + std::to_string(b) + "," + std::to_string(a + 8) + "-" +
            std::to_string(b + 8));
  }
  const calibration::Topology t = calibration::read_topology(dir.path.string(), false);
  CHECK(t.online == 16);
  CHECK(t.cpus.size() == 16);
  CHECK(t.sockets == 2);
  CHECK(t.cores == 8);
  CHECK(t.smt == 2);
  CHECK(t.cores_per_cluster == 2);
  CHECK(t.note.empty());
  CHECK(t.cpus[9].package == 0);
  CHECK(t.cpus[9].core == 1);
  CHECK(t.cpus[9].l3 == 0);
  CHECK(t.l2_bytes == 512 * 1024);
  CHECK(t.l3_bytes == 32 * 1024 * 1024);
  CHECK(calibration::parse_cache_size("2048K") == 2048 * 1024);
  CHECK(calibration::parse_cache_size("512") == 512);
  CHECK(calibration::parse_cache_size("") == 0);
  CHECK(calibration::parse_cache_size("12X") == 0);
  // One L3 per package (Intel mesh): no clusters. 3 online cores in 2 packages: cut to 2.
  TempDir mesh;
  auto put2 = [&](const std::string& rel, const std::string& text) {
    const fs::path p = mesh.path / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text << "\n";
  };
  put2("online", "0-2");
  for (int c = 0; c < 3; ++c) {
    const std::string d = "cpu" + std::to_string(c) + "/";
    put2(d + "topology/physical_package_id", c < 2 ? "0" : "1");
    put2(d + "topology/core_id", std::to_string(c));
    put2(d + "cache/index0/level", "3");
    put2(d + "cache/index0/shared_cpu_list", c < 2 ? "0-1" : "2");
  }
  const calibration::Topology m = calibration::read_topology(mesh.path.string(), false);
  CHECK(m.sockets == 2);
  CHECK(m.cores == 2);
  CHECK(m.smt == 1);
  CHECK(m.cores_per_cluster == 0);
  CHECK(m.l2_bytes == 0);  // no size files: unknown, calibrate keeps the defaults
  CHECK(m.l3_bytes == 0);
  CHECK(m.note == "3 cores do not divide evenly into 2 sockets: cores = 2");
}

TEST_CASE("calibrate: --fsync-path none keeps the storage defaults and prints to stdout",
          "[calibrate]") {
  TempDir dir;
  const Result r = walbench("calibrate --quick --fsync-path none --name cli", dir);
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  check_preset_keys(j);
  const SimConfig d;
  CHECK(j["fsync_ns"] == d.fsync_ns);
  CHECK(j["syscall_ns"] == d.syscall_ns);
  CHECK(j["page_cache_write_bytes_per_ns"] == d.page_cache_write_bytes_per_ns);
  CHECK(j["page_cache_bytes_per_ns"] == d.page_cache_bytes_per_ns);
  CHECK(j["sources"]["fsync_ns"].get<std::string>().find("--fsync-path none") != std::string::npos);
  CHECK(j["sources"]["page_cache_bytes_per_ns"].get<std::string>().find("--fsync-path none") !=
        std::string::npos);
  CHECK(r.err.find("IQR") != std::string::npos);
}

TEST_CASE("calibrate: a bad -o or --fsync-path is one line and exit status 2", "[calibrate][cli]") {
  TempDir dir;
  const Result missing_dir = walbench("calibrate --quick -o no/such/dir/x.json", dir);
  check_bad_input(missing_dir);
  CHECK(missing_dir.err.find(
            "calibrate: -o no/such/dir/x.json: directory no/such/dir does not exist") !=
        std::string::npos);
  fs::create_directory(dir.path / "sub");
  const Result is_dir = walbench("calibrate --quick -o sub", dir);
  check_bad_input(is_dir);
  CHECK(is_dir.err.find("is a directory") != std::string::npos);
  const Result bad_fsync = walbench("calibrate --quick --fsync-path no/such/dir", dir);
  check_bad_input(bad_fsync);
  CHECK(bad_fsync.err.find("--fsync-path no/such/dir: not a directory") != std::string::npos);
}

TEST_CASE("presets: each shipped builtin preset file equals the builtin", "[presets]") {
  const fs::path presets = fs::path(WALBENCH_SOURCE_DIR) / "presets";
  for (const std::string& name : SimConfig::preset_names()) {
    INFO(name);
    const fs::path file = presets / (name + ".json");
    REQUIRE(fs::exists(file));
    check_preset_keys(nlohmann::json::parse(slurp(file)));
    const SimConfig from_file =
        SimConfig::from_json(nlohmann::json{{"preset", file.string()}}, "/platform");
    CHECK(from_file.to_json() == SimConfig::preset(name).to_json());
  }
  // A relative name not found in the current directory comes from the repository's presets/.
  CHECK(SimConfig::from_json(nlohmann::json{{"preset", "milan_2s.json"}}, "/platform").to_json() ==
        SimConfig::preset("milan_2s").to_json());
  // The measured machine ships too, and loads.
  const fs::path vm = presets / "vm-2core.json";
  REQUIRE(fs::exists(vm));
  const nlohmann::json j = nlohmann::json::parse(slurp(vm));
  check_preset_keys(j);
  CHECK(j["description"].get<std::string>().find("measured by walbench calibrate") !=
        std::string::npos);
  CHECK_NOTHROW(SimConfig::from_json(nlohmann::json{{"preset", "vm-2core.json"}}, "/platform"));
}

TEST_CASE("presets: inline keys override the file and a file may name a builtin base", "[presets]") {
  TempDir dir;
  const std::string f = dir.write("m.json", R"({"description": "test", "preset": "milan_2s",
    "cores": 32, "fsync_ns": 7, "sources": {"cores": "made up"}})");
  const SimConfig a = SimConfig::from_json(nlohmann::json{{"preset", f}}, "/platform");
  CHECK(a.cores == 32);
  CHECK(a.fsync_ns == 7);
  CHECK(a.cores_per_cluster == 8);  // from milan_2s
  const SimConfig b = SimConfig::from_json(
      nlohmann::json{{"preset", f}, {"cores", 16}, {"kind", "sim"}}, "/platform");
  CHECK(b.cores == 16);
  CHECK(b.fsync_ns == 7);
  // The same through a config, with the file next to it (relative to the current directory).
  dir.write(
      "cfg.json",
      R"({"strategy": "ideal", "platform": {"kind": "sim", "preset": "m.json", "cores": 16}})");
  const Result r = walbench("validate cfg.json", dir);
  INFO(r.err);
  CHECK(r.rc == 0);
}

TEST_CASE("presets: preset-file errors are one line naming the file and key and what was expected",
          "[presets]") {
  TempDir dir;
  const std::string missing = sim_error({{"preset", "no-such-preset.json"}});
  CHECK_THAT(missing,
             Catch::Matchers::StartsWith("/platform/preset: preset file \"no-such-preset.json\" "
                                         "not found (looked for no-such-preset.json, "));
  CHECK_THAT(missing, Catch::Matchers::Contains("presets/no-such-preset.json)"));

  const std::string typo = dir.write("typo.json", R"({"cros_socket_transfer_ns": 100})");
  CHECK(sim_error({{"preset", typo}}) ==
        "/platform/preset: " + typo +
            ": /cros_socket_transfer_ns: unknown key (did you mean 'cross_socket_transfer_ns'?)");

  const std::string type = dir.write("type.json", R"({"copy_bytes_per_ns": "fast"})");
  CHECK(sim_error({{"preset", type}}) ==
        "/platform/preset: " + type + ": /copy_bytes_per_ns: expected a number, got \"fast\"");

  const std::string range = dir.write("range.json", R"({"cores": 10, "sockets": 3})");
  CHECK(sim_error({{"preset", range}}) ==
        "/platform/preset: " + range + ": /sockets: must be >= 1 and divide cores");

  const std::string nested = dir.write("nested.json", R"({"preset": "other.json"})");
  CHECK_THAT(sim_error({{"preset", nested}}),
             Catch::Matchers::Contains(
                 nested + ": /preset: a preset file may name a builtin preset, not another file"));

  const std::string source = dir.write("source.json", R"({"sources": {"fsync": "pg_test_fsync"}})");
  CHECK(sim_error({{"preset", source}}) ==
        "/platform/preset: " + source +
            ": /sources/fsync: not a machine parameter (did you mean 'fsync_ns'?)");

  const std::string syntax = dir.write("syntax.json", "{\"cores\": 4,}");
  CHECK_THAT(sim_error({{"preset", syntax}}),
             Catch::Matchers::StartsWith("/platform/preset: " + syntax +
                                         ": invalid JSON: parse error at line 1"));

  const std::string dup = dir.write("dup.json", R"({"cores": 4, "cores": 8})");
  CHECK(sim_error({{"preset", dup}}) == "/platform/preset: " + dup + ": /cores: duplicate key");

  // "description" and "sources" belong to preset files only.
  CHECK_THAT(sim_error({{"description", "x"}}),
             Catch::Matchers::StartsWith("/platform/description: unknown key"));

  // Through a config and the CLI: one line, exit status 2, the config's pointer then the file's.
  dir.write("cfg.json",
            R"({"strategy": "ideal", "platform": {"kind": "sim", "preset": "type.json"}})");
  const Result r = walbench("validate cfg.json", dir);
  check_bad_input(r);
  CHECK_THAT(r.err,
             Catch::Matchers::Contains("cfg.json: /platform/preset: type.json: /copy_bytes_per_ns: "
                                       "expected a number, got \"fast\""));
  dir.write("cfg2.json",
            R"({"strategy": "ideal", "platform": {"kind": "sim", "preset": "nope.json"}})");
  const Result r2 = walbench("validate cfg2.json", dir);
  check_bad_input(r2);
  CHECK_THAT(r2.err, Catch::Matchers::Contains(
                         "cfg2.json: /platform/preset: preset file \"nope.json\" not found"));
  // An inline error names the key's pointer.
  dir.write("cfg3.json", R"({"strategy": "ideal", "platform": {"kind": "sim", "cores": 0}})");
  const Result r3 = walbench("validate cfg3.json", dir);
  check_bad_input(r3);
  CHECK_THAT(r3.err, Catch::Matchers::Contains("cfg3.json: /platform/cores: must be in [1, 4096]"));
}

}  // namespace walbench

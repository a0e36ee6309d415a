// Shared body of the conformance suites (tests/*conformance*_test.cc): the list of strategy
// variants, a stress cell spec, and a minimal runner that starts the clients, stops them, flushes
// and verifies. A new strategy or policy joins by adding its variants here or by a test case
// that calls run_cell() with its own spec.
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <unistd.h>
#include <string>
#include <thread>
#include <vector>

#include "core/cell/cell.h"
#include "core/cell/spec.h"
#include "strategies/strategy.h"

namespace walbench::conformance {


struct Variant {
  std::string strategy;
  nlohmann::json params;
};

inline std::vector<Variant> all_variants() {
  std::vector<Variant> v;
  for (const StrategyInfo& s : strategies()) {
    if (s.name == "insert_locks") {
      for (const char* ia : {"waitlist", "atomic", "atomic_fastpath"})
        for (const char* lc : {"procno", "random_stride"})
          for (int n : {1, 8})
            v.push_back({s.name, {{"num_locks", n}, {"insertingat", ia}, {"lock_choice", lc}}});
      // The xlog.c surroundings chosen apart from insertingAt (the 2023 patch on PG 16's, as the
      // sim-insert-locks-* configs run it, and the other mix).
      v.push_back({s.name, {{"insertingat", "atomic_fastpath"}, {"xlog", "pg16"}}});
      v.push_back({s.name, {{"insertingat", "waitlist"}, {"xlog", "pg17"}}});
    } else if (s.name == "lockfree_reserve") {
      for (const char* pl : {"next_header", "hash_table", "hash_table_offset"})
        for (const char* ia : {"waitlist", "atomic_fastpath"})
          for (int n : {1, 8})
            v.push_back({s.name, {{"num_locks", n}, {"insertingat", ia}, {"prev_link", pl}}});
      v.push_back({s.name, {{"num_locks", 8}, {"lock_choice", "random_stride"}, {"prev_link", "next_header"}}});
      v.push_back({s.name, nlohmann::json::object()});  // the defaults: what a config gets
      v.push_back({s.name, {{"insertingat", "atomic_fastpath"}, {"xlog", "pg16"}}});
    } else if (s.name == "link_buf") {
      for (const char* pl : {"next_header", "hash_table", "hash_table_offset"})
        for (const char* ta : {"waiter", "inserter"})
          v.push_back({s.name, {{"prev_link", pl}, {"tail_advancer", ta}}});
      // A ring of 2 slots (16 bytes of WAL): publishing waits for the tail nearly always.
      for (const char* ta : {"waiter", "inserter"})
        v.push_back({s.name, {{"ring_slots", 2}, {"tail_advancer", ta}, {"spin_rounds", 0},
                              {"prev_link", "next_header"}}});
      v.push_back({s.name, nlohmann::json::object()});  // the defaults: what a config gets
    } else if (s.name == "per_client_progress") {
      for (const char* pl : {"hash_table", "hash_table_offset"})
        v.push_back({s.name, {{"prev_link", pl}}});
    } else if (s.name == "write_group") {
      for (const char* copy : {"leader", "parallel"})
        for (int cap : {64, 1 << 20})  // 64 B: groups of one or two; 1 MiB: the default
          v.push_back({s.name, {{"copy", copy}, {"max_group_bytes", cap}}});
      // no yield phase (spin, then block at once), and the fixed (non-adaptive) yield phase
      v.push_back({s.name, {{"copy", "parallel"}, {"max_yield_us", 0}, {"spin_count", 0}}});
      v.push_back({s.name, {{"adaptive_yield", false}}});
    } else if (s.name == "consolidation_array") {
      for (int n : {1, 3})
        for (bool delegated : {false, true})
          v.push_back({s.name, {{"slots", n}, {"delegated_release", delegated}}});
    } else {
      v.push_back({s.name, nlohmann::json::object()});
    }
  }
  return v;
}

// Drives a self-driving (simulated) cell for `seconds` of virtual time from its start, no
// warm-up, no progress lines; the run must not fail.
inline DrivenRun drive_from_start(CellRun& cell, RunControl& ctl, RunSpec rs, double seconds) {
  rs.warmup_s = 0;
  rs.duration_s = seconds;
  rs.progress_interval_s = 0;
  DrivenRun d = cell.drive(ctl, rs);
  INFO("drive: " << d.error);
  REQUIRE(d.error.empty());
  return d;
}

struct Outcome {
  DrivenRun driven;  // simulated platform: what drive() observed
  uint64_t txns = 0;
  VerifyResult verify;
  nlohmann::json model;
  WindowTotals window;  // the whole run is the window here
};

// On real threads, min_txns > 0 keeps the clients running past `seconds` until they have
// committed that many transactions together (at most 30 x seconds): what a check needs to
// happen must not depend on how loaded the machine is (an overloaded CI machine under TSan ran
// too few transactions in 0.1 s for the tiny CLOG to turn over in 16% of the cells).
inline Outcome run_cell(const CellSpec& spec, double seconds, uint64_t min_txns = 0) {
  const StrategyInfo* info = find_strategy(spec.strategy);
  REQUIRE(info != nullptr);
  REQUIRE(info->make_cell != nullptr);
  auto cell = info->make_cell(spec, spec.run.seed);
  RunControl ctl(spec.clients);
  ctl.measuring = true;  // counters over the whole run (on the sim, drive() opens it at 0)
  Outcome o;
  if (cell->drives_itself()) {
    o.driven = drive_from_start(*cell, ctl, spec.run, seconds);  // simulated platform
  } else {
    std::vector<std::thread> threads;
    for (uint32_t i = 0; i < spec.clients; ++i)
      threads.emplace_back([&, i] { cell->client_main(i, ctl); });
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    auto committed = [&] {
      uint64_t n = 0;
      for (auto& c : ctl.counters) n += c.txns.load();
      return n;
    };
    for (int extra = 0; extra < 290 && committed() < min_txns; ++extra)
      std::this_thread::sleep_for(std::chrono::duration<double>(seconds / 10));
    ctl.stop = true;
    for (auto& t : threads) t.join();
  }
  cell->finish();
  for (auto& c : ctl.counters) o.txns += c.txns.load();
  o.verify = cell->verify();
  o.model = cell->model_stats();
  o.window = cell->window_totals();
  return o;
}

// A scratch directory for "file" storage private to this test process (ctest runs test cases of
// several processes at once; a shared directory would be removed under another's feet).
inline std::filesystem::path scratch_dir(const std::string& name) {
  return std::filesystem::temp_directory_path() /
         (name + "-" + std::to_string(static_cast<long>(::getpid())));
}

// The memory storage's ring in every conformance cell: the smallest a config may ask for. The
// streaming verifier must keep up with a writer that recycles it often (the writer waits for it
// when it lags), and a cell does not spend its time clearing 64 MiB: under ThreadSanitizer that
// memset cost about a second per cell, more than the cell's run.
inline constexpr uint32_t kStressMemoryMb = 4;

inline CellSpec stress_spec(const Variant& v) {
  CellSpec spec;
  spec.strategy = v.strategy;
  spec.strategy_params = v.params;
  spec.clients = 6;  // more than the 2 cores CI has
  spec.wal.page_size = 1024;
  spec.wal.segment_size = 8192;  // 8 pages: records cross segments often
  spec.wal.wal_buffers = 4;      // a ring of 4 pages: constant eviction
  spec.wal.memory_mb = kStressMemoryMb;
  spec.workload.record_size.kind = SizeSpec::Kind::kUniform;
  spec.workload.record_size.min = 1;
  spec.workload.record_size.max = 65536;  // up to 64 KiB: 16x the ring
  spec.commit.wal_writer_delay_ms = 1;
  spec.run.seed = 42;
  return spec;
}

inline std::string describe(const Variant& v, const CellSpec& s) {
  return v.strategy + " " + v.params.dump() + " sync=" +
         std::to_string(s.commit.synchronous_commit) + " storage=" + s.wal.storage +
         " transactional=" + std::to_string(s.workload.transactional);
}


}  // namespace walbench::conformance

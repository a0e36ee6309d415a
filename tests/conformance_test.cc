// Conformance suite: one correctness body run against every registered strategy (and every
// variant of its parameters) on the threads platform. Adding a strategy to the registry adds it
// here (CONVENTIONS.md: "a new strategy gets the whole conformance suite by adding one line").
//
// What it proves, for each case: more clients than cores insert records whose sizes cross pages
// and segments (and exceed the whole buffer ring) into a tiny ring, with synchronous and
// asynchronous commit, into memory and file storage; then the verifier walks the WAL and finds
// valid page headers, valid CRCs, every prev link right, no gap, and every client's records once
// and in order. A wait_insertions() that returned a position below an unfinished insertion would
// let the writer store a half-copied record (storage is written once per byte), which the
// verifier reports as a CRC or header error.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "harness/cell.h"
#include "harness/spec.h"
#include "strategies/strategy.h"

using namespace walbench;

namespace {

struct Variant {
  std::string strategy;
  nlohmann::json params;
};

std::vector<Variant> all_variants() {
  std::vector<Variant> v;
  for (const StrategyInfo& s : strategies()) {
    if (s.name == "insert_locks") {
      for (const char* ia : {"waitlist", "atomic", "atomic_fastpath"})
        for (const char* lc : {"procno", "random_stride"})
          for (int n : {1, 8})
            v.push_back({s.name, {{"num_locks", n}, {"insertingat", ia}, {"lock_choice", lc}}});
    } else {
      v.push_back({s.name, nlohmann::json::object()});
    }
  }
  return v;
}

struct Outcome {
  uint64_t txns = 0;
  VerifyResult verify;
  nlohmann::json model;
};

Outcome run_cell(const CellSpec& spec, double seconds) {
  const StrategyInfo* info = find_strategy(spec.strategy);
  REQUIRE(info != nullptr);
  REQUIRE(info->make_cell != nullptr);
  auto cell = info->make_cell(spec, spec.run.seed);
  RunControl ctl(spec.clients);
  std::vector<std::thread> threads;
  for (uint32_t i = 0; i < spec.clients; ++i)
    threads.emplace_back([&, i] { cell->client_main(i, ctl); });
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  ctl.stop = true;
  for (auto& t : threads) t.join();
  cell->finish();
  Outcome o;
  for (auto& c : ctl.counters) o.txns += c.txns.load();
  o.verify = cell->verify();
  o.model = cell->model_stats();
  return o;
}

CellSpec stress_spec(const Variant& v) {
  CellSpec spec;
  spec.strategy = v.strategy;
  spec.strategy_params = v.params;
  spec.clients = 6;  // more than the 2 cores CI has
  spec.wal.page_size = 1024;
  spec.wal.segment_size = 8192;  // 8 pages: records cross segments often
  spec.wal.wal_buffers = 4;      // a ring of 4 pages: constant eviction
  spec.workload.record_size.kind = SizeSpec::Kind::kUniform;
  spec.workload.record_size.min = 1;
  spec.workload.record_size.max = 65536;  // up to 64 KiB: 16x the ring
  spec.commit.wal_writer_delay_ms = 1;
  spec.run.seed = 42;
  return spec;
}

std::string describe(const Variant& v, const CellSpec& s) {
  return v.strategy + " " + v.params.dump() + " sync=" +
         std::to_string(s.commit.synchronous_commit) + " storage=" + s.wal.storage +
         " transactional=" + std::to_string(s.workload.transactional);
}

}  // namespace

TEST_CASE("every strategy passes the verifier under stress", "[conformance]") {
  const auto dir = std::filesystem::temp_directory_path() / "walbench-conformance";
  for (const Variant& v : all_variants()) {
    for (int mode = 0; mode < 4; ++mode) {
      CellSpec spec = stress_spec(v);
      spec.commit.synchronous_commit = (mode & 1) == 0;
      spec.workload.transactional = mode != 3;
      if (mode & 2) {
        spec.wal.storage = "file";
        spec.wal.path = dir.string();
        spec.wal.fsync = false;
      }
      INFO(describe(v, spec));
      const Outcome o = run_cell(spec, 0.15);
      INFO("verify: " << o.verify.error << " model: " << o.model.dump());
      CHECK(o.txns > 0);
      CHECK(o.verify.ok);
      CHECK(o.verify.records > 0);
      // The tiny ring must actually have been recycled.
      CHECK(o.model.at("pages_initialised").get<uint64_t>() > 4);
    }
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("default geometry with small records and many clients", "[conformance]") {
  for (const Variant& v : all_variants()) {
    CellSpec spec;
    spec.strategy = v.strategy;
    spec.strategy_params = v.params;
    spec.clients = 16;
    spec.wal.wal_buffers = 8;
    spec.workload.record_size.value = 16;
    spec.workload.transactional = true;
    spec.commit.synchronous_commit = false;
    spec.commit.wal_writer_delay_ms = 1;
    INFO(describe(v, spec));
    const Outcome o = run_cell(spec, 0.1);
    INFO("verify: " << o.verify.error);
    CHECK(o.txns > 0);
    CHECK(o.verify.ok);
    // Every transaction wrote a message and a commit record.
    CHECK(o.verify.records == 2 * o.txns);
  }
}

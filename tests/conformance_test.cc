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

#include "tests/conformance.h"

using namespace walbench;
using namespace walbench::conformance;


TEST_CASE("the conformance list runs every strategy's default parameters", "[conformance]") {
  // A config that names a strategy without params gets its defaults: that combination, above
  // all, must be among the variants the suites run.
  const std::vector<Variant> variants = all_variants();
  for (const StrategyInfo& s : strategies()) {
    INFO(s.name);
    nlohmann::json defaults = nlohmann::json::object();
    for (const ParamSpec& p : s.params) defaults[p.name] = p.default_value;
    bool found = false;
    for (const Variant& v : variants) {
      if (v.strategy != s.name) continue;
      nlohmann::json filled = defaults;
      for (auto it = v.params.begin(); it != v.params.end(); ++it) filled[it.key()] = it.value();
      found = found || filled == defaults;
    }
    CHECK(found);
  }
}

TEST_CASE("every strategy passes the verifier under stress", "[conformance]") {
  const auto dir = scratch_dir("walbench-conformance");
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
    spec.wal.memory_mb = kStressMemoryMb;
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

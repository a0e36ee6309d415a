// What platform "postgres" makes of pgbench's per-transaction log and of pg_stat_activity
// (harness/postgres_run.h): the window's transactions and latencies, the progress points, the
// wait-event names. The runs against a real server are in harness/postgres_cli_test.cc.
#include "harness/postgres_run.h"

#include <catch2/catch.hpp>

#include "harness/measure.h"

namespace walbench {
namespace {

PgbenchLogEntry entry(uint32_t client, double latency_us, double end_s, bool failed = false) {
  PgbenchLogEntry e;
  e.client = client;
  e.latency_us = latency_us;
  e.end_s = end_s;
  e.failed = failed;
  return e;
}

}  // namespace

TEST_CASE("pgbench 15 log lines are read, others refused", "[postgres][run]") {
  // Captured from pgbench 15 -l: client_id transaction_no latency_us script_no epoch us.
  const auto e = parse_pgbench_log_line("3 117 1843 0 1764653011 250123");
  REQUIRE(e);
  CHECK(e->client == 3);
  CHECK(!e->failed);
  CHECK(e->latency_us == 1843);
  CHECK(e->end_s == Approx(1764653011.250123).epsilon(1e-12));
  const auto f = parse_pgbench_log_line("0 5 failed 0 1764653011 1");
  REQUIRE(f);
  CHECK(f->failed);
  CHECK(!parse_pgbench_log_line("progress: 1.0 s, 247.0 tps"));
  CHECK(!parse_pgbench_log_line("0 5 fast 0 1764653011 1"));
  CHECK(!parse_pgbench_log_line(""));
}

TEST_CASE("the window counts the transactions that ended inside it", "[postgres][run]") {
  const std::vector<PgbenchLogEntry> log = {
      entry(0, 1000, 99.9),          // warm-up
      entry(0, 2000, 100.0),         // at the opening edge: inside
      entry(1, 4000, 100.5),
      entry(1, 0, 100.6, true),      // failed
      entry(0, 6000, 101.0),         // at the closing edge: inside
      entry(1, 8000, 101.01),        // after
  };
  RunControl ctl(3);
  const LogWindow w = log_window(log, 100.0, 101.0, ctl);
  CHECK(w.txns_per_client == std::vector<uint64_t>{2, 1, 0});
  CHECK(w.failed == 1);
  CHECK(w.run_txns == 5);
  const LatencySummaryMs lat = summarize_latency(ctl.counters);
  CHECK(lat.count == 3);
  CHECK(lat.mean == Approx(4.0));  // (2 + 4 + 6) ms / 3
}

TEST_CASE("progress points come from the log per whole interval", "[postgres][run]") {
  const std::vector<PgbenchLogEntry> log = {entry(0, 1000, 10.2), entry(0, 3000, 10.4),
                                            entry(0, 5000, 11.7), entry(0, 7000, 12.9)};
  const auto p = log_progress(log, 10.0, 12.5, 1.0);  // 2 whole intervals; 12.9 is past them
  REQUIRE(p.size() == 2);
  CHECK(p[0]["t"] == 1.0);
  CHECK(p[0]["tps"] == 2.0);
  CHECK(p[0]["lat_ms"].get<double>() == Approx(2.0));
  CHECK(p[0]["stddev_ms"].get<double>() == Approx(1.0));
  CHECK(p[1]["tps"] == 1.0);
  CHECK(p[1]["stddev_ms"].get<double>() == Approx(0.0));
  const auto empty = log_progress({}, 10.0, 12.0, 1.0);
  REQUIRE(empty.size() == 2);
  CHECK(empty[0]["tps"] == 0.0);
  CHECK(empty[0]["lat_ms"].is_null());
  CHECK(log_progress(log, 10.0, 12.0, 0).empty());
}

TEST_CASE("wait events get the model's names where it has them", "[postgres][run]") {
  CHECK(model_wait_event_name("", "") == "CPU");
  CHECK(model_wait_event_name("LWLock", "WALInsert") == "LWLock:wal_insert");
  CHECK(model_wait_event_name("LWLock", "XactSLRU") == "LWLock:CLogControlLock");
  CHECK(model_wait_event_name("LWLock", "WALWrite") == "LWLock:WALWrite");
  CHECK(model_wait_event_name("Client", "ClientRead") == "Client:ClientRead");
  CHECK(model_wait_event_name("IO", "WALSync") == "IO:WALSync");
  CHECK(model_wait_event_name("IPC", "ProcArrayGroupUpdate") == "IPC:ProcArrayGroupUpdate");
}

}  // namespace walbench

// The cells of platform "postgres" (issue 13): pgbench drives a real server, walbench watches
// it through libpq and writes the same repetition entry as the model's platforms
// (harness/RESULTS.md "platform postgres"), so that report, compare and plot read it unchanged.
//
// Servers. PostgresRuns owns the server of a run: a throwaway cluster (postgres_server.h) started
// at the first postgres cell and kept while the following cells want the same one (bindir,
// settings, segment size, wal_dir); a cell that wants another (a swept wal_buffers, another
// build) stops it and starts a fresh one. With platform.dsn no server is started. The
// destructor stops the server, so the end of a run, an error and an interrupted run
// (harness/interrupt.h: run_matrix returns) all leave nothing behind.
//
// Data. emit_message needs no table. simple_update and tpcb_like get `pgbench -i -s SCALE` once
// per server and scale. On a dsn server walbench refuses to run them when pgbench's tables are
// there already (they would be someone else's: pgbench -i drops them) and drops the ones it
// created at the end.
//
// One repetition, in order:
//   1. pg_stat_wal is read, then pgbench starts (-c/-j clients, -T warm-up + duration + 0.5 s
//      rounded up to whole seconds, so that pgbench outlives the window even when its clock
//      starts late; -l: every transaction logged with its latency and end time).
//   2. The monitor loop (this thread) relays pgbench's -P progress lines as walbench's, opens the
//      timed window after warm-up (wall clock, pg_current_wal_insert_lsn()), samples the
//      clients' wait events from pg_stat_activity every 10 ms inside it, closes it duration_s
//      later, and kills pgbench when a signal arrives or it overruns its -T by the watchdog.
//   3. After pgbench exits and its backends are gone, pg_stat_wal is read again.
//   4. The numbers: tps, latency and per-client counts from the transactions of the log that
//      ended inside the window; bytes_per_s from the window's LSN difference; progress points
//      from the log at run.progress_interval_s; per_txn from pg_stat_wal over the whole pgbench
//      run (warm-up included: backends report their WAL counters when they go idle, at most
//      once a second, and at exit, so only the whole run is exact) divided by its transactions.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/cell/spec.h"
#include "harness/repetition.h"

namespace walbench {

class PostgresServer;

// One line of pgbench's per-transaction log (pgbench -l, PostgreSQL 15):
// "client_id transaction_no latency_us script_no time_epoch time_us".
struct PgbenchLogEntry {
  uint32_t client = 0;
  bool failed = false;     // "failed" / "skipped" in the latency column
  double latency_us = 0;
  double end_s = 0;        // when the transaction ended, seconds since the Unix epoch
};
// Parses one line; nullopt for a line that is not one (named by the caller's error).
std::optional<PgbenchLogEntry> parse_pgbench_log_line(const std::string& line);

// The window's numbers from the log: transactions that ended in [open_s, close_s]; their
// latencies go into ctl.counters (one per client, as the model's clients record theirs).
struct LogWindow {
  std::vector<uint64_t> txns_per_client;  // in the window
  uint64_t failed = 0;                    // failed transactions in the window
  uint64_t run_txns = 0;                  // successful transactions over the whole log
};
LogWindow log_window(const std::vector<PgbenchLogEntry>& log, double open_s, double close_s,
                     RunControl& ctl);

// Progress points {"t", "tps", "lat_ms", "stddev_ms"} of every whole `interval_s` since
// `start_s` up to `end_s`, from the transactions that ended in each (as the threads platform:
// a final partial interval is not reported; no transaction: null latency).
nlohmann::ordered_json log_progress(const std::vector<PgbenchLogEntry>& log, double start_s,
                                    double end_s, double interval_s);

// The model's name of a pg_stat_activity wait event ("LWLock:WALInsert" -> "LWLock:wal_insert",
// core/proc.h), the server's own name where the model has none; "CPU" for an active backend
// that waits on nothing.
std::string model_wait_event_name(const std::string& type, const std::string& event);

class PostgresRuns {
 public:
  PostgresRuns();
  ~PostgresRuns();  // finish(); errors go to stderr
  PostgresRuns(const PostgresRuns&) = delete;
  PostgresRuns& operator=(const PostgresRuns&) = delete;

  // One repetition of a postgres cell; the runner records it as any other (repetition.h).
  // Starts the server the cell needs first; a server that cannot start fails the cell.
  RepResult run_repetition(const CellSpec& cell, uint64_t seed, bool quiet, std::ostream& err);

  // Drops the tables walbench created on a dsn server, stops the throwaway server and removes
  // it. Idempotent; throws PostgresError when something is left behind.
  void finish();

 private:
  struct Server;
  Server& server_for(const CellSpec& cell, std::ostream& err, bool quiet);
  Server& start_server(const CellSpec& cell, const std::string& key, const std::string& bindir,
                       std::ostream& err, bool quiet);

  std::unique_ptr<Server> server_;
  std::string failed_key_, failed_error_;  // the last server that could not be started, and why
};

}  // namespace walbench

// pgbench as the client driver of platform "postgres" (issue 13, load): the command line and
// custom script of a cell's workload, and pgbench's output parsed. harness/postgres_run.h runs
// it against the server of harness/postgres_server.h.
//
// Workloads: emit_message = a custom script, one `SELECT pg_logical_emit_message(T, 'walbench',
// repeat('0', N))` per transaction (T = workload.transactional; a uniform size draws N with
// pgbench's random()); simple_update = the builtin simple-update (-N); tpcb_like = the builtin
// tpcb-like. Exponential sizes and savepoints are refused with a PostgresError until they have
// a script whose WAL matches the model's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/cell/spec.h"

namespace walbench {

// The custom script of a workload, "" for pgbench's builtin ones; throws PostgresError for a
// workload pgbench cannot run yet.
std::string pgbench_script(const WorkloadSpec& workload);

// pgbench -i's argv for the cell's tables: scale workload.scale, and --unlogged-tables with
// workload.tables "unlogged" (quiet; the database is the last argument).
std::vector<std::string> pgbench_init_args(const CellSpec& cell, const std::string& bindir,
                                           const std::string& host, int port);

// pgbench's arguments (argv[0] = BINDIR/pgbench) for `clients` clients over `seconds`, with a
// progress line per `progress_s` (0: none), against the server at `host` (a socket directory)
// and `port` as user walbench; `script_path` is where pgbench_script() was written ("" for a
// builtin workload).
std::vector<std::string> pgbench_args(const CellSpec& cell, const std::string& bindir,
                                      const std::string& host, int port,
                                      const std::string& script_path, int seconds,
                                      int progress_s);

// What a pgbench run printed: the summary (stdout) and the progress lines (stderr).
struct PgbenchResult {
  struct Progress {
    double at_s = 0;  // end of the interval since the start
    double tps = 0;
    double latency_ms = 0;
    double latency_stddev_ms = 0;
    uint64_t failed = 0;
  };
  uint64_t clients = 0;
  uint64_t transactions = 0;  // "number of transactions actually processed"
  uint64_t failed = 0;        // "number of failed transactions"
  double latency_ms = 0;      // "latency average"
  double latency_stddev_ms = 0;
  double initial_connection_ms = 0;
  double tps = 0;             // "tps = X (without initial connection time)"
  std::vector<Progress> progress;
};

// Parses pgbench 15's output; throws PostgresError naming the first summary line that is
// missing, with pgbench's own error line when it printed one.
PgbenchResult parse_pgbench_output(const std::string& stdout_text, const std::string& stderr_text);

}  // namespace walbench

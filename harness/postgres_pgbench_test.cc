// pgbench's command lines, scripts and output (harness/postgres_pgbench.h). The output is
// pgbench 15.18's, captured from a 3-second emit_message run on this repository's dev machine.
#include "harness/postgres_pgbench.h"

#include <algorithm>
#include <string>

#include <catch2/catch.hpp>

#include "harness/postgres_server.h"

namespace walbench {
namespace {

const char* const kStdout =
    "pgbench (15.18 (Debian 15.18-0+deb12u1))\n"
    "transaction type: /tmp/walbench-sample-g8zv4j/emit.sql\n"
    "scaling factor: 1\n"
    "query mode: simple\n"
    "number of clients: 2\n"
    "number of threads: 2\n"
    "maximum number of tries: 1\n"
    "duration: 3 s\n"
    "number of transactions actually processed: 719\n"
    "number of failed transactions: 0 (0.000%)\n"
    "latency average = 8.327 ms\n"
    "latency stddev = 8.249 ms\n"
    "initial connection time = 7.891 ms\n"
    "tps = 239.906973 (without initial connection time)\n";
const char* const kStderr =
    "starting vacuum...end.\n"
    "progress: 1.0 s, 247.0 tps, lat 8.045 ms stddev 4.784, 0 failed\n"
    "progress: 2.0 s, 220.4 tps, lat 8.993 ms stddev 13.096, 0 failed\n";

TEST_CASE("pgbench 15's summary and progress lines are read", "[postgres][pgbench]") {
  const PgbenchResult r = parse_pgbench_output(kStdout, kStderr);
  CHECK(r.clients == 2);
  CHECK(r.transactions == 719);
  CHECK(r.failed == 0);
  CHECK(r.latency_ms == Approx(8.327));
  CHECK(r.latency_stddev_ms == Approx(8.249));
  CHECK(r.initial_connection_ms == Approx(7.891));
  CHECK(r.tps == Approx(239.906973));
  REQUIRE(r.progress.size() == 2);
  CHECK(r.progress[1].at_s == Approx(2.0));
  CHECK(r.progress[1].tps == Approx(220.4));
  CHECK(r.progress[1].latency_ms == Approx(8.993));
  CHECK(r.progress[1].latency_stddev_ms == Approx(13.096));
}

TEST_CASE("a pgbench that failed is one line naming its error", "[postgres][pgbench]") {
  try {
    parse_pgbench_output("", "pgbench: error: connection to server on socket \"/x/.s.PGSQL.5\" "
                             "failed: No such file or directory\n");
    FAIL("no error");
  } catch (const PostgresError& e) {
    const std::string what = e.what();
    CHECK(what.rfind("pgbench printed no \"number of clients: \" line: pgbench: error: connection", 0) == 0);
    CHECK(what.find('\n') == std::string::npos);
  }
  CHECK_THROWS_AS(parse_pgbench_output(kStdout, "progress: soon\n"), PostgresError);
}

TEST_CASE("each workload's pgbench script and arguments", "[postgres][pgbench]") {
  CellSpec c;
  c.clients = 4;
  c.workload.record_size.value = 1024;
  CHECK(pgbench_script(c.workload) ==
        "SELECT pg_logical_emit_message(true, 'walbench', repeat('0', 1024));\n");
  c.workload.transactional = false;
  c.workload.record_size = SizeSpec{SizeSpec::Kind::kUniform, 0, 16, 16384};
  CHECK(pgbench_script(c.workload) ==
        "\\set n random(16, 16384)\n"
        "SELECT pg_logical_emit_message(false, 'walbench', repeat('0', :n));\n");
  auto args = pgbench_args(c, "/b", "/sock", 5433, "/s.sql", 7, 1);
  CHECK(args == std::vector<std::string>{"/b/pgbench", "-h", "/sock", "-p", "5433", "-U", "walbench",
                                         "-c", "4", "-j", "4", "-T", "7", "-P", "1", "-n", "-f",
                                         "/s.sql", "postgres"});
  c.workload.name = "simple_update";
  CHECK(pgbench_script(c.workload).empty());
  args = pgbench_args(c, "/b", "/sock", 5433, "", 7, 0);
  CHECK(std::find(args.begin(), args.end(), "-N") != args.end());
  CHECK(std::find(args.begin(), args.end(), "-P") == args.end());
  c.workload.name = "tpcb_like";
  args = pgbench_args(c, "/b", "/sock", 5433, "", 7, 1);
  CHECK(std::find(args.begin(), args.end(), "tpcb-like") != args.end());
  CHECK(pgbench_init_args(c, "/b", "/sock", 5433) ==
        std::vector<std::string>{"/b/pgbench", "-h", "/sock", "-p", "5433", "-U", "walbench", "-i",
                                 "-q", "-s", "1", "postgres"});
  c.workload.scale = 100;
  c.workload.unlogged_tables = true;  // pgbench -i --unlogged-tables (workload.tables)
  CHECK(pgbench_init_args(c, "/b", "/sock", 5433) ==
        std::vector<std::string>{"/b/pgbench", "-h", "/sock", "-p", "5433", "-U", "walbench", "-i",
                                 "-q", "-s", "100", "--unlogged-tables", "postgres"});
  c.workload.name = "savepoints";
  CHECK_THROWS_WITH(pgbench_script(c.workload), Catch::Contains("has no pgbench script yet"));
  c.workload.name = "emit_message";
  c.workload.record_size = SizeSpec{SizeSpec::Kind::kExponential, 0, 16, 16384, 256};
  CHECK_THROWS_WITH(pgbench_script(c.workload), Catch::Contains("no pgbench equivalent"));
}

}  // namespace
}  // namespace walbench

// platform "postgres" end to end through the walbench binary (harness/postgres_run.h): a tiny
// run starts a throwaway cluster, runs pgbench, writes cells that `report` prints, and leaves
// no process and no directory behind; a run against an existing server (platform.dsn) creates
// and drops only its own tables; a real SIGINT mid-run leaves nothing behind and a whole
// result file. Skipped, with a message, where PostgreSQL's programs are not installed
// (scripts/setup.sh --with-postgres). Each takes a few seconds.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>
#include <libpq-fe.h>
#include <nlohmann/json.hpp>

#include "harness/postgres_config.h"
#include "harness/postgres_server.h"
#include "harness/postgres_test_support.h"
#include "tests/spawn_walbench.h"
#include "tests/temp_dir.h"


namespace walbench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using testing::TempDir;
using testing::slurp;

bool postgres_installed() { return !testing::postgres_bindir_or_skip().empty(); }

// The tests' TMPDIR, where walbench puts the cluster and pgbench's files: what must be empty
// after a run. Mode 0755 so that the server's OS user (nobody, under root) can traverse it.
struct ScratchTmp {
  TempDir dir;
  ScratchTmp() { ::chmod(dir.path.c_str(), 0755); }
  std::vector<std::string> left() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir.path)) names.push_back(e.path().filename());
    return names;
  }
};

// `walbench ARGS` in `cwd` with TMPDIR=tmp, stdout and stderr to files, SIGINT at its default.
struct Child : testing::WalbenchProcess {
  Child(const TempDir& cwd, const std::string& tmp, const std::vector<std::string>& args)
      : WalbenchProcess(WALBENCH_BINARY, args, cwd.path, cwd.file("walbench.out"),
                        cwd.file("walbench.err"), {"TMPDIR=" + tmp}) {}
  // Waits for `text` on stderr; false when walbench ended first or after `limit_s`.
  bool wait_for_err(const std::string& text, double limit_s = 60) {
    const auto end = Clock::now() + std::chrono::duration<double>(limit_s);
    while (Clock::now() < end) {
      if (err().find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  // The exit status (-1: killed), killing walbench after `limit_s`.
  int wait_exit(double limit_s = 120) {
    const auto end = Clock::now() + std::chrono::duration<double>(limit_s);
    int status = 0;
    while (::waitpid(pid, &status, WNOHANG) == 0) {
      if (Clock::now() > end) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        pid = -1;
        FAIL("walbench did not end within " << limit_s << " s; stderr: " << err());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    pid = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
};

// A tiny matrix: emit_message, 16 B, the given clients; pgbench -T 1 per cell.
std::string tiny_config(const std::string& clients, double warmup_s, double duration_s) {
  return R"({"platform": {"kind": "postgres", "max_connections": 20},
    "workload": {"name": "emit_message", "record_size": 16},
    "wal": {"fsync": false},
    "run": {"warmup_s": )" + std::to_string(warmup_s) + R"(, "duration_s": )" +
         std::to_string(duration_s) + R"(, "progress_interval_s": 0.25, "verify": false},
    "matrix": {"clients": )" + clients + "}}";
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

void check_nothing_left(const ScratchTmp& tmp) {
  INFO("left in TMPDIR: " << joined(tmp.left()));
  CHECK(tmp.left().empty());
  CHECK(processes_in(tmp.dir.path.string()).empty());  // no server process
  // pgbench runs in walbench's working directory, not in TMPDIR: found by the TMPDIR it inherits.
  CHECK(testing::processes_with_environment("TMPDIR=" + tmp.dir.path.string()).empty());
}

}  // namespace

TEST_CASE("a tiny postgres run: cells measured, report prints, nothing left behind",
          "[postgres][cli]") {
  if (!postgres_installed()) return;
  TempDir cwd;
  ScratchTmp tmp;
  cwd.write("pg.json", tiny_config("[1, 2]", 0.3, 0.5));
  Child run(cwd, tmp.dir.path.string(), {"run", "pg.json", "-o", "pg-result.json"});
  const int rc = run.wait_exit();
  INFO("stdout: " << run.out() << "\nstderr: " << run.err());
  REQUIRE(rc == 0);
  CHECK(run.err().find("started PostgreSQL") != std::string::npos);
  CHECK(run.out().find("cell 2/2 postgres clients=2") != std::string::npos);
  check_nothing_left(tmp);

  const auto doc = nlohmann::json::parse(slurp(cwd.file("pg-result.json")));
  REQUIRE(doc["cells"].size() == 2);
  for (const auto& cell : doc["cells"]) {
    INFO(cell.dump());
    CHECK(cell["ok"] == true);
    CHECK(cell["strategy"] == "server");
    const auto& rep = cell["repetitions"][0];
    CHECK(rep["txns"].get<uint64_t>() > 0);
    CHECK(rep["tps"].get<double>() > 0);
    CHECK(rep["bytes_per_s"].get<double>() > 0);
    CHECK(rep["latency_ms"]["count"] == rep["txns"]);
    CHECK(rep["server"]["version"].get<std::string>().rfind("PostgreSQL", 0) == 0);
    CHECK(rep["server"]["settings"]["fsync"] == "off");
    // emit_message, transactional: a message and a commit record per transaction, counted by
    // pg_stat_wal over the whole pgbench run.
    const auto& stat_wal = rep["per_txn"]["pg_stat_wal"];
    CHECK(stat_wal["spans"] == "whole pgbench run, cluster-wide");
    CHECK(stat_wal["records"].get<double>() >= 2.0);
    CHECK(stat_wal["records"].get<double>() < 2.5);
    CHECK(rep["pg_stat_wal"]["txns"].get<uint64_t>() >= rep["txns"].get<uint64_t>());
    CHECK(!rep.contains("model"));
    // The window's own: its insert positions' difference over its transactions.
    CHECK(rep["per_txn"]["wal_bytes"].get<double>() ==
          Approx(rep["window"]["wal_bytes"].get<double>() / rep["txns"].get<double>()));
    CHECK(rep["per_txn"]["locks"].is_null());  // the server's locks are not measured
    CHECK(rep["lock_stats"].is_null());
    // The progress points count pgbench's logged transactions from its clients' start: at least
    // the window's, at most all pgbench reports, and some in the first interval (the clock does
    // not start before the clients do).
    double progress_txns = 0;
    for (const auto& p : rep["progress"]) progress_txns += p["tps"].get<double>() * 0.25;
    CHECK(progress_txns >= rep["txns"].get<double>());
    CHECK(progress_txns <= rep["pgbench"]["transactions"].get<double>());
    CHECK(rep["progress"][0]["tps"].get<double>() > 0);
    CHECK(!rep["wait_events"].empty());
  }

  Child report(cwd, tmp.dir.path.string(), {"report", "pg-result.json"});
  REQUIRE(report.wait_exit() == 0);
  INFO("report: " << report.out() << report.err());
  CHECK(report.out().find("postgres") != std::string::npos);

  // A cell's entry gives a postgres config back (no strategy, no model-only keys).
  Child rerun(cwd, tmp.dir.path.string(), {"rerun", "pg-result.json", "--cell", "1", "-o",
                                           "rerun.json", "-q"});
  CHECK(rerun.wait_exit() == 0);
  INFO("rerun: " << rerun.out() << rerun.err());
  CHECK(rerun.out().find("cell 2/2 postgres clients=2") != std::string::npos);
  check_nothing_left(tmp);
}

namespace {

// The one value `sql` returns on the server at `conninfo`.
std::string query_value(const std::string& conninfo, const std::string& sql) {
  PGconn* conn = PQconnectdb(conninfo.c_str());
  INFO(PQerrorMessage(conn));
  REQUIRE(PQstatus(conn) == CONNECTION_OK);
  PGresult* res = PQexec(conn, sql.c_str());
  INFO(PQerrorMessage(conn));
  const bool ok = PQresultStatus(res) == PGRES_TUPLES_OK || PQresultStatus(res) == PGRES_COMMAND_OK;
  const std::string value = ok && PQntuples(res) > 0 ? PQgetvalue(res, 0, 0) : "";
  PQclear(res);
  PQfinish(conn);
  REQUIRE(ok);
  return value;
}

}  // namespace

TEST_CASE("platform.dsn: walbench creates pgbench's tables, drops them, and refuses others'",
          "[postgres][cli]") {
  if (!postgres_installed()) return;
  TempDir cwd;
  ScratchTmp tmp;
  ::setenv("TMPDIR", tmp.dir.path.c_str(), 1);  // this process starts the server
  ServerOptions o;
  o.bindir = default_bindir();
  o.settings = {{"fsync", "off"}, {"max_connections", "20"}};
  PostgresServer server(o);
  ::unsetenv("TMPDIR");
  const std::string tables =
      "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'pgbench%'";
  // A password (trust auth ignores it) that must be recorded and printed nowhere, and an
  // application_name of the dsn's own that must not hide pgbench's backends from the sampler.
  const std::string dsn = server.conninfo() + " password=sekr1t-pw application_name=theirs";
  cwd.write("dsn.json", R"({"platform": {"kind": "postgres", "dsn": ")" + dsn + R"("},
    "workload": {"name": "simple_update"},
    "run": {"warmup_s": 0.2, "duration_s": 0.3, "progress_interval_s": 0, "verify": false},
    "matrix": {"clients": [1, 2]}})");
  {
    Child run(cwd, tmp.dir.path.string(), {"run", "dsn.json", "-o", "dsn-result.json"});
    const int rc = run.wait_exit();
    INFO("stdout: " << run.out() << "\nstderr: " << run.err());
    CHECK(rc == 0);
    CHECK(run.err().find("started PostgreSQL") == std::string::npos);  // it uses the server
    const auto doc = nlohmann::json::parse(slurp(cwd.file("dsn-result.json")));
    REQUIRE(doc["cells"].size() == 2);
    CHECK(doc["cells"][1]["repetitions"][0]["server"]["cluster"] == "dsn");
    CHECK(doc["cells"][1]["repetitions"][0]["txns"].get<uint64_t>() > 0);
    CHECK(!doc["cells"][1]["repetitions"][0]["wait_events"].empty());
    CHECK(doc["cells"][1]["platform"]["postgres"]["dsn"].get<std::string>().find("application_name='theirs'") !=
          std::string::npos);
    for (const std::string& text : {slurp(cwd.file("dsn-result.json")), run.out(), run.err()})
      CHECK(text.find("sekr1t-pw") == std::string::npos);
  }
  CHECK(query_value(server.conninfo(), tables) == "0");  // dropped at the end

  query_value(server.conninfo(), "CREATE TABLE pgbench_branches (bid int)");  // someone's
  Child again(cwd, tmp.dir.path.string(), {"run", "dsn.json", "-o", "again.json", "-q"});
  CHECK(again.wait_exit() == 1);
  INFO("stdout: " << again.out());
  CHECK(again.out().find("pgbench -i would drop them") != std::string::npos);
  CHECK(query_value(server.conninfo(), tables) == "1");  // left as it was
}

TEST_CASE("SIGINT mid-run: the server stops, nothing is left, the result file is whole",
          "[postgres][cli][interrupt]") {
  if (!postgres_installed()) return;
  TempDir cwd;
  ScratchTmp tmp;
  cwd.write("pg.json", tiny_config("[1, 2]", 0.5, 8));
  Child run(cwd, tmp.dir.path.string(), {"run", "pg.json", "-o", "pg-result.json"});
  REQUIRE(run.wait_for_err("started PostgreSQL"));
  REQUIRE(run.wait_for_err("progress: "));  // pgbench is running
  CHECK(!processes_in(tmp.dir.path.string()).empty());  // the server is there
  bool pgbench_seen = false;  // the leftover check below can see a pgbench
  for (pid_t pid : testing::processes_with_environment("TMPDIR=" + tmp.dir.path.string())) {
    std::error_code ec;
    const auto exe = fs::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec);
    if (!ec && exe.filename() == "pgbench") pgbench_seen = true;
  }
  CHECK(pgbench_seen);
  REQUIRE(::kill(run.pid, SIGINT) == 0);
  const int rc = run.wait_exit(60);
  INFO("stdout: " << run.out() << "\nstderr: " << run.err());
  CHECK(rc == 130);
  CHECK(run.err().find("interrupted by SIGINT: 0 of 2 cells finished") != std::string::npos);
  check_nothing_left(tmp);
  CHECK(!fs::exists(cwd.file("pg-result.json.tmp")));
  const auto doc = nlohmann::json::parse(slurp(cwd.file("pg-result.json")));
  REQUIRE(doc["cells"].size() == 2);
  CHECK(doc["cells"][0]["interrupted"] == true);
  CHECK(doc["cells"][0]["error"] == "interrupted by SIGINT");
  CHECK(doc["cells"][1]["error"] == "not run: interrupted by SIGINT before it started");
}

}  // namespace walbench

// The throwaway cluster (harness/postgres_server.h): it starts, answers through libpq with the
// settings it was given, and leaves no process and no directory behind, whether stopped,
// destroyed on an exception or failing to start. Skipped, with a message, where PostgreSQL's
// programs are not installed (scripts/setup.sh --with-postgres).
#include "harness/postgres_server.h"
#include "harness/postgres_test_support.h"

#include <libpq-fe.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>
#include <string>

#include <catch2/catch.hpp>

#include "harness/interrupt.h"
#include "harness/postgres_config.h"
#include "tests/temp_dir.h"

namespace walbench {
namespace {

namespace fs = std::filesystem;

std::string installed_bindir() { return testing::postgres_bindir_or_skip(); }

// The one value `sql` returns, through libpq.
std::string query_value(const std::string& conninfo, const std::string& sql) {
  PGconn* conn = PQconnectdb(conninfo.c_str());
  REQUIRE(conn != nullptr);
  INFO(PQerrorMessage(conn));
  REQUIRE(PQstatus(conn) == CONNECTION_OK);
  PGresult* res = PQexec(conn, sql.c_str());
  INFO(PQerrorMessage(conn));
  REQUIRE(PQresultStatus(res) == PGRES_TUPLES_OK);
  REQUIRE(PQntuples(res) == 1);
  const std::string value = PQgetvalue(res, 0, 0);
  PQclear(res);
  PQfinish(conn);
  return value;
}

// A TMPDIR of the test's own, which the server's OS user can traverse (initdb runs as it).
struct ScratchTmp {
  testing::TempDir dir;
  std::string saved;
  bool had = false;
  ScratchTmp() {
    ::chmod(dir.path.c_str(), 0755);
    if (const char* t = std::getenv("TMPDIR")) {
      had = true;
      saved = t;
    }
    ::setenv("TMPDIR", dir.path.c_str(), 1);
  }
  ~ScratchTmp() {
    if (had) ::setenv("TMPDIR", saved.c_str(), 1);
    else ::unsetenv("TMPDIR");
  }
  bool empty() const { return fs::is_empty(dir.path); }
};

TEST_CASE("a throwaway cluster starts, answers and leaves nothing behind", "[postgres][server]") {
  const std::string bindir = installed_bindir();
  if (bindir.empty()) return;
  testing::TempDir wal_parent;  // before ScratchTmp, which moves TMPDIR
  ScratchTmp tmp;
  ::chmod(wal_parent.path.c_str(), 0755);
  ServerOptions o;
  o.bindir = bindir;
  o.settings = {{"wal_buffers", "512"}, {"max_connections", "20"}, {"synchronous_commit", "off"}};
  o.wal_segsize_mb = 32;
  o.wal_dir = wal_parent.path.string();

  std::string root, data;
  pid_t postmaster = 0;
  SECTION("stopped") {
    PostgresServer server(o);
    root = server.root_dir();
    data = server.data_dir();
    postmaster = server.postmaster_pid();
    CHECK(process_alive(postmaster));
    CHECK(server.os_user().uid != 0);
    // A terminal's Ctrl-C goes to walbench's process group, not to the server's.
    CHECK(::getpgid(postmaster) != ::getpgrp());
    CHECK(::getsid(postmaster) != ::getsid(0));
    CHECK_FALSE(processes_in(data).empty());
    CHECK(query_value(server.conninfo(), "SHOW wal_buffers") == "4MB");
    CHECK(query_value(server.conninfo(), "SHOW synchronous_commit") == "off");
    CHECK(query_value(server.conninfo(), "SHOW wal_segment_size") == "32MB");
    CHECK(query_value(server.conninfo(), "SHOW port") == std::to_string(server.port()));
    CHECK(fs::is_symlink(data + "/pg_wal"));
    CHECK(fs::read_symlink(data + "/pg_wal").string().rfind(server.wal_dir() + "/", 0) == 0);
    server.stop();
    CHECK_FALSE(server.running());
    server.stop();  // idempotent
  }
  SECTION("destroyed as an exception unwinds") {
    try {
      PostgresServer server(o);
      root = server.root_dir();
      data = server.data_dir();
      postmaster = server.postmaster_pid();
      CHECK(query_value(server.conninfo(), "SELECT 1") == "1");
      throw std::runtime_error("a cell failed");
    } catch (const std::runtime_error& e) {
      CHECK(std::string(e.what()) == "a cell failed");
    }
  }
  CHECK(postmaster > 0);
  CHECK_FALSE(process_alive(postmaster));
  CHECK(processes_in(data).empty());
  CHECK_FALSE(fs::exists(root));
  CHECK(tmp.empty());
  CHECK(fs::is_empty(wal_parent.path));
}

TEST_CASE("a cluster that cannot start says why and leaves nothing behind", "[postgres][server]") {
  const std::string bindir = installed_bindir();
  if (bindir.empty()) return;
  ScratchTmp tmp;
  ServerOptions o;
  o.bindir = bindir;
  o.settings = {{"wal_buffers", "lots"}};
  try {
    PostgresServer server(o);
    FAIL("the server started with wal_buffers = 'lots'");
  } catch (const PostgresError& e) {
    const std::string what = e.what();
    CHECK(what.find("did not start") != std::string::npos);
    CHECK(what.find("wal_buffers") != std::string::npos);  // the server's own complaint
    CHECK(what.find('\n') == std::string::npos);
  }
  CHECK(tmp.empty());
}

TEST_CASE("missing programs: one line saying what to install or set", "[postgres][server]") {
  testing::TempDir empty;
  try {
    check_server_binaries(empty.path.string(), false);
    FAIL("no error for an empty bin directory");
  } catch (const PostgresError& e) {
    const std::string what = e.what();
    CHECK(what.find("scripts/setup.sh --with-postgres") != std::string::npos);
    CHECK(what.find("platform.bindir") != std::string::npos);
    CHECK(what.find("initdb") != std::string::npos);
  }
  try {
    check_server_binaries(empty.path.string(), true);
    FAIL("no error for an empty bin directory");
  } catch (const PostgresError& e) {
    CHECK(std::string(e.what()).rfind("platform.bindir " + empty.path.string() + " has no initdb", 0) == 0);
  }
}

TEST_CASE("a pid that is not one is never signalled", "[postgres][server]") {
  CHECK(!signal_process(0, 0));   // kill(0, ...) would be walbench's own process group
  CHECK(!signal_process(-1, 0));  // and kill(-1, ...) every process it may signal
  CHECK(signal_process(::getpid(), 0));
}

TEST_CASE("a server program that hangs is killed at its deadline or on SIGINT",
          "[postgres][server]") {
  testing::TempDir dir;
  const OsUser me = {"me", ::geteuid(), ::getegid()};
  const std::string log = dir.file("sleep.log");
  using Clock = std::chrono::steady_clock;

  auto t0 = Clock::now();
  CHECK_THROWS_WITH(run_program({"/bin/sleep", "30"}, me, log, 0.3),
                    Catch::Contains("sleep did not finish within 0.3 s; killed it"));
  CHECK(Clock::now() - t0 < std::chrono::seconds(5));

  t0 = Clock::now();
  {
    InterruptHandlers handlers("");
    std::thread interrupter([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      request_interrupt(SIGINT);
    });
    CHECK_THROWS_WITH(run_program({"/bin/sleep", "30"}, me, log, 60),
                      Catch::Contains("sleep stopped: interrupted by SIGINT"));
    interrupter.join();
    // The cleanup steps run on regardless (pg_ctl stop after an interrupt).
    CHECK(run_program({"/bin/true"}, me, log, 10, /*honour_interrupt=*/false) == 0);
  }
  CHECK(Clock::now() - t0 < std::chrono::seconds(5));
  CHECK(run_program({"/bin/sh", "-c", "exit 3"}, me, log, 10) == 3);
}

TEST_CASE("run by root, a TMPDIR the server's user cannot traverse is named before initdb",
          "[postgres][server]") {
  if (::geteuid() != 0) return;  // only root hands the cluster to another user
  const std::string bindir = installed_bindir();
  if (bindir.empty()) return;
  testing::TempDir closed;
  ::chmod(closed.path.c_str(), 0700);
  const std::string inner = closed.file("tmp");
  fs::create_directory(inner);
  ::chmod(inner.c_str(), 0777);
  ServerOptions o;
  o.bindir = bindir;
  ::setenv("TMPDIR", inner.c_str(), 1);
  CHECK_THROWS_WITH(PostgresServer(o),
                    Catch::Contains("TMPDIR " + inner + ": the server's OS user") &&
                        Catch::Contains("cannot traverse " + closed.path.string() + " (mode 0700)"));
  ::unsetenv("TMPDIR");
  CHECK(fs::is_empty(inner));  // nothing created
}

}  // namespace
}  // namespace walbench

// platform "postgres" in configs: fields, the server variant, the cross-field rules, and the
// server settings a cell maps to (harness/postgres_config.h).
#include "harness/postgres_config.h"

#include <algorithm>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "harness/config.h"
#include "tests/config_text.h"

namespace walbench {
namespace {

using OJson = nlohmann::ordered_json;

std::vector<CellSpec> expand(const std::string& text) { return testing::expand_config(text); }
using testing::error_of;

std::string setting(const std::vector<std::pair<std::string, std::string>>& s,
                    const std::string& name) {
  for (const auto& [n, v] : s)
    if (n == name) return v;
  return "<absent>";
}

TEST_CASE("a postgres config names no strategy and maps the model's sections onto settings",
          "[postgres][config]") {
  const auto cells = expand(R"({
    "platform": {"kind": "postgres", "bindir": "/opt/pg/bin", "max_connections": 20,
                 "shared_buffers": "256MB", "wal_dir": "/dev/shm"},
    "wal": {"wal_buffers": 512, "fsync": false, "segment_size": 67108864},
    "commit": {"synchronous_commit": false, "wal_writer_delay_ms": 10},
    "matrix": {"clients": [1, 8], "workload.record_size": [16, 16384]}})");
  REQUIRE(cells.size() == 4);
  for (const auto& c : cells) {
    CHECK(c.strategy == kServerStrategy);
    CHECK(c.label == "postgres");
    CHECK(c.platform.postgres.bindir == "/opt/pg/bin");
    CHECK(c.platform.postgres.wal_dir == "/dev/shm");
  }
  const auto s = server_settings(cells[0]);
  CHECK(setting(s, "wal_buffers") == "512");
  CHECK(setting(s, "fsync") == "off");
  CHECK(setting(s, "synchronous_commit") == "off");
  CHECK(setting(s, "wal_writer_delay") == "10ms");
  CHECK(setting(s, "max_connections") == "20");
  CHECK(setting(s, "full_page_writes") == "off");  // the model's default
  CHECK(setting(s, "shared_buffers") == "256MB");
  CHECK(wal_segsize_mb(cells[0]) == 64);
  // Without shared_buffers, initdb's value stays.
  const auto d = expand(R"({"platform": {"kind": "postgres"}})");
  CHECK(setting(server_settings(d[0]), "shared_buffers") == "<absent>");
  CHECK(resolve_bindir(d[0].platform.postgres) == default_bindir());
}

TEST_CASE("builds are labelled by bindir in override variants", "[postgres][config]") {
  const auto cells = expand(R"({
    "platform": {"kind": "postgres"},
    "matrix": {"variants": [{"label": "stock", "set": {}},
                            {"label": "patched", "set": {"platform.bindir": "/opt/patched/bin"}}]}})");
  REQUIRE(cells.size() == 2);
  CHECK(cells[0].label == "stock");
  CHECK(cells[0].platform.postgres.bindir.empty());
  CHECK(cells[1].label == "patched");
  CHECK(cells[1].platform.postgres.bindir == "/opt/patched/bin");
}

TEST_CASE("postgres config errors name the path and what was expected", "[postgres][config]") {
  SECTION("a strategy with a server") {
    const auto e = error_of(R"({"platform": {"kind": "postgres"}, "strategy": "insert_locks"})");
    CHECK(e.json_path == "/strategy");
    CHECK(e.problem.find("runs its own build") != std::string::npos);
  }
  SECTION("a postgres key on the threads platform") {
    const auto e = error_of(R"({"platform": {"bindir": "/x"}, "strategy": "insert_locks"})");
    CHECK(e.json_path == "/platform/bindir");
    CHECK(e.expected.find("\"kind\": \"postgres\"") != std::string::npos);
  }
  SECTION("a postgres key on the sim platform") {
    const auto e =
        error_of(R"({"platform": {"kind": "sim", "wal_dir": "/x"}, "strategy": "insert_locks"})");
    CHECK(e.json_path == "/platform/wal_dir");
  }
  SECTION("no strategy on a model platform") {
    const auto e = error_of(R"({"platform": {"kind": "threads"}})");
    CHECK(e.problem == "no strategy given");
  }
  SECTION("a model-only setting") {
    const auto e =
        error_of(R"({"platform": {"kind": "postgres"}, "wal": {"buffer_init": "lockfree"}})");
    CHECK(e.json_path == "/wal/buffer_init");
    CHECK(e.problem.find("setting of the model") != std::string::npos);
    // The server takes its snapshots as PostgreSQL does; the model's count is no setting of it.
    CHECK(error_of(R"({"platform": {"kind": "postgres"}, "clog": {"snapshots_per_statement": 2}})")
              .json_path == "/clog/snapshots_per_statement");
  }
  SECTION("more clients than connections") {
    const auto e = error_of(
        R"({"platform": {"kind": "postgres", "max_connections": 10}, "matrix": {"clients": [1, 9]}})");
    CHECK(e.json_path == "/platform/max_connections");
    CHECK(e.expected == "platform.max_connections >= 11");
  }
  SECTION("a dsn with throwaway-cluster settings") {
    const auto e = error_of(
        R"({"platform": {"kind": "postgres", "dsn": "host=/tmp", "wal_dir": "/dev/shm"}})");
    CHECK(e.json_path == "/platform/wal_dir");
    CHECK(e.problem.find("existing server") != std::string::npos);
  }
  SECTION("a dsn with a model setting it cannot apply") {
    const auto e = error_of(
        R"({"platform": {"kind": "postgres", "dsn": "host=/tmp"}, "wal": {"wal_buffers": 64}})");
    CHECK(e.json_path == "/wal/wal_buffers");
  }
  SECTION("a fractional wal_writer_delay") {
    const auto e = error_of(
        R"({"platform": {"kind": "postgres"}, "commit": {"wal_writer_delay_ms": 0.5}})");
    CHECK(e.json_path == "/commit/wal_writer_delay_ms");
  }
  SECTION("a segment below initdb's minimum") {
    const auto e = error_of(
        R"({"platform": {"kind": "postgres"}, "wal": {"segment_size": 65536}})");
    CHECK(e.json_path == "/wal/segment_size");
    CHECK(e.expected.find("--wal-segsize") != std::string::npos);
  }
  SECTION("bad values") {
    CHECK(error_of(R"({"platform": {"kind": "postgres", "shared_buffers": "12XB"}})").json_path ==
          "/platform/shared_buffers");
    CHECK(error_of(R"({"platform": {"kind": "postgres", "wal_dir": "relative"}})").json_path ==
          "/platform/wal_dir");
    CHECK(error_of(R"({"platform": {"kind": "postgres", "bindir": ""}})").json_path ==
          "/platform/bindir");
    CHECK(error_of(R"({"platform": {"kind": "postgres", "max_connections": 0}})").json_path ==
          "/platform/max_connections");
    CHECK(error_of(R"({"platform": {"kind": "postgress"}})").suggestion == "postgres");
  }
}

TEST_CASE("memory settings as postgresql.conf reads them", "[postgres][config]") {
  for (const char* ok : {"128MB", "1GB", "16384", "64kB", "1TB"}) CHECK(is_memory_setting(ok));
  for (const char* bad : {"", "MB", "1 GB", "1gb", "1.5GB", "-1", "12XB"}) CHECK_FALSE(is_memory_setting(bad));
}

}  // namespace
}  // namespace walbench

namespace walbench {
namespace {

TEST_CASE("a dsn is recorded without its password, in either form", "[postgres][config]") {
  CHECK(dsn_without_password("host=/tmp/s port=5433 user=u password=pw1 dbname=d") ==
        "user='u' dbname='d' host='/tmp/s' port='5433'");
  CHECK(dsn_without_password("postgresql://u:pw2@db.example:5433/d?application_name=x") ==
        "user='u' dbname='d' host='db.example' port='5433' application_name='x'");
  CHECK(dsn_without_password("host=h password='it''s \\' quoted'").find("quoted") ==
        std::string::npos);
  CHECK(dsn_without_password("host='a b' user='o\\'neil'") == "user='o\\'neil' host='a b'");
  CHECK(dsn_without_password("host=h password") == "(a dsn libpq cannot parse)");
  CHECK(dsn_without_password("").empty());
  const auto fixed = rebuilt_conninfo("host=h password=pw application_name=theirs",
                                      {{"application_name", "walbench-1-1"}}, true);
  REQUIRE(fixed);
  CHECK(*fixed == "password='pw' host='h' application_name='walbench-1-1'");
}

}  // namespace
}  // namespace walbench

namespace walbench {
namespace {

TEST_CASE("a recorded config and its overrides hold no dsn password", "[postgres][config]") {
  const auto config = config_without_passwords(nlohmann::json::parse(
      R"({"platform": {"kind": "postgres", "dsn": "host=h password=pw9"},
          "variants": [{"platform": {"dsn": "postgresql://u:pw8@h/d"}}]})"));
  CHECK(config.dump().find("pw9") == std::string::npos);
  CHECK(config.dump().find("pw8") == std::string::npos);
  CHECK(config["platform"]["dsn"] == "host='h'");
  const auto sets = overrides_without_passwords(
      {"platform.dsn=host=h password=pw7", "platform.dsn=\"host=h password=pw6\"", "run.seed=3"});
  CHECK(sets == std::vector<std::string>{"platform.dsn=host='h'", "platform.dsn=host='h'",
                                         "run.seed=3"});
}

}  // namespace
}  // namespace walbench

// The `clog` config section, the transaction workload names, and `walbench list clog`: what
// configs/README.md documents for them.
#include <catch2/catch.hpp>

#include <sstream>

#include "harness/config.h"
#include "harness/list.h"
#include "strategies/strategy.h"
#include "tests/config_text.h"

using namespace walbench;
using OJson = nlohmann::ordered_json;

namespace {

std::vector<CellSpec> cells_of(const std::string& text) { return testing::expand_config(text); }
using testing::error_of;

}  // namespace

TEST_CASE("clog section: defaults, names, objects with params, the matrix", "[clog][config]") {
  const auto d = cells_of(R"({"strategy": "single_lock"})");
  REQUIRE(d.size() == 1);
  CHECK(d[0].clog.strategy == "clog_exclusive");
  CHECK(d[0].clog.clog_buffers == 128);
  CHECK(d[0].clog.page_size == 8192);
  CHECK(d[0].clog.params == nlohmann::json::object());
  CHECK(d[0].clog.procarray == "off");
  CHECK(d[0].clog.snapshot == "pgxact");
  const auto s = cells_of(R"({"strategy": "single_lock",
      "clog": {"procarray": "group_clear"}, "matrix": {"clog.snapshot": ["pgxact", "dense"]}})");
  REQUIRE(s.size() == 2);
  CHECK(s[0].clog.snapshot == "pgxact");
  CHECK(s[1].clog.snapshot == "dense");
  CHECK(d[0].clog.snapshots_per_statement == 2);
  const auto two = cells_of(R"({"strategy": "single_lock", "clog": {"procarray": "exclusive"},
      "matrix": {"clog.snapshots_per_statement": [1, 2]}})");
  REQUIRE(two.size() == 2);
  CHECK(two[0].clog.snapshots_per_statement == 1);
  CHECK(two[1].clog.snapshots_per_statement == 2);
  CHECK(d[0].clog.lookup_xids == "run");
  CHECK(d[0].clog.xid_history == 0);
  const auto h = cells_of(R"({"strategy": "single_lock", "workload": {"name": "simple_update"},
      "clog": {"lookup_xids": "pgbench_pages", "xid_history": 36000000}})");
  CHECK(h[0].clog.lookup_xids == "pgbench_pages");
  CHECK(h[0].clog.xid_history == 36000000);

  const auto g = cells_of(R"({"strategy": "single_lock",
      "clog": {"strategy": "clog_group_update", "clog_buffers": 32}})");
  CHECK(g[0].clog.strategy == "clog_group_update");
  CHECK(g[0].clog.params == nlohmann::json{{"threshold_subxids", 5}});  // default filled in
  CHECK(g[0].clog.clog_buffers == 32);

  const auto m = cells_of(R"({"strategy": "single_lock",
      "workload": {"name": "savepoints"},
      "matrix": {"clog.strategy": ["clog_exclusive",
                                   {"name": "clog_group_update", "params": {"threshold_subxids": 2}}],
                 "workload.name": ["simple_update", "tpcb_like"]}})");
  REQUIRE(m.size() == 4);
  CHECK(m[0].clog.strategy == "clog_exclusive");
  CHECK(m[0].workload.name == "simple_update");
  CHECK(m[1].workload.name == "tpcb_like");
  CHECK(m[3].clog.strategy == "clog_group_update");
  CHECK(m[3].clog.params["threshold_subxids"] == 2);
  CHECK(m[3].matrix_values.contains("clog.strategy"));
}

TEST_CASE("clog section: errors with JSON pointers and did-you-mean", "[clog][config]") {
  const ConfigError a = error_of(R"({"strategy": "single_lock", "clog": {"strategy": "clog_grup_update"}})");
  CHECK(a.json_path == "/clog/strategy");
  CHECK(a.suggestion == "clog_group_update");
  const ConfigError b = error_of(R"({"strategy": "single_lock", "clog": {"clog_bufers": 8}})");
  CHECK(b.json_path == "/clog/clog_bufers");
  CHECK(b.suggestion == "clog_buffers");
  const ConfigError c = error_of(
      R"({"strategy": "single_lock", "clog": {"strategy": {"name": "clog_group_update", "params": {"treshold_subxids": 3}}}})");
  CHECK(c.json_path == "/clog/strategy/params/treshold_subxids");
  CHECK(c.suggestion == "threshold_subxids");
  const ConfigError e = error_of(
      R"({"strategy": "single_lock", "clog": {"strategy": {"name": "clog_exclusive", "params": {"x": 1}}}})");
  CHECK(e.expected.find("takes none") != std::string::npos);
  CHECK(error_of(R"({"strategy": "single_lock", "clog": {"clog_buffers": 2}})").json_path ==
        "/clog/clog_buffers");
  CHECK(error_of(R"({"strategy": "single_lock", "clog": {"page_size": 3000}})").problem ==
        "3000 is not a power of two");
  CHECK(error_of(R"({"strategy": "single_lock", "matrix": {"clog.strategy": ["clog_exclusive", "clog_excl"]}})")
            .json_path == "/matrix/clog.strategy/1");
  CHECK(error_of(R"({"strategy": "single_lock", "clgo": {}})").suggestion == "clog");
  const ConfigError sn = error_of(R"({"strategy": "single_lock", "clog": {"snapshot": "dens"}})");
  CHECK(sn.json_path == "/clog/snapshot");
  CHECK(sn.suggestion == "dense");
  CHECK(error_of(R"({"strategy": "single_lock", "clog": {"snapshots_per_statement": 3}})")
            .json_path == "/clog/snapshots_per_statement");
  CHECK(error_of(R"({"strategy": "single_lock", "clog": {"snapshots_per_statement": 0}})")
            .json_path == "/clog/snapshots_per_statement");
  const ConfigError lx = error_of(R"({"strategy": "single_lock", "clog": {"lookup_xids": "pgbench_page"}})");
  CHECK(lx.json_path == "/clog/lookup_xids");
  CHECK(lx.suggestion == "pgbench_pages");
  CHECK(error_of(R"({"strategy": "single_lock", "clog": {"xid_history": 2000000000}})").json_path ==
        "/clog/xid_history");
  CHECK(error_of(R"({"strategy": "single_lock", "clog": {"xid_history": -1}})").json_path ==
        "/clog/xid_history");
}

TEST_CASE("workload names and the transactional rule", "[clog][config]") {
  for (const char* w : {"emit_message", "simple_update", "tpcb_like", "savepoints"})
    CHECK(cells_of(std::string(R"({"strategy": "ideal", "workload": {"name": ")") + w + "\"}}")[0]
              .workload.name == w);
  const ConfigError n = error_of(R"({"strategy": "ideal", "workload": {"name": "tpcb-like"}})");
  CHECK(n.suggestion == "tpcb_like");
  const ConfigError t = error_of(
      R"({"strategy": "ideal", "workload": {"name": "savepoints", "transactional": false}})");
  CHECK(t.json_path == "/workload/transactional");
  CHECK(t.problem.find("always transactional") != std::string::npos);
}

TEST_CASE("a --set override reaches the clog section", "[clog][config]") {
  OJson c = OJson::parse(R"({"strategy": "single_lock"})");
  apply_override(c, "clog.strategy=clog_group_update");
  apply_override(c, "clog.clog_buffers=16");
  apply_override(c, R"(matrix.workload.name=["simple_update","savepoints"])");
  const auto cells = expand_matrix(c, "t.json");
  REQUIRE(cells.size() == 2);
  CHECK(cells[1].clog.strategy == "clog_group_update");
  CHECK(cells[1].clog.clog_buffers == 16);
  CHECK(cells[1].workload.name == "savepoints");
  try {
    apply_override(c, "clog.clog_bufer=1");
    FAIL("accepted a misspelled key");
  } catch (const ConfigError& e) {
    CHECK(e.suggestion == "clog_buffers");
  }
}

TEST_CASE("walbench list shows the CLOG strategies and the workloads", "[clog][config]") {
  std::ostringstream all;
  print_list(all, "all");
  CHECK(all.str().find("CLOG STRATEGIES") != std::string::npos);
  for (const auto& s : clog_strategies()) {
    INFO(s.name);
    CHECK(all.str().find("  " + s.name + "\n") != std::string::npos);
    for (const auto& p : s.params) CHECK(all.str().find(p.name) != std::string::npos);
  }
  for (const char* w : {"simple_update", "tpcb_like", "savepoints", "baaf272ac9", "lookup_xids",
                        "pgbench_pages", "xid_history"})
    CHECK(all.str().find(w) != std::string::npos);
  std::ostringstream only;
  print_list(only, "clog");
  CHECK(only.str().find("clog_group_update") != std::string::npos);
  CHECK(only.str().find("WORKLOADS") == std::string::npos);
  REQUIRE(find_clog_strategy("clog_exclusive") != nullptr);
  CHECK(find_clog_strategy("nope") == nullptr);
}

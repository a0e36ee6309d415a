// Sharded runs: which cells a shard runs, and what `walbench merge` refuses (a missing or
// duplicated cell, another config, another build) and keeps per shard. The end-to-end check
// (three shards through GNU parallel, merged, equal to the unsharded run) is
// tests/shard_parallel_test.sh.
#include "harness/merge.h"

#include <set>

#include <catch2/catch.hpp>

#include "harness/config.h"
#include "harness/runner.h"

namespace walbench {
namespace {

using ojson = nlohmann::ordered_json;

// The result file of shard k/n of a `total`-cell run, as `walbench run --shard` writes it
// (only the fields merge reads, plus a per-shard host and date).
ojson shard_file(size_t k, size_t n, size_t total) {
  ojson ctx;
  ctx["schema_version"] = kResultSchemaVersion;
  ctx["walbench_version"] = kWalbenchVersion;
  ctx["date"] = "2026-12-01T12:0" + std::to_string(k) + ":00Z";
  ctx["host"] = "node" + std::to_string(k);
  ctx["logical_cores"] = 64;
  ctx["git_sha"] = "3dc70ef9aaaa";
  ctx["git_dirty"] = true;
  ctx["git_diff_hash"] = "62211b9e";
  ctx["build"] = {{"type", "Release"}, {"compiler", "GNU 12.2.0"}, {"flags", "-O3 -DNDEBUG"}};
  ctx["command_line"] = "walbench run c.json --shard " + std::to_string(k) + "/" + std::to_string(n);
  ctx["config_files"] = {"c.json"};
  ctx["config_hash"] = "3e01faf2a1899326";
  ctx["overrides"] = {"run.duration_s=0.2"};
  ctx["seed"] = 1;
  ctx["shard"] = ojson(shard_context({k, n}, total));
  ctx["shard"]["wall_s"] = 10.0 * static_cast<double>(k);
  ctx["config"] = {{"matrix", {{"clients", {1, 2, 4, 8, 16, 32, 64}}}}};
  ojson cells = ojson::array();
  for (size_t i : shard_cell_indices({k, n}, total))
    cells.push_back({{"index", i}, {"label", "v"}, {"clients", 1u << i}, {"run", {{"seed", 1}}},
                     {"ok", true}});
  return {{"context", ctx}, {"cells", cells}};
}

std::vector<MergeInput> three_shards(size_t total) {
  return {{"a.json", shard_file(1, 3, total)},
          {"b.json", shard_file(2, 3, total)},
          {"c.json", shard_file(3, 3, total)}};
}

std::string merge_error(const std::vector<MergeInput>& inputs) {
  try {
    merge_results(inputs, "walbench merge ...", "2026-12-01T13:00:00Z");
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("run --shard K/N: 1 <= K <= N, else one line naming the option", "[merge]") {
  CHECK(parse_shard("1/1").k == 1);
  CHECK(parse_shard("2/3").k == 2);
  CHECK(parse_shard("2/3").n == 3);
  CHECK(parse_shard("12/12").k == 12);
  for (const char* bad : {"", "3", "0/3", "4/3", "1/0", "a/b", "1/3x", "-1/3", "1//3", "1/3/5",
                          " 1/3", "99999999999999999999999/3"}) {
    INFO(bad);
    try {
      parse_shard(bad);
      FAIL("accepted");
    } catch (const UsageError& e) {
      const std::string m = e.what();
      CHECK(m.find("--shard") != std::string::npos);
      CHECK(m.find("expected K/N") != std::string::npos);
      CHECK(m.find('\n') == std::string::npos);
    }
  }
}

TEST_CASE("the shards of a matrix hold every cell once, round-robin, sizes within one", "[merge]") {
  for (size_t total : {0, 1, 2, 7, 48, 168}) {
    for (size_t n : {1, 2, 3, 5, 200}) {
      INFO("total " << total << ", n " << n);
      std::multiset<size_t> seen;
      size_t smallest = total, largest = 0;
      for (size_t k = 1; k <= n; ++k) {
        const std::vector<size_t> mine = shard_cell_indices({k, n}, total);
        for (size_t i : mine) CHECK(i % n == k - 1);
        CHECK(std::is_sorted(mine.begin(), mine.end()));
        seen.insert(mine.begin(), mine.end());
        smallest = std::min(smallest, mine.size());
        largest = std::max(largest, mine.size());
      }
      CHECK(seen.size() == total);
      for (size_t i = 0; i < total; ++i) CHECK(seen.count(i) == 1);
      CHECK(largest - smallest <= 1);
    }
  }
  CHECK(shard_cell_indices({2, 3}, 8) == std::vector<size_t>{1, 4, 7});
  const nlohmann::json ctx = shard_context({2, 3}, 8);
  CHECK(ctx["k"] == 2);
  CHECK(ctx["n"] == 3);
  CHECK(ctx["total_cells"] == 8);
  CHECK(ctx["cells"] == nlohmann::json{1, 4, 7});
}

TEST_CASE("merge puts the cells in index order and keeps per shard what differs", "[merge]") {
  std::vector<MergeInput> in = three_shards(7);
  std::swap(in[0], in[2]);  // any order of files
  const ojson doc = merge_results(in, "walbench merge c.json b.json a.json -o m.json",
                                  "2026-12-01T13:00:00Z");
  REQUIRE(doc["cells"].size() == 7);
  for (size_t i = 0; i < 7; ++i) CHECK(doc["cells"][i]["index"] == i);
  const ojson& ctx = doc["context"];
  CHECK_FALSE(ctx.contains("shard"));
  CHECK(ctx["date"] == "2026-12-01T12:01:00Z");  // the earliest start
  CHECK(ctx["host"].is_null());                  // shards differ: see merge.shards
  CHECK(ctx["command_line"].is_null());
  CHECK(ctx["logical_cores"] == 64);              // all agree
  CHECK(ctx["git_sha"] == "3dc70ef9aaaa");
  CHECK(ctx["config_hash"] == "3e01faf2a1899326");
  CHECK(ctx["seed"] == 1);
  const ojson& m = ctx["merge"];
  CHECK(m["date"] == "2026-12-01T13:00:00Z");
  CHECK(m["command_line"] == "walbench merge c.json b.json a.json -o m.json");
  REQUIRE(m["shards"].size() == 3);
  for (size_t k = 1; k <= 3; ++k) {
    const ojson& s = m["shards"][k - 1];  // in shard order
    CHECK(s["k"] == k);
    CHECK(s["n"] == 3);
    CHECK(s["file"] == std::string(1, static_cast<char>('a' + k - 1)) + ".json");
    CHECK(s["host"] == "node" + std::to_string(k));
    CHECK(s["wall_s"] == 10.0 * static_cast<double>(k));
    CHECK(s["cells"] == ojson(shard_cell_indices({k, 3}, 7)));
  }
  // "merge" sits before the config, like the rest of the provenance.
  std::vector<std::string> keys;
  for (const auto& [key, value] : ctx.items()) keys.push_back(key);
  CHECK(keys.back() == "config");
  CHECK(keys[keys.size() - 2] == "merge");
}

TEST_CASE("merge refuses a missing cell, naming it and the file", "[merge]") {
  std::vector<MergeInput> in = three_shards(7);
  SECTION("a shard's run stopped early") {
    in[1].doc["cells"].erase(1);  // b.json holds 1 and 4; 4 is gone
    const std::string e = merge_error(in);
    CHECK(e.find("cell 4 of 7 is missing from b.json") != std::string::npos);
    CHECK(e.find("shard 2/3") != std::string::npos);
  }
  SECTION("a shard not given") {
    in.erase(in.begin() + 2);
    const std::string e = merge_error(in);
    CHECK(e.find("cell 2 of 7 is missing") != std::string::npos);
    CHECK(e.find("shard 3/3") != std::string::npos);
    CHECK(e.find("a.json, b.json") != std::string::npos);
  }
}

TEST_CASE("merge refuses a duplicated cell, naming it and both files", "[merge]") {
  std::vector<MergeInput> in = three_shards(7);
  SECTION("a shard given twice") {
    in.push_back({"b-again.json", in[1].doc});
    const std::string e = merge_error(in);
    CHECK(e.find("cell 1 (v clients=2") != std::string::npos);
    CHECK(e.find("in both b.json and b-again.json") != std::string::npos);
  }
  SECTION("a cell of another shard") {
    in[0].doc["cells"].push_back(in[1].doc["cells"][0]);
    const std::string e = merge_error(in);
    CHECK(e.find("a.json holds cell 1") != std::string::npos);
    CHECK(e.find("not one of its shard 1/3's cells") != std::string::npos);
  }
}

TEST_CASE("merge refuses interrupted cells, and real-thread shards of different machines",
          "[merge]") {
  std::vector<MergeInput> in = three_shards(7);
  SECTION("an interrupted cell: resume its shard first") {
    in[1].doc["cells"][0]["ok"] = false;
    in[1].doc["cells"][0]["interrupted"] = true;
    in[1].doc["cells"][0]["error"] = "interrupted by SIGINT";
    const std::string e = merge_error(in);
    CHECK(e.find("b.json: cell 1 (v clients=2") != std::string::npos);
    CHECK(e.find("walbench run --resume b.json") != std::string::npos);
  }
  SECTION("simulated cells may come from any host (node1, node2, node3 here)") {
    CHECK(merge_error(in) == "(no error)");
  }
  SECTION("real-thread cells measured their host") {
    in[2].doc["cells"][0]["platform"] = {{"kind", "threads"}};
    const std::string e = merge_error(in);
    CHECK(e.find("a.json and c.json differ in context.host") != std::string::npos);
    CHECK(e.find("real-thread cells") != std::string::npos);
  }
}

TEST_CASE("merge refuses shards of different configs", "[merge]") {
  std::vector<MergeInput> in = three_shards(7);
  SECTION("another config after overrides") {
    in[2].doc["context"]["config_hash"] = "ffffffffffffffff";
    in[2].doc["context"]["config"]["matrix"]["clients"] = {1, 2};
    const std::string e = merge_error(in);
    CHECK(e.find("a.json and c.json differ in context.config_hash") != std::string::npos);
    CHECK(e.find("not the same config") != std::string::npos);
  }
  SECTION("other overrides") {
    in[1].doc["context"]["overrides"] = {"run.duration_s=0.3"};
    CHECK(merge_error(in).find("differ in context.overrides") != std::string::npos);
  }
  SECTION("another split") {
    in[1].doc = shard_file(2, 4, 7);
    CHECK(merge_error(in).find("differ in their split (shard 1/3 of 7 cells vs shard 2/4 of 7 "
                               "cells)") != std::string::npos);
  }
}

TEST_CASE("merge refuses shards of different builds", "[merge]") {
  std::vector<MergeInput> in = three_shards(7);
  SECTION("another commit") { in[1].doc["context"]["git_sha"] = "0123456789ab"; }
  SECTION("other uncommitted changes") { in[1].doc["context"]["git_diff_hash"] = "99999999"; }
  SECTION("a clean tree beside a dirty one") {
    in[1].doc["context"]["git_dirty"] = false;
    in[1].doc["context"]["git_diff_hash"] = nullptr;
  }
  SECTION("other build flags") { in[1].doc["context"]["build"]["flags"] = "-O2"; }
  const std::string e = merge_error(in);
  CHECK(e.find("a.json and b.json differ in context.") != std::string::npos);
  CHECK(e.find("not the same build") != std::string::npos);
}

TEST_CASE("merge refuses a file that is not a shard", "[merge]") {
  std::vector<MergeInput> in = three_shards(7);
  in[0].doc["context"].erase("shard");
  CHECK(merge_error(in).find("a.json: no context.shard") != std::string::npos);
  in = three_shards(7);
  in[0].doc["context"]["shard"]["cells"] = {0u, 3u};  // not what shard 1/3 of 7 holds
  CHECK(merge_error(in).find("a.json: context.shard.cells does not list the cells of shard 1/3 "
                             "of 7 cells") != std::string::npos);
}

}  // namespace walbench

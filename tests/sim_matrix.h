// Runs a list of simulated cells through the real runner (two at a time) and returns the result
// file's cells, in matrix order: the shared body of the shape and bound tests, which assert on
// tps across cells.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "harness/runner.h"

namespace walbench::testing {

inline nlohmann::json run_sim_matrix(std::vector<CellSpec> cells, const std::string& tag) {
  for (size_t i = 0; i < cells.size(); ++i) {
    cells[i].index = i;
    cells[i].total = cells.size();
  }
  const std::string path =
      "/tmp/walbench-" + tag + "-" + std::to_string(::getpid()) + ".json";
  RunOptions opts;
  opts.output_path = path;
  opts.quiet = true;
  opts.jobs = 2;
  std::ostringstream out, err;
  const int rc = run_matrix(cells, opts, out, err);
  INFO(err.str());
  std::ifstream in(path);
  const nlohmann::json doc = nlohmann::json::parse(in);
  std::remove(path.c_str());
  REQUIRE(rc == 0);
  const nlohmann::json& got = doc.at("cells");
  REQUIRE(got.size() == cells.size());
  return got;
}

}  // namespace walbench::testing

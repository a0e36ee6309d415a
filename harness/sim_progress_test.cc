// Progress lines of simulated cells: printed as the virtual instants pass, each line whole and
// naming its cell, also with several cells running at once (-j); none with quiet.
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "harness/config.h"
#include "harness/runner.h"

namespace walbench {
namespace {

// Four simulated cells, 0.01 s windows after 0.002 s of warm-up, a progress point every 0.002 s
// (6 per repetition), two repetitions.
nlohmann::ordered_json progress_config() {
  return nlohmann::ordered_json::parse(R"({
    "platform": {"kind": "sim", "preset": "icelake_2s", "cores": 16},
    "workload": {"name": "emit_message", "record_size": 100, "transactional": true},
    "run": {"duration_s": 0.01, "warmup_s": 0.002, "progress_interval_s": 0.002, "watchdog_s": 5,
            "repetitions": 2},
    "matrix": {"strategy": [{"name": "insert_locks", "label": "waitlist", "params": {"insertingat": "waitlist"}},
                            {"name": "single_lock"}],
               "clients": [2, 8]}
  })");
}

TEST_CASE("simulated cells print whole progress lines that name their cell, also with -j",
          "[runner][progress]") {
  const auto cells = expand_matrix(progress_config(), "progress.json");
  REQUIRE(cells.size() == 4);
  for (const unsigned jobs : {1u, 4u}) {
    INFO("jobs " << jobs);
    RunOptions opts;
    opts.jobs = jobs;
    std::ostringstream out, err;
    REQUIRE(run_matrix(cells, opts, out, err) == 0);
    const std::regex line_form(
        R"(cell ([1-4])/4 (waitlist|single_lock) clients=(2|8) record_size=100: progress: [0-9.]+ s, )"
        R"([0-9.]+ tps, lat [0-9.]+ ms stddev [0-9.]+ \(virtual time, repetition ([12])/2\))");
    std::map<std::string, int> lines_per_cell_repetition;
    std::istringstream in(err.str());
    for (std::string line; std::getline(in, line);) {
      INFO(line);
      std::smatch m;
      REQUIRE(std::regex_match(line, m, line_form));
      const int position = std::stoi(m[1]);
      CHECK(m[2] == (position <= 2 ? "waitlist" : "single_lock"));
      CHECK(m[3] == (position % 2 ? "2" : "8"));
      ++lines_per_cell_repetition[std::string(m[1]) + "/" + std::string(m[4])];
    }
    CHECK(lines_per_cell_repetition.size() == 8);
    for (const auto& [key, n] : lines_per_cell_repetition) {
      INFO(key);
      CHECK(n == 6);
    }
  }

  RunOptions quiet;
  quiet.jobs = 4;
  quiet.quiet = true;
  std::ostringstream out, err;
  REQUIRE(run_matrix(cells, quiet, out, err) == 0);
  CHECK(err.str().empty());
}

}  // namespace
}  // namespace walbench

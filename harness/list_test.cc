// `walbench list platforms`: every simulator parameter with its unit, range and one-line doc,
// from the same table that validation enforces (SimConfig::param_info, sim_config.cc).
#include <catch2/catch.hpp>

#include <sstream>
#include <string>

#include "core/platform/sim.h"
#include "harness/list.h"

using namespace walbench;

TEST_CASE("list platforms shows each sim parameter's unit, range and doc", "[list]") {
  std::ostringstream out;
  print_list(out, "platforms");
  const std::string text = out.str();
  const nlohmann::json defaults = SimConfig{}.to_json();
  const auto infos = SimConfig::param_info();
  // The table covers every machine parameter of to_json() but the placement string.
  CHECK(infos.size() + 1 == defaults.size());
  for (const SimConfig::ParamInfo& p : infos) {
    INFO(p.name);
    CHECK(defaults.contains(p.name));
    CHECK_FALSE(p.unit.empty());
    CHECK_FALSE(p.doc.empty());
    // The parameter's row: name, type, default, then "range unit" in the allowed column.
    const size_t row = text.find("\n             " + p.name + " ");
    REQUIRE(row != std::string::npos);
    const std::string line = text.substr(row + 1, text.find('\n', row + 1) - row - 1);
    CHECK(line.find(p.range + " " + p.unit) != std::string::npos);
    CHECK(text.find("see core/platform/sim.h") == std::string::npos);
  }
}

TEST_CASE("sim validation enforces the listed ranges", "[list][sim]") {
  // Each parameter just outside its listed range is refused, naming the parameter and the range
  // the list shows.
  for (const SimConfig::ParamInfo& p : SimConfig::param_info()) {
    if (p.name == "sockets" || p.name == "cores_per_cluster") continue;  // cross-field rules
    INFO(p.name << " " << p.range);
    nlohmann::json bad;
    if (p.range.starts_with("[1,") || p.range == ">= 1") bad = 0;
    else if (p.range.starts_with(">= 64")) bad = 63;
    else if (p.range == "> 0") bad = 0;
    else if (p.range == "[0, 1)") bad = 1;
    else if (p.range == "[0, 1]") bad = 2;
    else if (p.range == "[0, 2]") bad = 3;
    else if (p.range == "[0, 4096]") bad = 5000;
    else if (p.range == ">= 0") continue;  // unsigned or non-negative: the JSON reader refuses -1
    else FAIL("no out-of-range probe for " << p.range);
    const nlohmann::json j = {{p.name, bad}};
    CHECK_THROWS_WITH(SimConfig::from_json(j, "/platform"),
                      Catch::Contains("/platform/" + p.name) && Catch::Contains(p.range));
  }
}

// The strategy registry interface. Each strategy is a class template over the platform (see the
// protocol block at the top of each strategies/<name>/<name>.h); type erasure happens only here,
// once per cell, so a run of one strategy on one platform is one instantiated function.
//
// registry.cc is an explicit list, one line per strategy: no static self-registration.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/cell/cell.h"

namespace walbench {

// One documented parameter of a strategy (or workload). The harness validates configs against
// these specs generically: type, range, choices, "did you mean" for unknown names.
struct ParamSpec {
  enum class Type { kInt, kDouble, kBool, kString };
  std::string name;
  Type type = Type::kInt;
  nlohmann::json default_value;
  std::string doc;
  std::vector<std::string> choices;  // kString: allowed values (empty = any)
  double min = 0;                    // kInt / kDouble: inclusive range
  double max = 0;
  bool power_of_two = false;         // kInt: must be a power of two
};

struct StrategyInfo {
  std::string name;     // config key, folder, file: "insert_locks"
  std::string origin;   // "PostgreSQL 9.4-16 / 17+ / 2023 patch (71e4cc6b8ec6)"
  std::string summary;  // one line for `walbench list`
  std::vector<ParamSpec> params;
  CellFactory make_cell = nullptr;  // builds the model on the cell's platform (make_cell.h)
};

// All registered strategies, in registry.cc order.
const std::vector<StrategyInfo>& strategies();
// nullptr when unknown.
const StrategyInfo* find_strategy(const std::string& name);

// A CLOG strategy: how a committing client gets its transaction tree's status into the commit
// log (the `clog` config section). Chosen per cell at run time (strategies/clog_choice.h): the
// choice is made once per commit, not per record, so it costs no template instantiation per
// insertion strategy.
struct ClogStrategyInfo {
  std::string name;     // config value of clog.strategy, folder, file: "clog_group_update"
  std::string origin;   // "PostgreSQL 11 (baaf272ac9)"
  std::string summary;  // one line for `walbench list clog`
  std::vector<ParamSpec> params;
};

// All registered CLOG strategies, in registry.cc order.
const std::vector<ClogStrategyInfo>& clog_strategies();
// nullptr when unknown.
const ClogStrategyInfo* find_clog_strategy(const std::string& name);

}  // namespace walbench

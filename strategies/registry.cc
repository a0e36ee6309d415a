// The explicit list of strategies: one entry per strategy, in the order `walbench list` shows
// them. Adding a strategy = one entry here (see strategies/README.md).
#include "strategies/strategy.h"

#include "strategies/ideal/ideal.h"
#include "strategies/insert_locks/insert_locks.h"
#include "strategies/single_lock/single_lock.h"

namespace walbench {

const std::vector<StrategyInfo>& strategies() {
  static const std::vector<StrategyInfo> list = {
      single_lock_info(),
      insert_locks_info(),
      ideal_info(),
  };
  return list;
}

const StrategyInfo* find_strategy(const std::string& name) {
  for (const auto& s : strategies())
    if (s.name == name) return &s;
  return nullptr;
}

}  // namespace walbench

// The explicit list of strategies: one entry per strategy, in the order `walbench list` shows
// them. Adding a strategy = one entry here (see strategies/README.md).
#include "strategies/strategy.h"

#include "strategies/clog_exclusive/clog_exclusive.h"
#include "strategies/clog_group_update/clog_group_update.h"
#include "strategies/consolidation_array/consolidation_array.h"
#include "strategies/ideal/ideal.h"
#include "strategies/insert_locks/insert_locks.h"
#include "strategies/link_buf/link_buf.h"
#include "strategies/lockfree_reserve/lockfree_reserve.h"
#include "strategies/per_client_progress/per_client_progress.h"
#include "strategies/single_lock/single_lock.h"
#include "strategies/write_group/write_group.h"

namespace walbench {

const std::vector<StrategyInfo>& strategies() {
  static const std::vector<StrategyInfo> list = {
      single_lock_info(),
      insert_locks_info(),
      lockfree_reserve_info(),
      link_buf_info(),
      per_client_progress_info(),
      write_group_info(),
      consolidation_array_info(),
      ideal_info(),
  };
  return list;
}

const StrategyInfo* find_strategy(const std::string& name) {
  for (const auto& s : strategies())
    if (s.name == name) return &s;
  return nullptr;
}

// CLOG strategies. NB: a new one also needs its case in strategies/clog_choice.h.
const std::vector<ClogStrategyInfo>& clog_strategies() {
  static const std::vector<ClogStrategyInfo> list = {
      clog_exclusive_info(),
      clog_group_update_info(),
  };
  return list;
}

const ClogStrategyInfo* find_clog_strategy(const std::string& name) {
  for (const auto& s : clog_strategies())
    if (s.name == name) return &s;
  return nullptr;
}

}  // namespace walbench

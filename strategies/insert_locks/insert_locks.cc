#include "strategies/insert_locks/insert_locks.h"

#include "strategies/make_cell.h"

namespace walbench {

namespace {
std::unique_ptr<CellRun> make_cell(const CellSpec& spec, uint64_t seed) {
  return make_wal_cell<InsertLocks>(
      spec, seed, false, InsertionLocksParams::from_json(spec.strategy_params, "insert_locks"));
}
}  // namespace

StrategyInfo insert_locks_info() {
  return {"insert_locks",
          "PostgreSQL 9.4-16 (68a2e52bba), 17+ (71e4cc6b8ec6), 2023 fast-path patch",
          "reserve under the insertpos_lck spinlock, copy under 1 of N insertion locks, "
          "publish progress through insertingAt",
          insertion_locks_param_specs(),
          &make_cell};
}

}  // namespace walbench

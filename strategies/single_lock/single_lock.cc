#include "strategies/single_lock/single_lock.h"

#include "strategies/make_cell.h"

namespace walbench {

namespace {
std::unique_ptr<CellRun> make_cell(const CellSpec& spec, uint64_t seed) {
  return make_wal_cell<SingleLock>(spec, seed, false);
}
}  // namespace

StrategyInfo single_lock_info() {
  return {"single_lock", "PostgreSQL <= 9.3 (one WALInsertLock; replaced by 9a20a9b21b in 9.4)",
          "one exclusive WALInsertLock held for reservation, prev link, copy and buffer advance",
          {},
          &make_cell};
}

}  // namespace walbench

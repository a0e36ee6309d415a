#include "strategies/single_lock/single_lock.h"

#include "core/platform/threads.h"
#include "harness/wal_cell.h"

namespace walbench {

namespace {
std::unique_ptr<CellRun> make_threads(const CellSpec& spec, uint64_t seed) {
  return std::make_unique<WalCell<ThreadsPlatform, SingleLock<ThreadsPlatform>>>(spec, seed,
                                                                                 false);
}
}  // namespace

StrategyInfo single_lock_info() {
  return {"single_lock", "PostgreSQL <= 9.3 (one WALInsertLock; replaced by 9a20a9b21b in 9.4)",
          "one exclusive WALInsertLock held for reservation, prev link, copy and buffer advance",
          {},
          &make_threads};
}

}  // namespace walbench

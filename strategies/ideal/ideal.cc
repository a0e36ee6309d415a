#include "strategies/ideal/ideal.h"

#include "core/platform/threads.h"
#include "harness/wal_cell.h"

namespace walbench {

namespace {
std::unique_ptr<CellRun> make_threads(const CellSpec& spec, uint64_t seed) {
  return std::make_unique<WalCell<ThreadsPlatform, PrivateStream<ThreadsPlatform>>>(spec, seed,
                                                                                    true);
}
}  // namespace

StrategyInfo ideal_info() {
  return {"ideal", "walbench baseline: no shared state (upper bound on this machine)",
          "each client CRCs, copies into its own buffer pages and writes them to its own "
          "storage; verified per private stream",
          {},
          &make_threads};
}

}  // namespace walbench

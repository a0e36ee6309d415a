#include "strategies/ideal/ideal.h"

#include "strategies/make_cell.h"

namespace walbench {

namespace {
std::unique_ptr<CellRun> make_cell(const CellSpec& spec, uint64_t seed) {
  return make_wal_cell<PrivateStream>(spec, seed, true);
}
}  // namespace

StrategyInfo ideal_info() {
  return {"ideal", "walbench baseline: no shared state (upper bound on this machine)",
          "each client CRCs, copies into its own buffer pages and writes them to its own "
          "storage; verified per private stream",
          {},
          &make_cell};
}

}  // namespace walbench

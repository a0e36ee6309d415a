#include "strategies/ideal/ideal.h"

#include <stdexcept>
#include <string>

#include "strategies/make_cell.h"

namespace walbench {

namespace {
std::unique_ptr<CellRun> make_cell(const CellSpec& spec, uint64_t seed) {
  if (const std::string why = ideal_refusal(spec); !why.empty()) throw std::invalid_argument(why);
  return make_wal_cell<PrivateStream>(spec, seed, true);
}
}  // namespace

std::string ideal_refusal(const CellSpec& spec) {
  if (spec.wal.storage == "file" && spec.wal.fsync)
    return "ideal is not a bound with wal.storage \"file\" and wal.fsync on: each private "
           "stream has files of its own, which one fdatasync does not cover (use storage "
           "\"memory\" or fsync false)";
  return {};
}

StrategyInfo ideal_info() {
  return {"ideal", "walbench baseline: an upper bound for every insertion strategy",
          "each client inserts into a private stream (own ring, no lock contended) with the "
          "shared WAL's group commit and WAL writer across the streams; verified per stream",
          {},
          &make_cell};
}

}  // namespace walbench

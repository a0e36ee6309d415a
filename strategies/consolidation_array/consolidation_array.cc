#include "strategies/consolidation_array/consolidation_array.h"

#include <stdexcept>
#include <string>

#include "strategies/make_cell.h"

namespace walbench {

ConsolidationArrayParams ConsolidationArrayParams::from_json(const nlohmann::json& j) {
  ConsolidationArrayParams p;
  if (j.contains("slots")) {
    const int64_t n = j.at("slots").get<int64_t>();
    if (n < 1 || n > 64)
      throw std::invalid_argument("consolidation_array: slots must be in [1, 64], got " +
                                  std::to_string(n));
    p.slots = static_cast<uint32_t>(n);
  }
  if (j.contains("delegated_release")) p.delegated_release = j.at("delegated_release").get<bool>();
  return p;
}

namespace {
std::unique_ptr<CellRun> make_cell(const CellSpec& spec, uint64_t seed) {
  return make_wal_cell<ConsolidationArray>(
      spec, seed, false, ConsolidationArrayParams::from_json(spec.strategy_params));
}
}  // namespace

StrategyInfo consolidation_array_info() {
  using T = ParamSpec::Type;
  std::vector<ParamSpec> params;
  params.push_back({"slots", T::kInt, 3,
                    "active slots of the consolidation array that clients join (Shore-MT/Zero: "
                    "3 active)",
                    {}, 1, 64});
  params.push_back({"delegated_release", T::kBool, true,
                    "a finished group whose predecessor is still copying hands its release to "
                    "that predecessor (Aether's delegated buffer release) instead of waiting",
                    {}});
  return {"consolidation_array",
          "Aether (Johnson et al., VLDB 2010 appendix A; VLDB Journal 2012), Shore-MT/Zero "
          "log_carray",
          "clients join 1 of N slots with a CAS; the group's leader reserves for all under "
          "insertpos_lck once; members copy in parallel; groups expose their end in order",
          std::move(params),
          &make_cell};
}

}  // namespace walbench

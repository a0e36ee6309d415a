#include "strategies/clog_group_update/clog_group_update.h"

#include <stdexcept>


namespace walbench {

ClogGroupUpdateParams ClogGroupUpdateParams::from_json(const nlohmann::json& j) {
  ClogGroupUpdateParams p;
  if (j.is_object() && j.contains("threshold_subxids"))
    p.threshold_subxids = j.at("threshold_subxids").get<uint32_t>();
  if (p.threshold_subxids > kMaxCachedSubxids)
    throw std::invalid_argument("clog_group_update: threshold_subxids must be <= 64 "
                                "(PGPROC_MAX_CACHED_SUBXIDS)");
  return p;
}

ClogStrategyInfo clog_group_update_info() {
  using T = ParamSpec::Type;
  return {"clog_group_update",
          "PostgreSQL 11-16 (baaf272ac9, thread \"Speed up Clog Access by increasing CLOG "
          "buffers\", Kapila 2015-17)",
          "if the control lock is busy, committers push themselves on an atomic list; the first "
          "takes the lock once and sets the status of the whole group, the others sleep on "
          "their semaphores; other page or too many subtransactions: the exclusive path",
          {
              {"threshold_subxids", T::kInt, kClogGroupThreshold,
               "THRESHOLD_SUBTRANS_CLOG_OPT: transactions with more subtransactions than this "
               "take the control lock themselves",
               {}, 0, kMaxCachedSubxids},
          }};
}

}  // namespace walbench

#include "strategies/per_client_progress/per_client_progress.h"

#include <stdexcept>
#include <string>

#include "strategies/make_cell.h"

namespace walbench {

PerClientProgressParams PerClientProgressParams::from_json(const nlohmann::json& j) {
  PerClientProgressParams p;
  if (j.contains("prev_link")) {
    const std::string v = j.at("prev_link").get<std::string>();
    if (v == "hash_table") p.prev_link = PrevLink::kHashTable;
    else if (v == "hash_table_offset") p.prev_link = PrevLink::kHashTableOffset;
    else if (v == "next_header")
      throw std::invalid_argument(
          "per_client_progress: prev_link \"next_header\" is not supported (its proof needs the "
          "insertion locks of lockfree_reserve); use \"hash_table\" or \"hash_table_offset\"");
    else throw std::invalid_argument("per_client_progress: unknown prev_link \"" + v + "\"");
  }
  return p;
}

namespace {
std::unique_ptr<CellRun> make_cell(const CellSpec& spec, uint64_t seed) {
  return make_wal_cell<PerClientProgress>(spec, seed, false,
                                          PerClientProgressParams::from_json(spec.strategy_params));
}
}  // namespace

StrategyInfo per_client_progress_info() {
  using T = ParamSpec::Type;
  std::vector<ParamSpec> params;
  params.push_back(
      {"prev_link", T::kString, "hash_table",
       "how xl_prev reaches the next record, through lockfree_reserve's link table of "
       "2 x clients entries: hash_table (64-bit {end, start} entries) or hash_table_offset "
       "(32-bit key + high word, 32-bit distance)",
       {"hash_table", "hash_table_offset"}});
  return {"per_client_progress",
          "Taurus (Xia et al., \"Taurus: Lightweight Parallel Logging for In-Memory Database "
          "Management Systems\", VLDB 2020; DBx1000 storage/log.cpp)",
          "reserve with one fetch_add, copy without a lock, each client publishes its progress "
          "in its own slot; WaitXLogInsertionsToFinish is the minimum over the clients",
          std::move(params),
          &make_cell};
}

}  // namespace walbench

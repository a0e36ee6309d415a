#include "strategies/lockfree_reserve/prev_link.h"

#include <stdexcept>

namespace walbench {

PrevLink parse_prev_link(const nlohmann::json& j, const char* strategy, PrevLink default_value) {
  if (!j.contains("prev_link")) return default_value;
  const std::string v = j.at("prev_link").get<std::string>();
  if (v == "next_header") return PrevLink::kNextHeader;
  if (v == "hash_table") return PrevLink::kHashTable;
  if (v == "hash_table_offset") return PrevLink::kHashTableOffset;
  throw std::invalid_argument(std::string(strategy) + ": unknown prev_link \"" + v + "\"");
}

ParamSpec prev_link_param_spec(const std::string& default_value) {
  return {"prev_link", ParamSpec::Type::kString, default_value,
          "how xl_prev reaches the next record: next_header (Zhou: written into the next record's "
          "header slot in the WAL buffer), hash_table (Sokolov: lock-free link table, 64-bit "
          "{end, start} entries), hash_table_offset (its 32-bit mode: key + high word, 32-bit "
          "distance to the previous record)",
          {"next_header", "hash_table", "hash_table_offset"}};
}

}  // namespace walbench

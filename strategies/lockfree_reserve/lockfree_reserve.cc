#include "strategies/lockfree_reserve/lockfree_reserve.h"

#include <stdexcept>
#include <string>

#include "strategies/make_cell.h"

namespace walbench {

LockfreeReserveParams LockfreeReserveParams::from_json(const nlohmann::json& j) {
  LockfreeReserveParams p;
  p.locks = InsertionLocksParams::from_json(j, "lockfree_reserve");
  if (j.contains("prev_link")) {
    const std::string v = j.at("prev_link").get<std::string>();
    if (v == "next_header") p.prev_link = PrevLink::kNextHeader;
    else if (v == "hash_table") p.prev_link = PrevLink::kHashTable;
    else if (v == "hash_table_offset") p.prev_link = PrevLink::kHashTableOffset;
    else throw std::invalid_argument("lockfree_reserve: unknown prev_link \"" + v + "\"");
  }
  return p;
}

namespace {
std::unique_ptr<CellRun> make_cell(const CellSpec& spec, uint64_t seed) {
  return make_wal_cell<LockfreeReserve>(spec, seed, false,
                                        LockfreeReserveParams::from_json(spec.strategy_params));
}
}  // namespace

StrategyInfo lockfree_reserve_info() {
  using T = ParamSpec::Type;
  std::vector<ParamSpec> params = insertion_locks_param_specs(
      "number of WAL insertion locks (NUM_XLOGINSERT_LOCKS); the link table has 2 x num_locks "
      "entries. PostgreSQL's 8 by default; Zhou's RFC used 128");
  params.push_back(
      {"prev_link", T::kString, "hash_table",
       "how xl_prev reaches the next record: next_header (Zhou: written into the next record's "
       "header slot in the WAL buffer), hash_table (Sokolov: lock-free link table, 64-bit "
       "{end, start} entries), hash_table_offset (its 32-bit mode: key + high word, 32-bit "
       "distance to the previous record)",
       {"next_header", "hash_table", "hash_table_offset"}});
  return {"lockfree_reserve",
          "\"[RFC] Lock-free XLog Reservation from WAL\" (Zhou, pgsql-hackers 2025-01) and "
          "\"Lock-free XLog Reservation using lock-free hash-table\" (Sokolov, 2025)",
          "reserve with one fetch_add on CurrBytePos, hand xl_prev to the successor through its "
          "header slot or a lock-free link table, copy under 1 of N insertion locks",
          std::move(params),
          &make_cell};
}

}  // namespace walbench

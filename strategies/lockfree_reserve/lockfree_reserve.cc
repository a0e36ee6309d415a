#include "strategies/lockfree_reserve/lockfree_reserve.h"

#include "strategies/make_cell.h"

namespace walbench {

LockfreeReserveParams LockfreeReserveParams::from_json(const nlohmann::json& j) {
  LockfreeReserveParams p;
  p.locks = InsertionLocksParams::from_json(j, "lockfree_reserve");
  p.prev_link = parse_prev_link(j, "lockfree_reserve", p.prev_link);
  return p;
}

namespace {
std::unique_ptr<CellRun> make_cell(const CellSpec& spec, uint64_t seed) {
  return make_wal_cell<LockfreeReserve>(spec, seed, false,
                                        LockfreeReserveParams::from_json(spec.strategy_params));
}
}  // namespace

StrategyInfo lockfree_reserve_info() {
  std::vector<ParamSpec> params = insertion_locks_param_specs(
      "number of WAL insertion locks (NUM_XLOGINSERT_LOCKS); the link table has 2 x num_locks "
      "entries. PostgreSQL's 8 by default; Zhou's RFC used 128");
  params.push_back(prev_link_param_spec("hash_table"));
  return {"lockfree_reserve",
          "\"[RFC] Lock-free XLog Reservation from WAL\" (Zhou, pgsql-hackers 2025-01) and "
          "\"Lock-free XLog Reservation using lock-free hash-table\" (Sokolov, 2025)",
          "reserve with one fetch_add on CurrBytePos, hand xl_prev to the successor through its "
          "header slot or a lock-free link table, copy under 1 of N insertion locks",
          std::move(params),
          &make_cell};
}

}  // namespace walbench

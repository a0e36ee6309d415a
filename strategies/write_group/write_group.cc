#include "strategies/write_group/write_group.h"

#include <stdexcept>
#include <string>

#include "strategies/make_cell.h"

namespace walbench {

WriteGroupParams WriteGroupParams::from_json(const nlohmann::json& j) {
  WriteGroupParams p;
  if (j.contains("max_group_bytes")) p.max_group_bytes = j.at("max_group_bytes").get<uint64_t>();
  if (j.contains("copy")) {
    const std::string v = j.at("copy").get<std::string>();
    if (v == "leader") p.copy = GroupCopy::kLeader;
    else if (v == "parallel") p.copy = GroupCopy::kParallel;
    else throw std::invalid_argument("write_group: unknown copy \"" + v + "\"");
  }
  if (j.contains("spin_count")) p.spin_count = j.at("spin_count").get<uint32_t>();
  if (j.contains("max_yield_us")) p.max_yield_us = j.at("max_yield_us").get<uint32_t>();
  if (j.contains("slow_yield_us")) p.slow_yield_us = j.at("slow_yield_us").get<uint32_t>();
  if (j.contains("adaptive_yield")) p.adaptive_yield = j.at("adaptive_yield").get<bool>();
  return p;
}

namespace {
std::unique_ptr<CellRun> make_cell(const CellSpec& spec, uint64_t seed) {
  return make_wal_cell<WriteGroup>(spec, seed, false,
                                   WriteGroupParams::from_json(spec.strategy_params));
}
}  // namespace

StrategyInfo write_group_info() {
  using T = ParamSpec::Type;
  std::vector<ParamSpec> params = {
      {"max_group_bytes", T::kInt, 1 << 20,
       "group byte cap (max_write_batch_group_size_bytes, 1 MiB); a leader whose record is at "
       "most 1/8 of it caps its group at its own size + 1/8 of it",
       {}, 8, double(1u << 30)},
      {"copy", T::kString, "leader",
       "who copies the group's records into the WAL buffer: leader (all of them, as RocksDB's "
       "WAL write) or parallel (each member its own, as allow_concurrent_memtable_write)",
       {"leader", "parallel"}},
      {"spin_count", T::kInt, 200,
       "AwaitState: PAUSE loops before the yield phase (flushers: before yielding)", {}, 0,
       1e6},
      {"max_yield_us", T::kInt, 100,
       "AwaitState: longest yield phase before blocking on the semaphore "
       "(write_thread_max_yield_usec); 0: spin, then block",
       {}, 0, 1e6},
      {"slow_yield_us", T::kInt, 3,
       "AwaitState: a yield this long or longer is slow; 3 slow yields end the yield phase "
       "(write_thread_slow_yield_usec)",
       {}, 0, 1e6},
      {"adaptive_yield", T::kBool, true,
       "AwaitState: yield only while the client's yield credit is not negative (sampled 1/256 "
       "otherwise), as enable_write_thread_adaptive_yield; false: always try the yield phase",
       {}},
  };
  return {"write_group",
          "RocksDB WriteThread (db/write_thread.cc: JoinBatchGroup, EnterAsBatchGroupLeader, "
          "ExitAsBatchGroupLeader, AwaitState)",
          "join a lock-free stack; the first writer leads: reserves the group's WAL under "
          "insertpos_lck once, chains xl_prev, copies (or has each member copy) and hands "
          "leadership on; spin-yield-block waiting",
          std::move(params),
          &make_cell};
}

}  // namespace walbench

#include "strategies/insert_locks/insert_locks.h"

#include "strategies/make_cell.h"

namespace walbench {

InsertLocksParams InsertLocksParams::from_json(const nlohmann::json& j) {
  InsertLocksParams p;
  if (j.contains("num_locks")) p.num_locks = j.at("num_locks").get<uint32_t>();
  if (j.contains("insertingat")) {
    const std::string v = j.at("insertingat").get<std::string>();
    p.insertingat = v == "waitlist"  ? VarProtocol::kWaitList
                    : v == "atomic" ? VarProtocol::kAtomic
                                    : VarProtocol::kAtomicFastPath;
  }
  if (j.contains("lock_choice"))
    p.lock_choice = j.at("lock_choice").get<std::string>() == "random_stride"
                        ? LockChoice::kRandomStride
                        : LockChoice::kProcno;
  if (p.num_locks == 0 || (p.num_locks & (p.num_locks - 1)) != 0)
    throw std::invalid_argument("insert_locks: num_locks must be a power of two");
  return p;
}

namespace {
std::unique_ptr<CellRun> make_cell(const CellSpec& spec, uint64_t seed) {
  return make_wal_cell<InsertLocks>(spec, seed, false, InsertLocksParams::from_json(spec.strategy_params));
}
}  // namespace

StrategyInfo insert_locks_info() {
  using T = ParamSpec::Type;
  return {"insert_locks",
          "PostgreSQL 9.4-16 (68a2e52bba), 17+ (71e4cc6b8ec6), 2023 fast-path patch",
          "reserve under the insertpos_lck spinlock, copy under 1 of N insertion locks, "
          "publish progress through insertingAt",
          {
              {"num_locks", T::kInt, 8, "number of WAL insertion locks (NUM_XLOGINSERT_LOCKS)",
               {}, 1, 1024, true},
              {"insertingat", T::kString, "atomic",
               "insertingAt protocol: waitlist (PG 9.4-16), atomic (PG 17+), atomic_fastpath "
               "(2023 v6 patch: skip the wait-list lock in UpdateVar when nobody waits)",
               {"waitlist", "atomic", "atomic_fastpath"}},
              {"lock_choice", T::kString, "procno",
               "which insertion lock a client takes: procno (pgprocno % N, next after a wait) or "
               "random_stride (random start, odd stride, two conditional tries; 2025 proposal)",
               {"procno", "random_stride"}},
          },
          &make_cell};
}

}  // namespace walbench

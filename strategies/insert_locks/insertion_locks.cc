#include "strategies/insert_locks/insertion_locks.h"

#include <stdexcept>
#include <string>

namespace walbench {

InsertionLocksParams InsertionLocksParams::from_json(const nlohmann::json& j,
                                                     const char* strategy) {
  const std::string who = strategy;
  InsertionLocksParams p;
  if (j.contains("num_locks")) p.num_locks = j.at("num_locks").get<uint32_t>();
  if (j.contains("insertingat")) {
    const std::string v = j.at("insertingat").get<std::string>();
    if (v == "waitlist") p.insertingat = VarProtocol::kWaitList;
    else if (v == "atomic") p.insertingat = VarProtocol::kAtomic;
    else if (v == "atomic_fastpath") p.insertingat = VarProtocol::kAtomicFastPath;
    else throw std::invalid_argument(who + ": unknown insertingat \"" + v + "\"");
  }
  if (j.contains("lock_choice")) {
    const std::string v = j.at("lock_choice").get<std::string>();
    if (v == "procno") p.lock_choice = LockChoice::kProcno;
    else if (v == "random_stride") p.lock_choice = LockChoice::kRandomStride;
    else throw std::invalid_argument(who + ": unknown lock_choice \"" + v + "\"");
  }
  if (j.contains("xlog")) {
    const std::string v = j.at("xlog").get<std::string>();
    if (v == "auto") p.xlog = XlogVersion::kAuto;
    else if (v == "pg16") p.xlog = XlogVersion::kPg16;
    else if (v == "pg17") p.xlog = XlogVersion::kPg17;
    else throw std::invalid_argument(who + ": unknown xlog \"" + v + "\"");
  }
  if (p.num_locks == 0 || (p.num_locks & (p.num_locks - 1)) != 0)
    throw std::invalid_argument(who + ": num_locks must be a power of two");
  return p;
}

std::vector<ParamSpec> insertion_locks_param_specs(const std::string& num_locks_doc) {
  using T = ParamSpec::Type;
  return {
      {"num_locks", T::kInt, 8,
       num_locks_doc.empty() ? "number of WAL insertion locks (NUM_XLOGINSERT_LOCKS)"
                             : num_locks_doc,
       {}, 1, 1024, true},
      {"insertingat", T::kString, "atomic",
       "insertingAt protocol: waitlist (PG 9.4-16), atomic (PG 17+), atomic_fastpath "
       "(2023 v6 patch: skip the wait-list lock in UpdateVar when nobody waits)",
       {"waitlist", "atomic", "atomic_fastpath"}},
      {"lock_choice", T::kString, "procno",
       "which insertion lock a client takes: procno (pgprocno % N, next after a wait) or "
       "random_stride (random start, odd stride, two conditional tries; 2025 proposal)",
       {"procno", "random_stride"}},
      {"xlog", T::kString, "auto",
       "the xlog.c around the locks: pg16 (WaitXLogInsertionsToFinish without logInsertResult, "
       "LogwrtResult under info_lck), pg17 (logInsertResult early exit and monotonic advance, "
       "atomic LogwrtResult: f3ff7bf83b, ee1cbe806d) or auto (pg16 with insertingat waitlist, "
       "pg17 otherwise); the 2023 thread's v6 patch (atomic_fastpath) ran on PG 16: xlog pg16",
       {"auto", "pg16", "pg17"}},
  };
}

}  // namespace walbench

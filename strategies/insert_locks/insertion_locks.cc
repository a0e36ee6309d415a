#include "strategies/insert_locks/insertion_locks.h"

#include <initializer_list>
#include <stdexcept>
#include <string>
#include <utility>

namespace walbench {

namespace {

// j[key], when present, as the value paired with its name; an unknown name is an error naming
// the strategy and the key.
template <class T>
void read_choice(const nlohmann::json& j, const char* key, const std::string& who,
                 std::initializer_list<std::pair<const char*, T>> choices, T* out) {
  if (!j.contains(key)) return;
  const std::string v = j.at(key).get<std::string>();
  for (const auto& [name, value] : choices) {
    if (v == name) {
      *out = value;
      return;
    }
  }
  throw std::invalid_argument(who + ": unknown " + key + " \"" + v + "\"");
}

}  // namespace

InsertionLocksParams InsertionLocksParams::from_json(const nlohmann::json& j,
                                                     const char* strategy) {
  const std::string who = strategy;
  InsertionLocksParams p;
  if (j.contains("num_locks")) p.num_locks = j.at("num_locks").get<uint32_t>();
  read_choice<VarProtocol>(j, "insertingat", who,
                           {{"waitlist", VarProtocol::kWaitList},
                            {"atomic", VarProtocol::kAtomic},
                            {"atomic_fastpath", VarProtocol::kAtomicFastPath}},
                           &p.insertingat);
  read_choice<LockChoice>(j, "lock_choice", who,
                          {{"procno", LockChoice::kProcno},
                           {"random_stride", LockChoice::kRandomStride}},
                          &p.lock_choice);
  read_choice<XlogVersion>(j, "xlog", who,
                           {{"auto", XlogVersion::kAuto},
                            {"pg16", XlogVersion::kPg16},
                            {"pg17", XlogVersion::kPg17}},
                           &p.xlog);
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

// ShmemVariableCache: the shared transaction counters, in one struct apart from the locks that
// protect them (PostgreSQL 15 access/transam.h VariableCacheData; TransamVariablesData in 17).
// walbench models the three its paths touch, on one 64-byte line as PostgreSQL lays them out:
// nextXid at byte 8 (written by GetNewTransactionId under XidGenLock), latestCompletedXid at 48
// and xactCompletionCount at 56 (written by ProcArrayEndTransaction under ProcArrayLock
// exclusive, read by GetSnapshotData under it shared). Those are PostgreSQL's offsets; the model
// keeps 32-bit xids and leaves out the struct's other fields, so its own offsets are 0, 4 and 8:
// only which line they share is modelled, and the line is the same. ShmemInitStruct hands out cache-line
// aligned memory (shmem.c ShmemAllocRaw, CACHELINEALIGN since 9.6, 09adc9a8c09c), so the three
// share the struct's first line: a commit's stores, the next xid assignment and every snapshot
// meet there, and on neither lock's line. Until 2026-12-06 the model kept nextXid on
// XidGenLock's line and the other two on ProcArrayLock's, so an exclusive holder's stores
// competed with that lock's own queueing traffic (results/README.md ledger).
#pragma once

#include <cstdint>

#include "core/platform/line_names.h"
#include "core/platform/platform.h"
#include "core/wal/types.h"

namespace walbench {

template <class P>
struct alignas(64) VariableCache {
  explicit VariableCache(Xid first_xid = kFirstNormalXid) : next_xid{first_xid.value} {
    static_assert(sizeof(VariableCache) == 64 && alignof(VariableCache) == 64,
                  "VariableCache: the three counters fill exactly one line of their own");
    if constexpr (runs_in_virtual_time<P>()) {  // `walbench run --top-lines` (line_names.h)
      line_names::add(&next_xid, sizeof(next_xid), "nextXid");
      line_names::add(&latest_completed, sizeof(latest_completed), "latestCompletedXid");
      line_names::add(&xact_completion_count, sizeof(xact_completion_count), "xactCompletionCount");
    }
  }
  ~VariableCache() {
    if constexpr (runs_in_virtual_time<P>()) {
      line_names::remove(&next_xid);
      line_names::remove(&latest_completed);
      line_names::remove(&xact_completion_count);
    }
  }
  VariableCache(const VariableCache&) = delete;
  VariableCache& operator=(const VariableCache&) = delete;

  typename P::template Shared<uint32_t> next_xid;                                      // XidGenLock
  typename P::template Shared<uint32_t> latest_completed{kFirstNormalXid.value - 1};   // ProcArrayLock
  typename P::template Shared<uint64_t> xact_completion_count{1};  // ProcArrayLock; 1 at startup, as in PG
};

}  // namespace walbench

// Outcome of walking written WAL (core/wal/verifier.h) or checking CLOG.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace walbench {

struct VerifyResult {
  bool ok = true;
  bool skipped = false;
  std::string error;       // first error, pg_waldump-like: "at 0/01A2B3C8: prev link ..."
  uint64_t records = 0;    // records walked
  uint64_t bytes = 0;      // WAL bytes walked (LSN distance)
  // CLOG (core/clog/clog.h verify_clog), only when a transactional workload ran.
  bool clog_checked = false;
  uint64_t clog_xids = 0;       // status entries checked (every xid on every CLOG page)
  uint64_t clog_committed = 0;  // of which COMMITTED: transactions and subtransactions
  uint64_t clog_top_level = 0;  // top-level transactions among them

  nlohmann::json to_json() const {
    nlohmann::json j = {{"ok", ok}, {"records", records}, {"bytes", bytes}};
    if (clog_checked)
      j["clog"] = {{"xids", clog_xids}, {"committed", clog_committed},
                   {"top_level", clog_top_level}};
    if (skipped) j["skipped"] = true;
    if (!error.empty()) j["error"] = error;
    return j;
  }
};

}  // namespace walbench

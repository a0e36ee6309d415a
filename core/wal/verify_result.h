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

  nlohmann::json to_json() const {
    nlohmann::json j = {{"ok", ok}, {"records", records}, {"bytes", bytes}};
    if (skipped) j["skipped"] = true;
    if (!error.empty()) j["error"] = error;
    return j;
  }
};

}  // namespace walbench

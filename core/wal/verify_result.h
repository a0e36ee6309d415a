// Outcome of walking written WAL (core/wal/verifier.h) or checking CLOG.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace walbench {

// Records of one type (resource manager and info byte) the WAL verifier walked: what
// pg_waldump --stats=record counts as N and "Record size" (no full-page images here).
struct RecordTypeTally {
  uint64_t count = 0;
  uint64_t bytes = 0;  // sum of xl_tot_len
  bool operator==(const RecordTypeTally&) const = default;
};
// Key of record_types: rmid << 8 | info.
constexpr uint16_t record_type_key(uint8_t rmid, uint8_t info) {
  return static_cast<uint16_t>(rmid << 8 | info);
}

struct VerifyResult {
  bool ok = true;
  bool skipped = false;
  std::string error;       // first error, pg_waldump-like: "at 0/01A2B3C8: prev link ..."
  uint64_t records = 0;    // records walked
  uint64_t bytes = 0;      // WAL bytes walked (LSN distance)
  // Records walked by type (record_type_key); not in the result JSON (tests compare it with
  // pg_waldump's statistics).
  std::map<uint16_t, RecordTypeTally> record_types;
  // CLOG (core/clog/clog.h verify_clog), only when a transactional workload ran.
  bool clog_checked = false;
  uint64_t clog_xids = 0;       // status entries checked (every xid on every CLOG page)
  uint64_t clog_committed = 0;  // of which COMMITTED: transactions and subtransactions
  uint64_t clog_top_level = 0;  // top-level transactions among them
  // Streaming verification (StreamingVerifier, memory storage): checked while the run wrote.
  // The lag and the writer's waits depend on the host's timing: recorded for real threads only
  // (on the simulated platform they would make identical runs differ, and cost no virtual time).
  bool streamed = false;
  bool host_timing = true;
  uint64_t ring_bytes = 0;       // the storage's memory: the ring the WAL was recycled through
  uint64_t max_lag_bytes = 0;    // most bytes written but not yet checked at any time
  uint64_t writer_waits = 0;     // writes that waited for the verifier to free a chunk
  double writer_wait_ms = 0;     // host time they waited

  nlohmann::json to_json() const {
    nlohmann::json j = {{"ok", ok}, {"records", records}, {"bytes", bytes}};
    if (streamed && host_timing)
      j["streaming"] = {{"ring_bytes", ring_bytes}, {"max_lag_bytes", max_lag_bytes},
                        {"writer_waits", writer_waits}, {"writer_wait_ms", writer_wait_ms}};
    else if (streamed)
      j["streaming"] = {{"ring_bytes", ring_bytes}};
    if (clog_checked)
      j["clog"] = {{"xids", clog_xids}, {"committed", clog_committed},
                   {"top_level", clog_top_level}};
    if (skipped) j["skipped"] = true;
    if (!error.empty()) j["error"] = error;
    return j;
  }
};

}  // namespace walbench

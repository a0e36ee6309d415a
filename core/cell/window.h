// What a cell driver counts of a repetition while it runs, on every platform: the differences of
// counter snapshots taken at the ends of the timed window (model and simulator counters), and
// the progress points (throughput and latency per interval) that the progress lines and the
// trust warnings read. The thread monitor (harness/threads_monitor.cc) and the simulated
// platform's drive() (core/cell/wal_cell.h) use the same code, so both platforms count alike.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/cell/cell.h"
#include "core/cell/spec.h"

namespace walbench {

// Keys of a model_stats() / simulator-counter object that are levels or names, not counts: a
// window keeps their value at its end instead of a difference.
bool is_gauge_key(const std::string& key);
// end - start, member by member (objects recursively): what the counters counted between two
// snapshots. Unsigned integers stay integers; gauges (is_gauge_key) and strings keep `end`'s
// value; a member missing from `start` counts from 0.
nlohmann::json counter_delta(const nlohmann::json& end, const nlohmann::json& start);

// One progress line: throughput over the interval and the mean and population stddev of the
// latencies of the transactions that ended in it (NaN, written as null and printed "n/a", when
// none did).
struct ProgressPoint {
  double tps = 0, lat_ms = 0, stddev_ms = 0;
};
// Differences the clients' txns and all_lat_* counters from one progress point to the next.
// Used by the thread monitor and by the simulated platform's drive() alike.
class ProgressMeter {
 public:
  explicit ProgressMeter(uint32_t clients) : last_txns_(clients, 0), last_(clients) {}
  ProgressPoint point(const std::vector<ClientCounters>& counters, double interval_s);

 private:
  std::vector<uint64_t> last_txns_;
  std::vector<LatencySums> last_;
};

// The interval of the progress points of a repetition: run.progress_interval_s, or, when that is
// 0 (no lines printed), 1/20 of warm-up + window, so that the trust warnings (trend, warm-up)
// always have points to look at.
double progress_step_s(const RunSpec& rs);

}  // namespace walbench

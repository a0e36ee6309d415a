// Lock-wait traces (`walbench run --trace FILE.json`, README "Lock-wait traces"): the writer's
// side of core/trace.h. A LockTracer owns one ClientTrace per Proc of a repetition (clients,
// then the WAL writer), drains their single-producer queues on its own writer thread while the
// repetition runs, and at the end writes a Chrome trace event file (JSON object format) that
// Perfetto and chrome://tracing open:
//   pid 1 "clients": one thread track per Proc (tid = procno + 1, named "client N" or "WAL
//     writer") with B/E slices: "wait <lock>" (first failed attempt to acquisition), "<lock>
//     exclusive|shared" (an LWLock held), the published wait events (semaphore sleeps, spinlock
//     backoff sleeps, I/O, client reads) by their pg_stat_activity names, and "i" instants for
//     spinlock acquisitions;
//   pid 2 "locks": one thread track per lock (tid = its number + 1) with a slice per exclusive
//     holder ("client N"), and one counter per lock ("C" events, args holders and queue: the
//     clients holding it and the clients waiting for it).
// ts are microseconds: virtual time on the simulator, time since the window's start on threads.
// Slices on a track nest: an end that is not the innermost open slice's closes the slices
// inside it and reopens them at the same instant (args "continued": true).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/trace.h"

namespace walbench {

struct TraceOptions {
  std::string path;        // the trace file
  double window_s = 0.1;   // seconds of the timed window recorded, from its start
};

struct TraceSummary {
  std::string path;
  bool window_opened = false;  // some event fell inside the window
  uint64_t events = 0;         // trace events written
  uint64_t dropped = 0;        // recorded events lost (full queue, too many open slices)
  uint64_t bytes = 0;          // the file's size
  std::string line() const;    // "trace: FILE, N events, D dropped, S bytes"
};

// One track's input to build_chrome_trace.
struct TraceTrackInput {
  std::string name;
  std::vector<ClientTrace::Open> open_at_start;
  std::vector<TraceEvent> events;  // in the client's order (its clock never goes back)
};

// The trace file's text from the tracks; ts_origin_ns is subtracted from every timestamp,
// [start_ns, end_ns) is the window (open slices begin at start_ns and end at the last event
// or end_ns, whichever is earlier). Counts the events it wrote in *events.
std::string build_chrome_trace(const std::vector<TraceTrackInput>& tracks, uint64_t ts_origin_ns,
                               uint64_t start_ns, uint64_t end_ns, const nlohmann::json& other_data,
                               uint64_t* events);

class LockTracer {
 public:
  // known_start_ns: the window's start if known in advance (TraceWindow::kUnknown: at the first
  // event that sees *measuring set). lossless: a full queue waits instead of dropping (sim).
  LockTracer(std::vector<std::string> track_names, const TraceOptions& opts, uint64_t (*clock)(),
             bool lossless, uint64_t known_start_ns, const std::atomic<bool>* measuring,
             uint64_t ts_origin_ns_if_known);
  ~LockTracer();
  LockTracer(const LockTracer&) = delete;
  LockTracer& operator=(const LockTracer&) = delete;

  ClientTrace* client(size_t i) { return clients_[i].get(); }
  size_t size() const { return clients_.size(); }
  // After every producer stopped (and the Procs no longer point here): drain, write the file
  // atomically. `about` goes into otherData.
  TraceSummary finish(nlohmann::json about);

 private:
  void drain();
  void writer_main();

  std::vector<std::string> names_;
  TraceOptions opts_;
  bool lossless_;
  bool origin_known_;
  uint64_t ts_origin_ns_;
  TraceWindow window_;
  std::vector<std::unique_ptr<ClientTrace>> clients_;
  std::vector<std::vector<TraceEvent>> events_;  // writer thread only, until finish()
  uint64_t stored_cap_;
  uint64_t stored_ = 0;
  uint64_t over_cap_ = 0;  // events drained past the memory cap (counted as dropped)
  std::atomic<bool> stop_{false};
  std::thread writer_;
};

}  // namespace walbench

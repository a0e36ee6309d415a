// Internal to the sim platform's .cc files: what they share besides sim.h.
#pragma once

#include <absl/container/flat_hash_map.h>

#include <cstddef>
#include <cstdint>

#include "core/platform/sim.h"

namespace walbench {

struct Simulation::LineMap {
  absl::flat_hash_map<uintptr_t, uint32_t> map;
};

// Every P operation of a fiber starts here (sim.h "SCHEDULER"), after the streamed loads it
// follows are back (sim.h "RUNS").
inline void Simulation::sync(Fiber& f) {
  settle_stream(f);
  order(f);
}

inline void Simulation::settle_stream(Fiber& f) {
  if (f.clock < f.stream_done) f.clock = f.stream_done;
}

inline void Simulation::order(Fiber& f) {
  if (f.clock >= f.slice_end) slice_expired(f);
  // Ties by sequence number, the running fiber included: this P operation is ordered as an event
  // created now (it would get the next number), so an event already pending at the same
  // nanosecond was created earlier and goes first. yield_ready queues exactly that event.
  if (f.clock >= next_time_) yield_ready(f);
}

namespace sim_internal {
constexpr size_t kLineCache = 4096;  // direct-mapped cache in front of the line map
constexpr uint64_t kLineBytes = 64;  // a cache line (sim.h COST MODEL): lines, ranges, working sets
constexpr unsigned kLineShift = 6;   // log2(kLineBytes)
static_assert(uint64_t{1} << kLineShift == kLineBytes);
static_assert(Simulation::kRunLineBytes == kLineBytes);
}  // namespace sim_internal

}  // namespace walbench

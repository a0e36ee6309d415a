// The sim platform's storage: writes into the page cache and a modelled device (FIFO queue,
// write bandwidth, fsync latency). Design: sim.h ("COST MODEL").
#include <algorithm>
#include <cmath>

#include "core/platform/sim.h"
#include "core/platform/sim_internal.h"

namespace walbench {

void Simulation::op_storage_write(size_t n) {
  Fiber* fp = cur_;
  if (fp == nullptr) return;
  Fiber& f = *fp;
  if (f.replay) end_replay(f);
  f.spin_addr = nullptr;
  sync(f);
  f.frac += static_cast<double>(n) / cfg_.copy_bytes_per_ns;  // into the page cache
  const uint64_t whole = static_cast<uint64_t>(f.frac);
  f.frac -= static_cast<double>(whole);
  f.clock += cfg_.syscall_ns + whole;
  device_pending_ += n;
  ++counters_.storage_writes;
  sync(f);
}

void Simulation::op_storage_sync() {
  Fiber* fp = cur_;
  if (fp == nullptr) return;
  Fiber& f = *fp;
  if (f.replay) end_replay(f);
  f.spin_addr = nullptr;
  sync(f);
  const uint64_t t0 = f.clock + cfg_.syscall_ns;
  uint64_t transfer = 0;
  if (cfg_.storage_write_bytes_per_ns > 0)
    transfer = static_cast<uint64_t>(std::ceil(static_cast<double>(device_pending_) / cfg_.storage_write_bytes_per_ns));
  const uint64_t done = std::max(device_free_, t0) + transfer + cfg_.fsync_ns;
  device_free_ = done;
  device_pending_ = 0;
  ++counters_.storage_syncs;
  f.clock = t0;
  release_cpu(f, t0);
  f.state = Fiber::State::kWaking;
  f.wait = Fiber::Wait::kStorage;
  push_event(f, done);
  switch_out(f);
}
}  // namespace walbench

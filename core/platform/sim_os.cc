// The sim platform's model of the CPU and the OS as a fiber sees them: work and copies (SMT,
// memory bandwidth), CRC, fences, sleeps and semaphores. Design: sim.h ("COST MODEL", "OS").
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

#include "core/platform/sim.h"
#include "core/platform/sim_internal.h"

namespace walbench {

// =============================================================================================
// Fiber side: CPU, semaphores, sleep, storage
// =============================================================================================
bool Simulation::sibling_busy(const Fiber& f) const {
  if (cfg_.smt == 1 || f.hw < 0) return false;
  for (uint32_t k = 0; k < cfg_.smt; ++k) {
    const uint32_t h = k * cfg_.cores + f.core;
    if (static_cast<int32_t>(h) != f.hw && occupant_[h] >= 0) return true;
  }
  return false;
}

void Simulation::op_work(uint64_t ns) {
  Fiber* fp = cur_;
  if (fp == nullptr || ns == 0) return;
  Fiber& f = *fp;
  settle_stream(f);  // sim.h "RUNS"
  if (sibling_busy(f))
    ns = static_cast<uint64_t>(std::llround(static_cast<double>(ns) * cfg_.smt_work_factor));
  if (f.replay) {  // inside a replayed spin loop: charge, do not yield
    f.clock += ns;
    return;
  }
  while (!runq_.empty() && f.clock + ns > f.slice_end) {
    const uint64_t part = f.slice_end > f.clock ? f.slice_end - f.clock : 0;
    f.clock += part;
    ns -= part;
    slice_expired(f);
  }
  f.clock += ns;
  sync(f);
}

void Simulation::op_crc(size_t n) {
  Fiber* fp = cur_;
  if (fp == nullptr || n == 0) return;
  Fiber& f = *fp;
  f.frac += static_cast<double>(n) / cfg_.crc_bytes_per_ns;
  const uint64_t whole = static_cast<uint64_t>(f.frac);
  f.frac -= static_cast<double>(whole);
  op_work(whole);
}

void Simulation::op_syscalls(uint32_t n) {
  if (cur_ == nullptr || n == 0) return;
  op_work(uint64_t{n} * cfg_.syscall_ns);
}

void Simulation::op_copy(size_t n) {
  Fiber* fp = cur_;
  if (fp == nullptr || n == 0) return;
  Fiber& f = *fp;
  if (f.replay) end_replay(f);
  f.spin_addr = nullptr;
  sync(f);  // the bandwidth server is shared: serve copies in virtual-time order
  double d = static_cast<double>(n) / cfg_.copy_bytes_per_ns;
  if (sibling_busy(f)) d *= cfg_.smt_work_factor;
  f.frac += d;
  const uint64_t whole = static_cast<uint64_t>(f.frac);
  f.frac -= static_cast<double>(whole);
  uint64_t done = f.clock + whole;
  if (cfg_.memory_bandwidth_bytes_per_ns > 0) {
    bus_free_ = std::max(bus_free_, static_cast<double>(f.clock)) +
                static_cast<double>(n) / cfg_.memory_bandwidth_bytes_per_ns;
    const uint64_t bus_done = static_cast<uint64_t>(std::ceil(bus_free_));
    if (bus_done > done) done = bus_done;
  }
  f.clock = done;
  counters_.copy_bytes += n;
  sync(f);
}

// A spin-loop iteration without PAUSE (SimPlatform::spin_no_pause): charged the loop's own
// instructions (semaphore_trylock_ns) instead of pause_ns, parked and replayed like op_spin_delay.
void Simulation::op_spin_no_pause() { spin_iteration(cfg_.semaphore_trylock_ns); }

void Simulation::op_fence() {
  Fiber* fp = cur_;
  if (fp == nullptr) return;
  settle_stream(*fp);
  fp->clock += cfg_.fence_ns;
  if (!fp->replay) sync(*fp);
}

void Simulation::op_sleep(uint64_t ns) {
  Fiber* fp = cur_;
  if (fp == nullptr || ns == 0) return;  // pg_usleep(0) returns at once
  Fiber& f = *fp;
  settle_stream(f);
  const uint64_t start = f.clock;  // exact even inside a replayed spin loop
  uint64_t floor = 0;
  if (f.replay) {
    floor = f.replay_until;  // the scheduler learns about the sleep only now
    f.replay = false;
  }
  f.spin_addr = nullptr;
  ++counters_.sleeps;
  const uint64_t wake = std::max(start + ns + jittered(cfg_.sleep_slack_ns), floor);
  release_cpu(f, std::max(start, now_));
  f.state = Fiber::State::kWaking;
  f.wait = Fiber::Wait::kSleep;
  push_event(f, wake);
  switch_out(f);
}

void Simulation::sem_wait(SimSemState& s) {
  Fiber* fp = cur_;
  if (fp == nullptr) {
    if (s.count > 0) {
      --s.count;
      return;
    }
    wait_would_block("Semaphore::wait in scheduler context");
  }
  Fiber& f = *fp;
  const uint32_t line = access(f, &s, Access::kRmw);  // the futex word
  if (s.count > 0) {
    --s.count;
    return;
  }
  f.sem_next = -1;
  f.sem = &s;
  f.wait_line = line;
  if (s.tail >= 0) fibers_[static_cast<uint32_t>(s.tail)]->sem_next = static_cast<int32_t>(f.index);
  else s.head = static_cast<int32_t>(f.index);
  s.tail = static_cast<int32_t>(f.index);
  f.state = Fiber::State::kBlocked;
  f.wait = Fiber::Wait::kSemaphore;
  ++counters_.semaphore_sleeps;
  release_cpu(f, f.clock);
  switch_out(f);  // back when posted and dispatched; the post handed us its unit
}

void Simulation::sem_post(SimSemState& s) {
  Fiber* fp = cur_;
  uint64_t t = now_;
  if (fp != nullptr) {
    access(*fp, &s, Access::kRmw);
    t = fp->clock;
  }
  if (s.head < 0) {
    ++s.count;
    return;
  }
  Fiber& w = *fibers_[static_cast<uint32_t>(s.head)];
  s.head = w.sem_next;
  if (s.head < 0) s.tail = -1;
  w.sem_next = -1;
  w.sem = nullptr;
  w.state = Fiber::State::kWaking;
  const bool idle_cpu = unclaimed_hw_free();
  uint64_t wake_ns = 0;
  if (idle_cpu) {
    w.idle_wake_in_flight = true;
    ++idle_wakes_in_flight_;
    if (!polling_cpu_for(w, t)) wake_ns = jittered(cfg_.semaphore_wake_ns);
  }
  push_event(w, t + wake_ns);
  ++counters_.semaphore_wakes;
  if (fp != nullptr) fp->clock += cfg_.semaphore_post_ns;
}

// OS "Idle polling": the hardware thread the waiter would be dispatched on (as arrive() picks
// it) has been idle for less than idle_poll_ns, so it is still polling and needs no IPI.
bool Simulation::polling_cpu_for(const Fiber& w, uint64_t t) const {
  if (cfg_.idle_poll_ns == 0) return false;
  const int32_t hw = pick_free_hw(w.last_hw);
  if (hw < 0) return false;
  const uint64_t since = idle_since_[static_cast<uint32_t>(hw)];
  if (since == kHaltedFromStart) return false;
  return t < since || t - since < cfg_.idle_poll_ns;  // t < since: it went idle just now
}

bool Simulation::sem_try_wait(SimSemState& s) {
  if (Fiber* fp = cur_) access(*fp, &s, Access::kRmw);
  if (s.count == 0) return false;
  --s.count;
  return true;
}

// =============================================================================================
// SimPlatform::Semaphore
// =============================================================================================
void SimPlatform::Semaphore::wait() {
  if (Simulation* s = Simulation::tl_sim_) {
    s->sem_wait(st_);
    return;
  }
  if (st_.count == 0) {
    std::fprintf(stderr, "SimPlatform::Semaphore::wait outside a simulation would block for ever\n");
    std::abort();
  }
  --st_.count;
}

void SimPlatform::Semaphore::post() {
  if (Simulation* s = Simulation::tl_sim_) {
    s->sem_post(st_);
    return;
  }
  ++st_.count;
}

bool SimPlatform::Semaphore::try_wait() {
  if (Simulation* s = Simulation::tl_sim_) return s->sem_try_wait(st_);
  if (st_.count == 0) return false;
  --st_.count;
  return true;
}
}  // namespace walbench

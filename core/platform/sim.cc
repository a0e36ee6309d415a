// The sim platform's scheduler: construction, fibers, the event heap, dispatch onto hardware
// threads, time slices and deadlock reports. Design: sim.h ("SCHEDULER", "OS").
#include "core/platform/sim.h"

#include <algorithm>
#include <boost/context/protected_fixedsize_stack.hpp>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#if defined(__SANITIZE_THREAD__)
#define WALBENCH_SIM_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WALBENCH_SIM_TSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define WALBENCH_SIM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WALBENCH_SIM_ASAN 1
#endif
#endif
#ifdef WALBENCH_SIM_TSAN
#include <sanitizer/tsan_interface.h>
#endif
#ifdef WALBENCH_SIM_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

#include "core/platform/sim_internal.h"

namespace walbench {

using sim_internal::kLineCache;

// =============================================================================================
// Simulation: construction, fibers
// =============================================================================================

// Stack allocator that records the stack bounds for the ASan annotations.
struct SimStackAlloc {
  size_t size;
  Simulation::Fiber* fiber;
  boost::context::stack_context allocate() {
    boost::context::stack_context sc = boost::context::protected_fixedsize_stack(size).allocate();
    fiber->stack_lo = static_cast<const char*>(sc.sp) - sc.size;
    fiber->stack_size = sc.size;
    return sc;
  }
  void deallocate(boost::context::stack_context& sc) noexcept {
    boost::context::protected_fixedsize_stack(size).deallocate(sc);
  }
};

Simulation::Simulation(const SimConfig& cfg, uint64_t seed)
    : cfg_((cfg.validate("sim config"), cfg)),
      seed_(seed),
      rng_(seed ^ 0x6A09E667F3BCC909ULL),
      hw_threads_(cfg.cores * cfg.smt),
      words_((cfg.cores + 63) / 64),
      line_map_(std::make_unique<LineMap>()),
      line_cache_(kLineCache) {
  const uint32_t cps = cfg_.cores / cfg_.sockets;
  const uint32_t cluster = cfg_.cores_per_cluster == 0 ? cps : cfg_.cores_per_cluster;
  socket_of_.resize(cfg_.cores);
  socket_lo_.resize(cfg_.cores);
  socket_hi_.resize(cfg_.cores);
  cluster_lo_.resize(cfg_.cores);
  cluster_hi_.resize(cfg_.cores);
  for (uint32_t c = 0; c < cfg_.cores; ++c) {
    socket_of_[c] = c / cps;
    socket_lo_[c] = socket_of_[c] * cps;
    socket_hi_[c] = socket_lo_[c] + cps;
    cluster_lo_[c] = socket_lo_[c] + (c - socket_lo_[c]) / cluster * cluster;
    cluster_hi_[c] = cluster_lo_[c] + cluster;
  }
  // Placement order: physical cores before SMT siblings; spread interleaves the sockets.
  for (uint32_t k = 0; k < cfg_.smt; ++k) {
    if (cfg_.placement == SimPlacement::kCompact) {
      for (uint32_t c = 0; c < cfg_.cores; ++c) pos_hw_.push_back(k * cfg_.cores + c);
    } else {
      for (uint32_t i = 0; i < cps; ++i)
        for (uint32_t s = 0; s < cfg_.sockets; ++s) pos_hw_.push_back(k * cfg_.cores + s * cps + i);
    }
  }
  hw_order_pos_.resize(hw_threads_);
  for (uint32_t pos = 0; pos < hw_threads_; ++pos) hw_order_pos_[pos_hw_[pos]] = pos;
  free_pos_bits_.assign((hw_threads_ + 63) / 64, 0);
  for (uint32_t pos = 0; pos < hw_threads_; ++pos) free_pos_bits_[pos / 64] |= uint64_t{1} << (pos % 64);
  free_hw_ = hw_threads_;
  occupant_.assign(hw_threads_, -1);
  idle_since_.assign(hw_threads_, kHaltedFromStart);
  cluster_of_.resize(cfg_.cores);
  for (uint32_t c = 0; c < cfg_.cores; ++c) cluster_of_[c] = cluster_lo_[c] / cluster;
  const size_t caches[2] = {cfg_.cores, cfg_.cores / cluster};
  for (uint32_t level = 0; level < 2; ++level) {
    cache_lru_[level].head.assign(caches[level], -1);
    cache_lru_[level].tail.assign(caches[level], -1);
    cache_lru_[level].size.assign(caches[level], 0);
  }
}

Simulation::~Simulation() {
  cancel_unfinished();
#ifdef WALBENCH_SIM_TSAN
  for (auto& f : fibers_)
    if (f->tsan != nullptr) __tsan_destroy_fiber(f->tsan);
#endif
}

size_t Simulation::spawn(std::function<void()> body, std::string name, bool keeps_working_set) {
  auto owned = std::make_unique<Fiber>();
  Fiber* f = owned.get();
  f->index = static_cast<uint32_t>(fibers_.size());
  f->keeps_working_set = keeps_working_set;
  f->body = std::move(body);
  f->name = std::move(name);
  f->ctx = boost::context::fiber(
      std::allocator_arg, SimStackAlloc{size_t{cfg_.stack_kib} * 1024, f},
      [this, f](boost::context::fiber&& sink) {
        sched_ = std::move(sink);
#ifdef WALBENCH_SIM_ASAN
        __sanitizer_finish_switch_fiber(nullptr, &sched_stack_lo_, &sched_stack_size_);
#endif
        fiber_main(*f);
#ifdef WALBENCH_SIM_TSAN
        __tsan_switch_to_fiber(sched_tsan_, 0);
#endif
#ifdef WALBENCH_SIM_ASAN
        __sanitizer_start_switch_fiber(nullptr, sched_stack_lo_, sched_stack_size_);
#endif
        return std::move(sched_);
      });
#ifdef WALBENCH_SIM_TSAN
  f->tsan = __tsan_create_fiber(0);
#endif
  const uint64_t t = cur_ != nullptr ? cur_->clock : now_;
  f->clock = t;
  f->state = Fiber::State::kWaking;
  f->wait = Fiber::Wait::kStart;
  fibers_.push_back(std::move(owned));
  push_event(*f, t);
  return f->index;
}

void Simulation::at(uint64_t ns, std::function<void()> fn) {
  const uint64_t t = std::max(ns, now_);
  timers_.push_back(std::move(fn));
  heap_push(Event{t, seq_++, kTimer, static_cast<uint32_t>(timers_.size() - 1)});
  next_time_ = std::min(next_time_, t);
}

void Simulation::fiber_main(Fiber& f) {
  if (!f.cancel) {
    try {
      f.body();
    } catch (const FiberCancelled&) {
    } catch (...) {
      if (!f.cancel) f.error = std::current_exception();
    }
  }
  if (!f.cancel) {
    settle_stream(f);
    end_clock_ = std::max(end_clock_, f.clock);
    if (f.hw >= 0) release_cpu(f, f.clock);
  }
  f.state = Fiber::State::kDone;
}

const std::string& Simulation::fiber_name(size_t i) const { return fibers_.at(i)->name; }
bool Simulation::fiber_finished(size_t i) const {
  return fibers_.at(i)->state == Fiber::State::kDone;
}
uint64_t Simulation::fiber_clock(size_t i) const { return fibers_.at(i)->clock; }
size_t Simulation::current_fiber() const { return cur_ == nullptr ? kNoFiber : cur_->index; }
// A clock read waits for the fiber's streamed misses in flight (sim.h "RUNS").
uint64_t Simulation::now_ns() const {
  return cur_ != nullptr ? std::max(cur_->clock, cur_->stream_done) : now_;
}

// =============================================================================================
// Scheduler
// =============================================================================================
void Simulation::heap_push(const Event& e) {
  size_t i = heap_.size();
  heap_.push_back(e);
  while (i > 0) {
    const size_t parent = (i - 1) / 2;
    if (!earlier(e, heap_[parent])) break;
    heap_[i] = heap_[parent];
    i = parent;
  }
  heap_[i] = e;
}

void Simulation::sift_down_from_root(const Event& e) {
  const size_t n = heap_.size();
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && earlier(heap_[c + 1], heap_[c])) ++c;
    if (!earlier(heap_[c], e)) break;
    heap_[i] = heap_[c];
    i = c;
  }
  heap_[i] = e;
}

Simulation::Event Simulation::heap_pop() {
  const Event top = heap_.front();
  const Event last = heap_.back();
  heap_.pop_back();
  if (!heap_.empty()) sift_down_from_root(last);
  return top;
}

void Simulation::push_event(Fiber& f, uint64_t t) {
  ++f.token;
  heap_push(Event{t, seq_++, f.index, f.token});
  f.event_time = t;
  if (t < next_time_) next_time_ = t;
}

void Simulation::recompute_next_time() {
  next_time_ = heap_.empty() ? limit_ : std::min(heap_.front().time, limit_);
}

SimOutcome Simulation::run(uint64_t until_ns) {
  if (running_ || tl_sim_ != nullptr)
    throw std::logic_error("Simulation::run: a simulation is already running on this thread");
  running_ = true;
  tl_sim_ = this;
#ifdef WALBENCH_SIM_TSAN
  sched_tsan_ = __tsan_get_current_fiber();
#endif
  limit_ = until_ns;
  SimStatus status = SimStatus::kFinished;
  for (;;) {
    if (error_) break;
    if (interrupted_.load(std::memory_order_relaxed)) {
      status = SimStatus::kInterrupted;
      break;
    }
    if (!fibers_.empty() && done_ == fibers_.size()) {
      status = SimStatus::kFinished;
      break;
    }
    const bool from_pending = has_pending_;
    if (!from_pending && heap_.empty()) {
      status = done_ == fibers_.size() ? SimStatus::kFinished : SimStatus::kDeadlock;
      break;
    }
    const Event e = from_pending ? pending_ : heap_.front();
    if (e.time > until_ns) {
      status = SimStatus::kTimeLimit;
      break;
    }
    if (from_pending) has_pending_ = false;
    else heap_pop();
    ++counters_.events;
    now_ = std::max(now_, e.time);
    recompute_next_time();
    if (e.fiber == kTimer) {
      std::function<void()> fn = std::move(timers_[e.token]);
      timers_[e.token] = nullptr;
      fn();
      continue;
    }
    Fiber& f = *fibers_[e.fiber];
    if (e.token != f.token) continue;  // superseded
    switch (f.state) {
      case Fiber::State::kReady:
        f.clock = std::max(f.clock, e.time);
        resume(f);
        break;
      case Fiber::State::kParked:
        if (f.park_line != kNoLine) unlink_parked(f);  // deadline, not a write
        f.wake_time = e.time;
        resume(f);
        break;
      case Fiber::State::kWaking:
        if (f.idle_wake_in_flight) {
          f.idle_wake_in_flight = false;
          --idle_wakes_in_flight_;
        }
        arrive(f, e.time);
        break;
      default:
        std::fprintf(stderr, "sim: internal error: event for fiber '%s' in state %d\n",
                     f.name.c_str(), static_cast<int>(f.state));
        std::abort();
    }
  }
  if (has_pending_) {
    heap_push(pending_);
    has_pending_ = false;
  }
  tl_sim_ = nullptr;
  running_ = false;
  limit_ = kForever;
  next_time_ = heap_.empty() ? kForever : heap_.front().time;
  if (error_) {
    std::exception_ptr e = std::exchange(error_, nullptr);
    std::rethrow_exception(e);
  }
  SimOutcome o = outcome(status);
  if (status == SimStatus::kTimeLimit) o.now_ns = until_ns;
  return o;
}

void Simulation::resume(Fiber& f) {
  cur_ = &f;
  f.state = Fiber::State::kCurrent;
  ++counters_.resumes;
#ifdef WALBENCH_SIM_TSAN
  __tsan_switch_to_fiber(f.tsan, 0);
#endif
#ifdef WALBENCH_SIM_ASAN
  __sanitizer_start_switch_fiber(&sched_fake_stack_, f.stack_lo, f.stack_size);
#endif
  f.ctx = std::move(f.ctx).resume();
#ifdef WALBENCH_SIM_ASAN
  __sanitizer_finish_switch_fiber(sched_fake_stack_, nullptr, nullptr);
#endif
  cur_ = nullptr;
  if (f.state == Fiber::State::kDone) {
    ++done_;
    f.body = nullptr;
#ifdef WALBENCH_SIM_TSAN
    __tsan_destroy_fiber(f.tsan);
    f.tsan = nullptr;
#endif
    if (f.error && !error_) error_ = f.error;
  }
}

void Simulation::switch_out(Fiber& f) {
#ifdef WALBENCH_SIM_TSAN
  __tsan_switch_to_fiber(sched_tsan_, 0);
#endif
#ifdef WALBENCH_SIM_ASAN
  __sanitizer_start_switch_fiber(&f.fake_stack, sched_stack_lo_, sched_stack_size_);
#endif
  sched_ = std::move(sched_).resume();
#ifdef WALBENCH_SIM_ASAN
  __sanitizer_finish_switch_fiber(f.fake_stack, &sched_stack_lo_, &sched_stack_size_);
#endif
  if (f.cancel) throw FiberCancelled{};
}

void Simulation::cancel_unfinished() {
  if (running_) throw std::logic_error("Simulation::cancel_unfinished inside run()");
  Simulation* const prev = tl_sim_;
  tl_sim_ = nullptr;  // P operations are plain while fibers unwind
#ifdef WALBENCH_SIM_TSAN
  sched_tsan_ = __tsan_get_current_fiber();
#endif
  for (auto& fp : fibers_) {
    Fiber& f = *fp;
    if (f.state == Fiber::State::kDone) continue;
    if (f.sem != nullptr) {  // every waiter of that semaphore belongs to this simulation
      f.sem->head = f.sem->tail = -1;
      f.sem = nullptr;
    }
    if (f.park_line != kNoLine) unlink_parked(f);
    f.cancel = true;
    resume(f);
  }
  heap_.clear();
  has_pending_ = false;
  runq_.clear();
  untimed_parked_.clear();
  error_ = nullptr;
  tl_sim_ = prev;
}

int32_t Simulation::pick_free_hw(int32_t preferred) const {
  if (preferred >= 0) {
    const uint32_t pos = hw_order_pos_[static_cast<uint32_t>(preferred)];
    if (free_pos_bits_[pos / 64] >> (pos % 64) & 1) return preferred;
  }
  for (size_t w = 0; w < free_pos_bits_.size(); ++w) {
    if (free_pos_bits_[w] != 0)
      return static_cast<int32_t>(pos_hw_[w * 64 + static_cast<size_t>(__builtin_ctzll(free_pos_bits_[w]))]);
  }
  return -1;
}

void Simulation::set_hw_free(uint32_t hw, bool free) {
  const uint32_t pos = hw_order_pos_[hw];
  const uint64_t bit = uint64_t{1} << (pos % 64);
  const bool was_free = (free_pos_bits_[pos / 64] & bit) != 0;
  if (free == was_free) return;
  free_pos_bits_[pos / 64] ^= bit;
  free ? ++free_hw_ : --free_hw_;
}

bool Simulation::unclaimed_hw_free() const { return free_hw_ > idle_wakes_in_flight_; }

void Simulation::arrive(Fiber& f, uint64_t t) {
  advance_fair_clock(t);
  const bool wakeup = f.dispatched_once;
  if (wakeup && cfg_.wakeup_preemption == 2)  // CFS place_entity: the sleeper's credit
    f.vruntime = std::max(f.vruntime, fair_clock_ - static_cast<double>(cfg_.sleeper_credit_ns));
  const int32_t hw = unclaimed_hw_free() ? pick_free_hw(f.last_hw) : -1;
  if (hw >= 0) {
    dispatch(f, static_cast<uint32_t>(hw), t);
    return;
  }
  f.state = Fiber::State::kRunQueue;
  f.ready_at = t;
  runq_.push_back(f.index);
  if (wakeup && f.last_hw >= 0 && cfg_.wakeup_preemption != 0) {
    const auto last = static_cast<uint32_t>(f.last_hw);
    if (cfg_.wakeup_preemption == 1 || wakeup_preempts(f, last, t)) preempt_for_wakeup(last, t);
  }
  arm_untimed_parks();
}

// OS "Wake-up preemption", rule 2 (CFS check_preempt_wakeup): the wakee preempts the thread on
// `hw` when that one's vruntime, its CPU time so far included, is ahead by more than the
// wakeup granularity.
bool Simulation::wakeup_preempts(Fiber& wakee, uint32_t hw, uint64_t t) const {
  const int32_t v = occupant_[hw];
  if (v < 0) return false;
  const Fiber& g = *fibers_[static_cast<uint32_t>(v)];
  const double running_for = t > g.run_start ? static_cast<double>(t - g.run_start) : 0.0;
  return g.vruntime + running_for - wakee.vruntime > static_cast<double>(cfg_.wakeup_granularity_ns);
}

// The fair clock advances by the CPU share a runnable thread gets: the hardware threads in use
// over the threads running or queued (the vruntime of a thread that was always runnable; not
// CFS's min_vruntime, sim.h OS "Wake-up preemption" says where they part). Called before the
// counts change, so each interval uses its own counts; an instant earlier than the last one
// (fiber clocks run ahead of the scheduler's) adds nothing.
void Simulation::advance_fair_clock(uint64_t t) {
  if (t <= fair_clock_at_) return;
  const uint64_t running = static_cast<uint64_t>(cfg_.cores) * cfg_.smt - free_hw_;
  if (running != 0)
    fair_clock_ += static_cast<double>(t - fair_clock_at_) * static_cast<double>(running) /
                   static_cast<double>(running + runq_.size());
  fair_clock_at_ = t;
}

// OS "Wake-up preemption": the thread on the wakee's last CPU ends its slice at t; it leaves
// the CPU at its next P operation (sim_internal.h sync), a spinner parked on a line at t.
void Simulation::preempt_for_wakeup(uint32_t hw, uint64_t t) {
  const int32_t v = occupant_[hw];
  if (v < 0) return;
  Fiber& g = *fibers_[static_cast<uint32_t>(v)];
  ++counters_.wakeup_preemptions;
  if (g.slice_end > t) g.slice_end = t;
  if (g.state == Fiber::State::kParked && g.park_timed) push_event(g, std::max(t, g.clock));
}

void Simulation::dispatch(Fiber& f, uint32_t hw, uint64_t t) {
  advance_fair_clock(t);
  occupant_[hw] = static_cast<int32_t>(f.index);
  set_hw_free(hw, false);
  f.hw = static_cast<int32_t>(hw);
  f.last_hw = f.hw;
  f.dispatched_once = true;
  f.core = hw % cfg_.cores;
  f.clock = std::max(f.clock, t) + cfg_.context_switch_ns;
  if (cfg_.working_set_bytes != 0 && f.keeps_working_set) refill_working_set(f);
  f.slice_end = f.clock + cfg_.time_slice_ns;
  f.run_start = f.clock;
  f.state = Fiber::State::kReady;
  ++counters_.dispatches;
  push_event(f, f.clock);
}

// COST MODEL "Working set": where the dispatched fiber's working set comes from; a refill is
// left due (the larger one when several cold dispatches come before the thread's code runs).
void Simulation::refill_working_set(Fiber& f) {
  const uint64_t ws = cfg_.working_set_bytes;
  keep_core_occupants_warm(f);
  const bool in_l2 = touch_cache(0, f, f.core, cfg_.core_cache_bytes / ws);
  const bool in_l3 = touch_cache(1, f, cluster_of_[f.core], cfg_.cluster_cache_bytes / ws);
  if (in_l2) return;
  using sim_internal::kLineBytes;
  const uint64_t lines = ws / kLineBytes + (ws % kLineBytes != 0 ? 1 : 0);
  const uint64_t latency = in_l3 ? cfg_.cluster_cache_ns : cfg_.memory_ns;
  const uint64_t charge = lines * latency / kRangeLineParallelism;
  if (charge > f.refill_due) {
    f.refill_due = charge;
    f.refill_from_memory = !in_l3;
  }
}

// The fibers on the other hardware threads of f's core are using their working sets: make them
// the most recent in the core's L2 before f's dispatch may evict the least recent.
void Simulation::keep_core_occupants_warm(const Fiber& f) {
  const uint64_t capacity = cfg_.core_cache_bytes / cfg_.working_set_bytes;
  for (uint32_t k = 0; k < cfg_.smt; ++k) {
    const uint32_t hw = k * cfg_.cores + f.core;
    const int32_t occupant = occupant_[hw];
    if (occupant < 0 || occupant == static_cast<int32_t>(f.index)) continue;
    Fiber& g = *fibers_[static_cast<uint32_t>(occupant)];
    if (g.cache_home[0] == static_cast<int32_t>(f.core)) touch_cache(0, g, f.core, capacity);
  }
}

void Simulation::op_touch_working_set() {
  Fiber* fp = cur_;
  if (fp == nullptr || fp->refill_due == 0) return;
  Fiber& f = *fp;
  ++(f.refill_from_memory ? counters_.memory_refills : counters_.cluster_cache_refills);
  counters_.refill_ns += f.refill_due;
  const uint64_t due = f.refill_due;
  f.refill_due = 0;
  op_work(due);
}

// Make f the most recent working set in `cache` of `level` (leaving the cache of that level it
// was in), evict beyond `capacity` working sets from the LRU end. Returns whether `cache` held
// f's working set before.
bool Simulation::touch_cache(uint32_t level, Fiber& f, uint32_t cache, uint64_t capacity) {
  CacheLru& lru = cache_lru_[level];
  auto unlink = [&](Fiber& g) {
    const uint32_t home = static_cast<uint32_t>(g.cache_home[level]);
    if (g.lru_prev[level] >= 0) fibers_[static_cast<uint32_t>(g.lru_prev[level])]->lru_next[level] = g.lru_next[level];
    else lru.head[home] = g.lru_next[level];
    if (g.lru_next[level] >= 0) fibers_[static_cast<uint32_t>(g.lru_next[level])]->lru_prev[level] = g.lru_prev[level];
    else lru.tail[home] = g.lru_prev[level];
    g.lru_prev[level] = g.lru_next[level] = -1;
    --lru.size[home];
    g.cache_home[level] = -1;
  };
  const bool resident = f.cache_home[level] == static_cast<int32_t>(cache);
  if (f.cache_home[level] >= 0) unlink(f);
  if (capacity == 0) return resident;
  const int32_t me = static_cast<int32_t>(f.index);
  f.lru_next[level] = lru.head[cache];
  if (lru.head[cache] >= 0) fibers_[static_cast<uint32_t>(lru.head[cache])]->lru_prev[level] = me;
  else lru.tail[cache] = me;
  lru.head[cache] = me;
  f.cache_home[level] = static_cast<int32_t>(cache);
  ++lru.size[cache];
  while (lru.size[cache] > capacity) unlink(*fibers_[static_cast<uint32_t>(lru.tail[cache])]);
  return resident;
}

void Simulation::release_cpu(Fiber& f, uint64_t t) {
  advance_fair_clock(t);
  if (t > f.run_start) f.vruntime += static_cast<double>(t - f.run_start);
  const uint32_t hw = static_cast<uint32_t>(f.hw);
  f.hw = -1;
  occupant_[hw] = -1;
  if (!runq_.empty()) {
    Fiber& g = *fibers_[runq_.front()];
    runq_.pop_front();
    dispatch(g, hw, std::max(t, g.ready_at));
  } else {
    set_hw_free(hw, true);
    idle_since_[hw] = t;
  }
}

// A fiber now waits for a CPU: spinners parked without a deadline must come back at their slice
// end, or a waiting fiber could wait for ever behind them.
void Simulation::arm_untimed_parks() {
  for (uint32_t i : untimed_parked_) {
    Fiber& g = *fibers_[i];
    if (g.state != Fiber::State::kParked || g.park_timed || g.park_line == kNoLine) continue;
    g.park_timed = true;
    push_event(g, std::max({now_, g.slice_end, g.clock}));
  }
  untimed_parked_.clear();
}

void Simulation::unlink_parked(Fiber& f) {
  Line& l = lines_[f.park_line];
  if (f.park_prev >= 0) fibers_[static_cast<uint32_t>(f.park_prev)]->park_next = f.park_next;
  else l.parked_head = f.park_next;
  if (f.park_next >= 0) fibers_[static_cast<uint32_t>(f.park_next)]->park_prev = f.park_prev;
  f.park_line = kNoLine;
  f.park_prev = f.park_next = -1;
}

uint64_t Simulation::jittered(uint64_t ns) {
  if (cfg_.wake_jitter == 0 || ns == 0) return ns;
  uint64_t z = (rng_ += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  const double u = static_cast<double>(z >> 11) * 0x1.0p-53;
  const double f = 1.0 - cfg_.wake_jitter + 2.0 * cfg_.wake_jitter * u;
  return static_cast<uint64_t>(std::llround(static_cast<double>(ns) * f));
}

std::string Simulation::describe(const Fiber& f) const {
  std::ostringstream o;
  using S = Fiber::State;
  switch (f.state) {
    case S::kWaking:
      switch (f.wait) {
        case Fiber::Wait::kStart: o << "starting at " << f.event_time << " ns"; break;
        case Fiber::Wait::kSleep: o << "sleeping until " << f.event_time << " ns"; break;
        case Fiber::Wait::kSemaphore: o << "woken by a post, runnable at " << f.event_time << " ns"; break;
        case Fiber::Wait::kStorage: o << "waiting for storage until " << f.event_time << " ns"; break;
      }
      break;
    case S::kRunQueue: o << "runnable since " << f.ready_at << " ns, waiting for a CPU"; break;
    case S::kBlocked: o << "blocked on a semaphore (line #" << f.wait_line << ")"; break;
    case S::kReady: o << "running on CPU " << f.hw; break;
    case S::kParked:
      o << "spinning on line #" << f.park_line << " (parked)";
      break;
    case S::kCurrent: o << "executing"; break;
    case S::kDone: o << "finished"; break;
  }
  return o.str();
}

SimOutcome Simulation::outcome(SimStatus st) const {
  SimOutcome o;
  o.status = st;
  o.fibers = fibers_.size();
  o.now_ns = std::max(now_, end_clock_);
  o.counters = counters_;
  for (const auto& fp : fibers_) {
    const Fiber& f = *fp;
    if (f.state == Fiber::State::kDone) continue;
    SimFiberReport r;
    r.fiber = f.index;
    r.name = f.name;
    r.state = describe(f);
    r.clock_ns = f.clock;
    if (describe_wait_) r.wait = describe_wait_(f.index);
    o.unfinished.push_back(std::move(r));
  }
  return o;
}

[[noreturn]] void Simulation::wait_would_block(const char* what) {
  std::fprintf(stderr, "sim: %s would block outside a simulation fiber\n", what);
  std::fflush(stderr);
  std::abort();
}
double sim_cas_loop_tries_per_success(const SimConfig& cfg, uint32_t threads, uint32_t wins) {
  struct alignas(64) Word {
    SimPlatform::Atomic<uint64_t> v;
  };
  auto word = std::make_unique<Word>();
  std::vector<uint64_t> tries(threads, 0);
  Simulation sim(cfg, 1);
  for (uint32_t k = 0; k < threads; ++k)
    sim.spawn([&, k] {
      for (uint32_t i = 0; i < wins; ++i) {
        uint64_t v = word->v.load();
        do ++tries[k];
        while (!word->v.compare_exchange(v, v + 1));
      }
    }, "cas");
  if (!sim.run().finished()) return 0.0;
  uint64_t all = 0;
  for (const uint64_t t : tries) all += t;
  return threads == 0 || wins == 0 ? 0.0 : static_cast<double>(all) / (static_cast<double>(threads) * wins);
}

double sim_ttas_failed_rmws_per_acquisition(const SimConfig& cfg, uint32_t threads,
                                            uint32_t acquisitions) {
  constexpr uint32_t kLocked = 1;
  struct alignas(64) Word {
    SimPlatform::Atomic<uint32_t> v;
  };
  struct alignas(64) Links {
    SimPlatform::Atomic<uint32_t> v;
  };
  auto word = std::make_unique<Word>();
  auto links = std::make_unique<Links>();
  // Counted only while every fiber still runs (model bookkeeping, outside the platform: the
  // fibers share one OS thread): the last fibers' uncontended tail would dilute the figure.
  uint64_t failed = 0, taken = 0;
  bool one_done = false;
  Simulation sim(cfg, 1);
  for (uint32_t k = 0; k < threads; ++k)
    sim.spawn([&, k] {
      for (uint32_t i = 0; i < acquisitions; ++i) {
        uint32_t old = word->v.fetch_or(kLocked);
        while (old & kLocked) {
          if (!one_done) ++failed;
          do {
            SimPlatform::spin_delay();
            old = word->v.load();
          } while (old & kLocked);
          old = word->v.fetch_or(kLocked);
        }
        links->v.store(k);
        word->v.fetch_and(~kLocked);
        if (!one_done) ++taken;
      }
      one_done = true;
    }, "ttas");
  if (!sim.run().finished() || taken == 0) return std::nan("");
  return static_cast<double>(failed) / static_cast<double>(taken);
}

double owner_run_length(const std::vector<uint8_t>& owner) {
  const size_t n = owner.size();
  if (n == 0) return 0.0;
  size_t lo = n, hi = 0;  // [lo, hi): the second thread's first value .. the first one's last
  for (size_t i = 0; i < n; ++i)
    if (owner[i] != owner[0]) {
      lo = i;
      break;
    }
  for (size_t i = n; i-- > 0;)
    if (owner[i] != owner[n - 1]) {
      hi = i + 1;
      break;
    }
  if (lo >= hi) return 0.0;
  size_t runs = 1;
  for (size_t i = lo + 1; i < hi; ++i) runs += owner[i] != owner[i - 1];
  return static_cast<double>(hi - lo) / static_cast<double>(runs);
}

double sim_fetch_add_run_length(const SimConfig& cfg, uint32_t adds) {
  struct alignas(64) Word {
    SimPlatform::Atomic<uint64_t> v;
  };
  auto word = std::make_unique<Word>();
  std::vector<uint8_t> owner(size_t{2} * adds, 0);
  Simulation sim(cfg, 1);
  for (uint8_t k = 0; k < 2; ++k)
    sim.spawn([&, k] {
      for (uint32_t i = 0; i < adds; ++i) owner[word->v.fetch_add(1)] = k;
    }, "add");
  if (!sim.run().finished()) return 0.0;
  return owner_run_length(owner);
}

}  // namespace walbench

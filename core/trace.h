// Lock-wait tracing, the recording side: one ClientTrace per traced Proc (core/proc.h), fed by
// the hooks in Proc::set_wait/clear_wait and in the locks (core/locks/lwlock.h, spinlock.h).
// harness/trace.h owns the ClientTraces, drains them on its writer thread and writes the
// Chrome trace event file (README "Lock-wait traces").
//
// COST WHEN OFF: Proc::tracer is nullptr; every hook is `if (me.tracer) ...`, nothing else.
//
// COST WHEN ON: the hook reads the clock it was given (ThreadsPlatform::now_ns on real threads,
// the fiber's virtual clock on the simulator: Simulation::now_ns() is a plain read that charges
// nothing, so a traced simulated run gives the same numbers as an untraced one) and pushes a
// 24-byte TraceEvent into the client's own boost::lockfree::spsc_queue, whose storage is
// allocated up front: no lock, no allocation. A full queue either drops the event and counts it
// (real threads: the hot path never blocks) or waits for the writer to drain it (the simulator,
// `lossless`: blocking the simulation's OS thread costs no virtual time, and the trace stays
// complete and deterministic).
//
// WINDOW: only events with start <= ts < start + length are queued. Before the start a client
// keeps its open slices (waits, lock waits, holds) on a small owner-only stack; at its first
// event inside the window it copies that stack (open_at_start) so that the writer can begin the
// slices and the locks' counters that were already open when the window began. The start is
// either known in advance (the simulator: the end of the warm-up in virtual ns) or taken by the
// first event that sees the runner's `measuring` flag set (real threads).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <thread>

#include <boost/lockfree/spsc_queue.hpp>


namespace walbench {

enum class TraceKind : uint8_t {
  kWait,         // Proc::set_wait: the wait event published (sleeps, I/O, client reads)
  kWaitEnd,      // Proc::clear_wait
  kLockWait,     // first failed attempt on a lock (LWLock acquire / acquire_or_wait /
                 // wait_for_var, spinlock acquire)
  kLockWaitEnd,  // got it, or gave up (acquire_or_wait woken, wait_for_var returned)
  kHold,         // an LWLock acquired (mode: exclusive or shared)
  kHoldEnd,      // an LWLock released
  kAcquired,     // a spinlock taken (an instant: a spinlock's release has no client to name)
};

// How a lock was asked for (TraceEvent::mode).
enum class TraceMode : uint8_t { kExclusive, kShared, kWaitUntilFree, kWaitForVar, kSpin };

struct TraceEvent {
  uint64_t ts_ns = 0;
  const void* lock = nullptr;  // the lock's address: its identity in the trace
  TraceKind kind = TraceKind::kWait;
  TraceMode mode = TraceMode::kExclusive;
  uint16_t event = 0;          // WaitEvent: the wait event, or the lock's tranche
  uint32_t flag = 0;           // kLockWaitEnd: 1 = acquired
};
static_assert(sizeof(TraceEvent) == 24);

// Shared by the ClientTraces of one traced repetition.
struct TraceWindow {
  static constexpr uint64_t kUnknown = std::numeric_limits<uint64_t>::max();
  std::atomic<uint64_t> start_ns{kUnknown};
  uint64_t length_ns = 0;
  const std::atomic<bool>* measuring = nullptr;  // start at the first event that sees it set
};

class ClientTrace {
 public:
  static constexpr uint32_t kMaxOpen = 64;  // open slices a client may have (deeper: dropped)
  struct Open {
    TraceKind kind;  // kWait, kLockWait or kHold
    TraceMode mode;
    uint16_t event;
    const void* lock;
  };
  using Queue = boost::lockfree::spsc_queue<TraceEvent>;

  ClientTrace(size_t capacity, uint64_t (*clock)(), TraceWindow* window, bool lossless)
      : queue_(capacity), clock_(clock), window_(window), lossless_(lossless) {}

  // `event` and `tranche` are WaitEvent values (core/proc.h).
  void wait(uint16_t event) { record(TraceKind::kWait, nullptr, TraceMode::kExclusive, event, 0); }
  void wait_end() { record(TraceKind::kWaitEnd, nullptr, TraceMode::kExclusive, 0, 0); }
  void lock_wait(const void* lock, uint16_t tranche, TraceMode mode) {
    record(TraceKind::kLockWait, lock, mode, tranche, 0);
  }
  void lock_wait_end(const void* lock, uint16_t tranche, bool acquired) {
    record(TraceKind::kLockWaitEnd, lock, TraceMode::kExclusive, tranche, acquired ? 1 : 0);
  }
  void hold(const void* lock, uint16_t tranche, bool shared) {
    record(TraceKind::kHold, lock, shared ? TraceMode::kShared : TraceMode::kExclusive, tranche, 0);
  }
  void hold_end(const void* lock, uint16_t tranche) {
    record(TraceKind::kHoldEnd, lock, TraceMode::kExclusive, tranche, 0);
  }
  void acquired(const void* lock, uint16_t tranche) {
    record(TraceKind::kAcquired, lock, TraceMode::kSpin, tranche, 0);
  }

  // ---- The writer's side (harness/trace.cc) ----
  Queue& queue() { return queue_; }
  // Events dropped: queue full (real threads) or more than kMaxOpen slices open.
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  // After the client stopped: the slices open when the window began.
  uint32_t open_at_start(std::array<Open, kMaxOpen>& out) const {
    const auto& s = in_window_ ? at_start_ : stack_;
    const uint32_t n = in_window_ ? at_start_n_ : stack_n_;
    for (uint32_t i = 0; i < n; ++i) out[i] = s[i];
    return n;
  }

 private:
  void record(TraceKind kind, const void* lock, TraceMode mode, uint16_t e, uint32_t flag) {
    const uint64_t ts = clock_();
    uint64_t start = window_->start_ns.load(std::memory_order_relaxed);
    if (start == TraceWindow::kUnknown && window_->measuring != nullptr &&
        window_->measuring->load(std::memory_order_relaxed)) {
      window_->start_ns.compare_exchange_strong(start, ts, std::memory_order_relaxed);
      start = window_->start_ns.load(std::memory_order_relaxed);
    }
    if (ts < start) {  // before the window (or it has not begun): only the open slices
      track_open(kind, lock, mode, e);
      return;
    }
    if (ts - start >= window_->length_ns) return;
    if (!in_window_) {
      in_window_ = true;
      at_start_ = stack_;
      at_start_n_ = stack_n_;
    }
    const TraceEvent ev{ts, lock, kind, mode, e, flag};
    if (queue_.push(ev)) return;
    if (!lossless_) {
      dropped_.store(dropped_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      return;
    }
    while (!queue_.push(ev)) std::this_thread::yield();
  }

  // The owner-only stack of open slices before the window (NB: the same pairing rules as
  // harness/trace.cc's TrackBuilder: a wait replaces an open wait; an end closes the innermost
  // open slice of its kind and lock).
  void track_open(TraceKind kind, const void* lock, TraceMode mode, uint16_t e) {
    switch (kind) {
      case TraceKind::kWait:
        close_open(TraceKind::kWait, nullptr);
        push_open(Open{kind, mode, e, nullptr});
        break;
      case TraceKind::kWaitEnd: close_open(TraceKind::kWait, nullptr); break;
      case TraceKind::kLockWait:
      case TraceKind::kHold: push_open(Open{kind, mode, e, lock}); break;
      case TraceKind::kLockWaitEnd: close_open(TraceKind::kLockWait, lock); break;
      case TraceKind::kHoldEnd: close_open(TraceKind::kHold, lock); break;
      case TraceKind::kAcquired: break;
    }
  }
  void push_open(const Open& o) {
    if (stack_n_ == kMaxOpen) {
      dropped_.store(dropped_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      return;
    }
    stack_[stack_n_++] = o;
  }
  void close_open(TraceKind kind, const void* lock) {
    for (uint32_t i = stack_n_; i-- > 0;) {
      if (stack_[i].kind != kind || stack_[i].lock != lock) continue;
      for (uint32_t j = i + 1; j < stack_n_; ++j) stack_[j - 1] = stack_[j];
      --stack_n_;
      return;
    }
  }

  Queue queue_;
  uint64_t (*const clock_)();
  TraceWindow* const window_;
  const bool lossless_;
  std::atomic<uint64_t> dropped_{0};  // written by the owner, read by the writer
  // Owner-only until the client stopped.
  std::array<Open, kMaxOpen> stack_{};
  uint32_t stack_n_ = 0;
  bool in_window_ = false;
  std::array<Open, kMaxOpen> at_start_{};
  uint32_t at_start_n_ = 0;
};

}  // namespace walbench

// The sim platform's cost model for shared memory: cache lines (holders, owner, busy time),
// transfers between cores, sockets and memory, the fiber side of every P access, and spinning
// (parking and replay). Design: sim.h ("COST MODEL", "SPINNING").
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

#include "core/platform/sim.h"
#include "core/platform/sim_internal.h"

namespace walbench {

using sim_internal::kLineCache;

// =============================================================================================
// Cost model: lines
// =============================================================================================
uint32_t Simulation::line_id(const void* p) {
  const uintptr_t key = reinterpret_cast<uintptr_t>(p) >> sim_internal::kLineShift;
  CacheSlot& slot = line_cache_[(key ^ (key >> 12)) & (kLineCache - 1)];
  if (slot.key_plus_1 == key + 1) return slot.id;
  auto [it, inserted] = line_map_->map.try_emplace(key, static_cast<uint32_t>(lines_.size()));
  if (inserted) {
    lines_.emplace_back();
    holders_.resize(holders_.size() + words_, 0);
  }
  slot.key_plus_1 = key + 1;
  slot.id = it->second;
  return it->second;
}

bool Simulation::any_holder(uint32_t line, uint32_t lo, uint32_t hi, uint32_t except) const {
  if (lo >= hi) return false;
  const uint64_t* b = &holders_[size_t{line} * words_];
  for (uint32_t w = lo / 64; w <= (hi - 1) / 64; ++w) {
    uint64_t m = b[w];
    if (m == 0) continue;
    const uint32_t base = w * 64;
    if (lo > base) m &= ~uint64_t{0} << (lo - base);
    if (hi < base + 64) m &= (uint64_t{1} << (hi - base)) - 1;
    if (except >= base && except < base + 64) m &= ~(uint64_t{1} << (except - base));
    if (m != 0) return true;
  }
  return false;
}

// Where a miss's data comes from (or which copy a write must invalidate), priced by ns() and
// counted in SimCounters by count() (only once per access, when it is served).
Simulation::Distance Simulation::transfer_distance(uint32_t from, uint32_t to) const {
  if (cluster_lo_[from] == cluster_lo_[to])
    return cfg_.cores_per_cluster == 0 ? Distance::kSocket : Distance::kCluster;  // socket = cluster
  if (socket_of_[from] == socket_of_[to]) return Distance::kSocket;
  return Distance::kCross;
}

uint64_t Simulation::ns(Distance d) const {
  switch (d) {
    case Distance::kHit: return cfg_.line_hit_ns;
    case Distance::kCluster: return cfg_.same_cluster_transfer_ns;
    case Distance::kSocket: return cfg_.same_socket_transfer_ns;
    case Distance::kCross: return cfg_.cross_socket_transfer_ns;
    case Distance::kMemory: return cfg_.memory_ns;
  }
  return 0;
}

void Simulation::count(Distance d) {
  switch (d) {
    case Distance::kHit: ++counters_.line_hits; return;
    case Distance::kCluster: ++counters_.cluster_transfers; return;
    case Distance::kSocket: ++counters_.socket_transfers; return;
    case Distance::kCross: ++counters_.cross_socket_transfers; return;
    case Distance::kMemory: ++counters_.memory_fetches; return;
  }
}

// A read miss: from the owner, else the nearest holder, else memory.
Simulation::Distance Simulation::read_distance(uint32_t line, uint32_t c) const {
  const Line& l = lines_[line];
  if (l.owner >= 0) return transfer_distance(static_cast<uint32_t>(l.owner), c);
  if (any_holder(line, cluster_lo_[c], cluster_hi_[c], c))
    return cfg_.cores_per_cluster == 0 ? Distance::kSocket : Distance::kCluster;
  if (any_holder(line, socket_lo_[c], socket_hi_[c], c)) return Distance::kSocket;
  if (any_holder(line, 0, cfg_.cores, c)) return Distance::kCross;
  return Distance::kMemory;
}

// A write or RMW by a core that does not own the line: invalidate the farthest copy (or fetch
// from memory if nobody has it; an unshared copy of our own upgrades at hit cost).
Simulation::Distance Simulation::write_distance(uint32_t line, uint32_t c) const {
  if (lines_[line].owner == static_cast<int32_t>(c)) return Distance::kHit;
  if (any_holder(line, 0, socket_lo_[c], c) || any_holder(line, socket_hi_[c], cfg_.cores, c))
    return Distance::kCross;
  if (any_holder(line, socket_lo_[c], cluster_lo_[c], c) || any_holder(line, cluster_hi_[c], socket_hi_[c], c))
    return Distance::kSocket;
  if (any_holder(line, cluster_lo_[c], cluster_hi_[c], c))
    return cfg_.cores_per_cluster == 0 ? Distance::kSocket : Distance::kCluster;
  const uint64_t* b = &holders_[size_t{line} * words_];
  if (b[c / 64] >> (c % 64) & 1) return Distance::kHit;
  return Distance::kMemory;
}

// =============================================================================================
// Fiber side: ordering, accesses, spinning
// =============================================================================================
void Simulation::yield_ready(Fiber& f) {
  f.state = Fiber::State::kReady;
  ++f.token;
  const Event mine{f.clock, seq_++, f.index, f.token};
  f.event_time = f.clock;
  if (!has_pending_ && !heap_.empty() && earlier(heap_.front(), mine)) {
    pending_ = heap_.front();  // what the scheduler would pop next
    sift_down_from_root(mine);
    has_pending_ = true;
  } else {
    heap_push(mine);
  }
  switch_out(f);
}

void Simulation::slice_expired(Fiber& f) {
  if (runq_.empty()) {
    f.slice_end = f.clock + cfg_.time_slice_ns;
    return;
  }
  ++counters_.preemptions;
  release_cpu(f, f.clock);  // the run queue's head gets the CPU
  f.state = Fiber::State::kRunQueue;
  f.ready_at = f.clock;
  runq_.push_back(f.index);
  switch_out(f);  // back when dispatched again
}

// A fence (COST MODEL "Store buffer"): wait until the fiber's buffered stores completed.
void Simulation::drain_store_buffer() {
  Fiber* f = cur_;
  if (f != nullptr && f->clock < f->sb_until) f->clock = f->sb_until;
}

uint32_t Simulation::access(Fiber& f, const void* p, Access k) {
  if (f.replay) end_replay(f);
  if (k != Access::kRead) f.spin_addr = nullptr;
  // RMWs and seq_cst stores are fences: the store buffer drains first.
  if ((k == Access::kRmw || k == Access::kWrite) && f.clock < f.sb_until) f.clock = f.sb_until;
  sync(f);
  const uint32_t id = line_id(p);
  Line& l = lines_[id];
  const uint32_t c = f.core;
  const uint64_t t = f.clock;
  ++counters_.shared_ops;
  uint64_t* bits = &holders_[size_t{id} * words_];
  const uint64_t mine = uint64_t{1} << (c % 64);
  if (LineStats* s = line_stat(id)) {
    if (k == Access::kRead) ++s->loads;
    else if (k == Access::kRmw) ++s->rmws;
    else ++s->stores;
    if (k == Access::kRead && !(bits[c / 64] & mine)) ++s->load_misses;
  }
  if (k == Access::kRead) {
    last_start_ = t;
    if (bits[c / 64] & mine) {
      ++counters_.line_hits;
      f.clock = t + cfg_.line_hit_ns;
      return id;
    }
    // A miss (COST MODEL "Misses"): ordered when the request reaches the line, half the
    // transfer after it could start; yield there so that whatever is ordered before it runs
    // first. The line may have been written meanwhile (lines_ and holders_ may also have grown:
    // no references across the yield): then the request waits for that write too.
    const uint64_t start = request_start(t, l.busy_until);
    add_line_wait(id, start - t);
    f.clock = start + ns(read_distance(id, c)) / 2;
    sync(f);
    if (await_snoop(f, id, /*ownership=*/false)) return id;
    // Preempted at the arrival, the fiber may have moved (to a core that holds the line).
    const bool holds = holders_[size_t{id} * words_ + f.core / 64] >> (f.core % 64) & 1;
    const Distance from = holds ? Distance::kHit : read_distance(id, f.core);
    f.clock = served_at_line(id, f.clock, lines_[id].busy_until, from);
    lines_[id].owner = -1;  // the owner keeps a shared copy
    holders_[size_t{id} * words_ + f.core / 64] |= uint64_t{1} << (f.core % 64);
    return id;
  }
  const uint64_t start = std::max(t, l.busy_until);
  const Distance at_issue = write_distance(id, c);
  const uint64_t extra = k == Access::kRmw ? cfg_.rmw_extra_ns : 0;
  if (k == Access::kBufferedWrite) {
    // Into the store buffer: the storer goes on at hit cost; the line is busy for everyone else
    // until the store completes, in program order after the fiber's earlier buffered stores.
    count(at_issue);
    last_start_ = start;
    const uint64_t done = std::max(start + ns(at_issue), f.sb_until);
    f.sb_until = done;
    f.clock = t + cfg_.line_hit_ns;
    take_ownership(id, c, done);
    return id;
  }
  if (at_issue == Distance::kHit) {  // owned, or an unshared copy upgraded: no request leaves
    add_line_wait(id, start - t);
    count(at_issue);
    last_start_ = start;
    f.clock = start + ns(at_issue) + extra;
    take_ownership(id, c, f.clock);
    return id;
  }
  // A miss (COST MODEL "Misses"): ordered when its request reaches the line, like a load's:
  // whatever reached the line first (a load, another RMW) is served first.
  const uint64_t leaves = request_start(t, l.busy_until);
  add_line_wait(id, leaves - t);  // with request_at_issue the wait is at the line
  f.clock = leaves + ns(at_issue) / 2;
  sync(f);
  if (await_snoop(f, id, /*ownership=*/true, extra)) return id;
  const Distance from = write_distance(id, f.core);  // preempted at the arrival: may have moved
  last_start_ = std::max(f.clock, lines_[id].busy_until);
  f.clock = served_at_line(id, f.clock, lines_[id].busy_until, from) + extra;
  take_ownership(id, f.core, f.clock);
  return id;
}

// RUNS (sim.h): a line's first load in a run, ordered at its issue; a miss's data comes back
// while the fiber goes on, up to kRangeLineParallelism misses in flight.
void Simulation::stream_load(Fiber& f, const void* p) {
  if (f.replay) end_replay(f);
  for (;;) {
    order(f);
    const uint32_t id = line_id(p);
    const uint32_t c = f.core;
    uint64_t* bits = &holders_[size_t{id} * words_];
    const uint64_t mine = uint64_t{1} << (c % 64);
    if (bits[c / 64] & mine) {
      ++counters_.shared_ops;
      ++counters_.line_hits;
      if (LineStats* s = line_stat(id)) ++s->loads;
      last_start_ = f.clock;
      f.clock += cfg_.line_hit_ns;
      return;
    }
    uint64_t& oldest = f.stream_slots[f.stream_next];
    if (oldest > f.clock) {  // every miss slot taken: issue when the oldest is back
      f.clock = oldest;
      continue;
    }
    const uint64_t t = f.clock;
    Line& l = lines_[id];
    ++counters_.shared_ops;
    if (LineStats* s = line_stat(id)) {
      ++s->loads;
      ++s->load_misses;
    }
    last_start_ = t;
    const uint64_t start = std::max(t, l.busy_until);
    add_line_wait(id, start - t);
    const Distance from = read_distance(id, c);
    count(from);
    oldest = start + ns(from);
    f.stream_next = (f.stream_next + 1) % kRangeLineParallelism;
    f.stream_done = std::max(f.stream_done, oldest);
    l.owner = -1;  // the owner keeps a shared copy
    bits[c / 64] |= mine;
    f.clock = t + cfg_.line_hit_ns;
    return;
  }
}

std::vector<Simulation::LineReport> Simulation::line_stats() const {
  std::vector<LineReport> out;
  for (const auto& [key, id] : line_map_->map) {
    if (id >= line_stats_.size()) continue;
    const LineStats& s = line_stats_[id];
    if (s.loads + s.rmws + s.stores + s.wait_ns == 0) continue;
    out.push_back({static_cast<uintptr_t>(key) << sim_internal::kLineShift, id, s});
  }
  return out;
}

// snoop_linger (COST MODEL "Misses"): a miss whose request reached its line while the line is
// busy, or while earlier requests wait there, queues behind them. When the line frees the snoop
// travels to the holder (half the transfer) and the request is ordered when it lands: the
// holder's own accesses issued before that instant are hits (the holder still owns the line)
// and come first; one in flight then finishes before the snoop is answered. The data comes back
// in the other half. An ownership request (RMW, seq_cst store) makes later requests queue
// behind it (queue_until: when it will be done, priced from the holders at its arrival); a load
// does not hold the line, so loads queued together are served alike, and an ownership request
// that arrives after a queued load but lands its snoop first is ordered before it. Buffered
// stores and streamed loads are ordered at issue, as without the rule, and do not queue.
// snoop_window_ns (with request_at_issue 1 and snoop_linger 0) uses the same queue, with the
// snoop landing that long after the line frees instead of half a transfer (the request already
// waited at the line). Returns false (and does nothing) when neither is on or the line is free
// at the arrival: served as before.
bool Simulation::await_snoop(Fiber& f, uint32_t id, bool ownership, uint64_t extra) {
  const bool window = cfg_.snoop_linger == 0 && cfg_.request_at_issue != 0 && cfg_.snoop_window_ns > 0;
  if (cfg_.snoop_linger == 0 && !window) return false;
  const uint64_t free_at = std::max(lines_[id].busy_until, lines_[id].queue_until);
  if (free_at <= f.clock) return false;
  const bool held = holders_[size_t{id} * words_ + f.core / 64] >> (f.core % 64) & 1;
  const uint64_t leg = ns(ownership ? write_distance(id, f.core)
                                    : (held ? Distance::kHit : read_distance(id, f.core)));
  if (ownership) lines_[id].queue_until = free_at + leg + extra;  // when it will be done
  add_line_wait(id, free_at - f.clock);
  // snoop_linger: the snoop leaves when the line frees and lands half the transfer later;
  // snoop_window_ns: the request waited at the line and its snoop lands that long after.
  f.clock = free_at + (window ? std::min(cfg_.snoop_window_ns, leg) : leg / 2);
  sync(f);  // the holder's accesses issued before the snoop lands run first
  // Preempted at the snoop, the fiber may have moved (to a core that holds the line).
  const bool holds = holders_[size_t{id} * words_ + f.core / 64] >> (f.core % 64) & 1;
  const Distance from = ownership ? write_distance(id, f.core)
                                  : (holds ? Distance::kHit : read_distance(id, f.core));
  count(from);
  const uint64_t served = std::max(f.clock, lines_[id].busy_until);
  add_line_wait(id, served - f.clock);  // the holder's access in flight at the snoop
  last_start_ = served;
  // The data's leg: the rest of a whole transfer after the snoop landed.
  const uint64_t landed = window ? std::min(cfg_.snoop_window_ns, ns(from)) : ns(from) / 2;
  f.clock = served + (ns(from) - landed) + extra;
  if (ownership) {
    take_ownership(id, f.core, f.clock);
  } else {
    lines_[id].owner = -1;  // the owner keeps a shared copy
    holders_[size_t{id} * words_ + f.core / 64] |= uint64_t{1} << (f.core % 64);
  }
  return true;
}

// A miss's request reached its line at `arrival`: a line that is free sends the data back (the
// second half of the transfer); one still busy with an earlier access (its request reached the
// line first) serves this one when it frees, from the start: a whole transfer, as a home agent
// that handles one transaction per line at a time would (COST MODEL "Misses"). Returns when the
// data is back.
uint64_t Simulation::served_at_line(uint32_t id, uint64_t arrival, uint64_t busy_until,
                                    Distance from) {
  count(from);
  if (busy_until <= arrival) return arrival + (ns(from) - ns(from) / 2);
  add_line_wait(id, busy_until - arrival);
  return busy_until + ns(from);
}

void Simulation::take_ownership(uint32_t line, uint32_t core, uint64_t busy_until) {
  Line& l = lines_[line];
  l.busy_until = busy_until;
  l.owner = static_cast<int32_t>(core);
  uint64_t* bits = &holders_[size_t{line} * words_];
  for (uint32_t w = 0; w < words_; ++w) bits[w] = 0;
  bits[core / 64] = uint64_t{1} << (core % 64);
}

// A value-changing write took effect at `at` (its start, or for a miss when the line served it;
// it completes when the line stops being busy). Parked spinners resume then: their replay ends at `at` and their next load waits for the
// line like an unparked spinner's load would (so parking does not change the timeline).
void Simulation::notify_write(uint32_t line, uint64_t at) {
  Line& l = lines_[line];
  ++l.version;
  int32_t g = l.parked_head;
  if (g < 0) return;
  l.parked_head = -1;
  while (g >= 0) {
    Fiber& w = *fibers_[static_cast<uint32_t>(g)];
    g = w.park_next;
    w.park_line = kNoLine;
    w.park_prev = w.park_next = -1;
    w.park_timed = true;
    push_event(w, std::max(at, w.clock));  // supersedes the deadline event
    ++counters_.park_wakes;
  }
}

void Simulation::external_write(const void* p) { notify_write(line_id(p), now_); }

bool Simulation::replay_load(Fiber& f, const void* p, uint64_t* bits) {
  if (p == f.replay_addr && f.clock < f.replay_until) {
    f.clock += cfg_.line_hit_ns;
    ++counters_.replayed_loads;
    *bits = f.replay_bits;
    return true;
  }
  end_replay(f);
  return false;
}

void Simulation::end_replay(Fiber& f) {
  f.replay = false;
  if (f.clock < f.replay_until) f.clock = f.replay_until;
}

void Simulation::note_load(Fiber& f, const void* p, uint32_t line, uint64_t bits) {
  if (p == f.spin_addr && bits == f.spin_bits && f.spun && lines_[line].version == f.spin_version) {
    ++f.spin_count;
  } else {
    f.spin_addr = p;
    f.spin_bits = bits;
    f.spin_line = line;
    f.spin_version = lines_[line].version;
    f.spin_count = 0;
  }
  f.spun = false;
}

void Simulation::park(Fiber& f, uint32_t line, uint64_t deadline, bool timed) {
  Line& l = lines_[line];
  f.park_line = line;
  f.park_prev = -1;
  f.park_next = l.parked_head;
  if (l.parked_head >= 0) fibers_[static_cast<uint32_t>(l.parked_head)]->park_prev = static_cast<int32_t>(f.index);
  l.parked_head = static_cast<int32_t>(f.index);
  f.state = Fiber::State::kParked;
  f.park_timed = timed;
  if (timed) {
    push_event(f, deadline);
  } else {
    ++f.token;  // no live event
    if (untimed_parked_.size() >= 2 * fibers_.size()) {  // drop entries woken since
      std::erase_if(untimed_parked_, [this](uint32_t i) {
        const Fiber& g = *fibers_[i];
        return g.state != Fiber::State::kParked || g.park_timed;
      });
    }
    untimed_parked_.push_back(f.index);
  }
  switch_out(f);  // the scheduler sets wake_time
}

void Simulation::park_waiter(Fiber& f, uint32_t line) {
  ++counters_.wait_parks;
  // Only a fiber waiting for a CPU needs this one to come back before the line changes.
  const bool timed = !runq_.empty();
  park(f, line, std::max(f.clock, f.slice_end), timed);
  if (f.clock < f.wake_time) f.clock = f.wake_time;
}

void Simulation::op_spin_delay() { spin_iteration(cfg_.pause_ns); }

// One iteration of a plain spin loop that costs `charge_ns` (PAUSE, or a semaphore spin loop's
// own instructions): park after spin_park_after unchanged loads, or replay (sim.h "SPINNING").
void Simulation::spin_iteration(uint64_t charge_ns) {
  Fiber* fp = cur_;
  if (fp == nullptr) return;
  Fiber& f = *fp;
  settle_stream(f);
  f.clock += charge_ns;
  if (f.replay) return;
  f.spun = true;
  if (cfg_.spin_park_after != 0 && f.spin_addr != nullptr && f.spin_count >= cfg_.spin_park_after &&
      lines_[f.spin_line].version == f.spin_version) {
    ++counters_.spin_parks;
    park(f, f.spin_line, f.clock + cfg_.spin_park_max_ns, /*timed=*/true);
    f.replay = true;
    f.replay_addr = f.spin_addr;
    f.replay_bits = f.spin_bits;
    f.replay_until = f.wake_time;
    return;
  }
  sync(f);
}
}  // namespace walbench

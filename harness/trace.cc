// Lock-wait traces: the writer thread and the Chrome trace event file (see trace.h).
#include "harness/trace.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <tuple>

#include "absl/strings/str_format.h"
#include "core/proc.h"
#include "harness/atomic_file.h"

namespace walbench {

namespace {

// Events kept in memory before the file is written (24 bytes each): past it, drained events
// are dropped and counted.
constexpr uint64_t kStoredEventsCap = 16'000'000;
// Queue slots per client: the total aims at 4 M events, within [1024, 256 K] per client.
size_t queue_capacity(size_t tracks) {
  return std::clamp<size_t>((4u << 20) / std::max<size_t>(tracks, 1), 1024, 256u << 10);
}

std::string json_string(const std::string& s) { return nlohmann::json(s).dump(); }

const char* mode_name(TraceMode m) {
  switch (m) {
    case TraceMode::kExclusive: return "exclusive";
    case TraceMode::kShared: return "shared";
    case TraceMode::kWaitUntilFree: return "wait until free";
    case TraceMode::kWaitForVar: return "wait for variable";
    case TraceMode::kSpin: return "spin";
  }
  return "?";
}

// A lock's name and track number.
struct LockInfo {
  uint16_t tranche = 0;
  std::string name;
  uint32_t tid = 0;
};

class Emitter {
 public:
  Emitter(std::string& out, uint64_t origin, uint64_t* count) : out_(out), origin_(origin), count_(count) {}
  void event(char ph, int pid, uint32_t tid, uint64_t ts, const std::string& name, const char* cat,
             const std::string& args) {
    out_ += absl::StrFormat("%s{\"ph\":\"%c\",\"pid\":%d,\"tid\":%u,\"ts\":%.3f,\"name\":%s", sep(), ph,
                            pid, tid, static_cast<double>(ts - origin_) / 1000.0, json_string(name));
    if (cat) out_ += absl::StrFormat(",\"cat\":\"%s\"", cat);
    if (ph == 'i') out_ += ",\"s\":\"t\"";
    if (!args.empty()) out_ += ",\"args\":" + args;
    out_ += "}";
    ++*count_;
  }
  void meta(int pid, uint32_t tid, const char* what, const std::string& value) {
    out_ += absl::StrFormat("%s{\"ph\":\"M\",\"pid\":%d,\"tid\":%u,\"name\":\"%s\",\"args\":{\"name\":%s}}",
                            sep(), pid, tid, what, json_string(value));
  }
  void sort_index(int pid, uint32_t tid, uint32_t index) {
    out_ += absl::StrFormat("%s{\"ph\":\"M\",\"pid\":%d,\"tid\":%u,\"name\":\"thread_sort_index\","
                            "\"args\":{\"sort_index\":%u}}", sep(), pid, tid, index);
  }

 private:
  const char* sep() {
    const char* s = first_ ? "\n" : ",\n";
    first_ = false;
    return s;
  }
  std::string& out_;
  uint64_t origin_;
  uint64_t* count_;
  bool first_ = true;
};

constexpr int kClientsPid = 1;
constexpr int kLocksPid = 2;

// One client track: B/E slices kept properly nested (NB: the pairing rules match
// ClientTrace::track_open in core/trace.h).
class TrackBuilder {
 public:
  TrackBuilder(Emitter& em, uint32_t tid, const std::map<const void*, LockInfo>& locks)
      : em_(em), tid_(tid), locks_(locks) {}

  void open(const ClientTrace::Open& o, uint64_t ts, bool continued = false) {
    Slice s{o, slice_name(o), cat_of(o.kind)};
    std::string args = continued ? "{\"continued\":true}" : "";
    if (!continued && o.kind != TraceKind::kWait)
      args = absl::StrFormat("{\"mode\":\"%s\"}", mode_name(o.mode));
    em_.event('B', kClientsPid, tid_, ts, s.name, s.cat, args);
    stack_.push_back(std::move(s));
  }
  // Closes the innermost open slice of this kind and lock; false if there is none.
  bool close(TraceKind kind, const void* lock, uint64_t ts, const std::string& args = "") {
    size_t i = stack_.size();
    while (i > 0 && !(stack_[i - 1].o.kind == kind && stack_[i - 1].o.lock == lock)) --i;
    if (i == 0) return false;
    std::vector<Slice> inner(stack_.begin() + static_cast<long>(i), stack_.end());
    for (size_t k = stack_.size(); k > i; --k) em_.event('E', kClientsPid, tid_, ts, stack_[k - 1].name, nullptr, "");
    stack_.resize(i);
    em_.event('E', kClientsPid, tid_, ts, stack_.back().name, nullptr, args);
    stack_.pop_back();
    for (const Slice& s : inner) open(s.o, ts, /*continued=*/true);
    return true;
  }
  void apply(const TraceEvent& e) {
    const ClientTrace::Open o{e.kind, e.mode, e.event, e.lock};
    switch (e.kind) {
      case TraceKind::kWait:
        close(TraceKind::kWait, nullptr, e.ts_ns);
        open(ClientTrace::Open{TraceKind::kWait, e.mode, e.event, nullptr}, e.ts_ns);
        break;
      case TraceKind::kWaitEnd: close(TraceKind::kWait, nullptr, e.ts_ns); break;
      case TraceKind::kLockWait:
      case TraceKind::kHold: open(o, e.ts_ns); break;
      case TraceKind::kLockWaitEnd:
        close(TraceKind::kLockWait, e.lock, e.ts_ns,
              e.flag ? "{\"acquired\":true}" : "{\"acquired\":false}");
        break;
      case TraceKind::kHoldEnd: close(TraceKind::kHold, e.lock, e.ts_ns); break;
      case TraceKind::kAcquired:
        em_.event('i', kClientsPid, tid_, e.ts_ns, "acquire " + lock_name(e.lock), "acquire", "");
        break;
    }
  }
  void close_all(uint64_t ts) {
    while (!stack_.empty()) {
      em_.event('E', kClientsPid, tid_, ts, stack_.back().name, nullptr, "{\"cut_by_window_end\":true}");
      stack_.pop_back();
    }
  }

 private:
  struct Slice {
    ClientTrace::Open o;
    std::string name;
    const char* cat;
  };
  std::string lock_name(const void* lock) const {
    const auto it = locks_.find(lock);
    return it == locks_.end() ? "lock" : it->second.name;
  }
  std::string slice_name(const ClientTrace::Open& o) const {
    switch (o.kind) {
      case TraceKind::kWait: return wait_event_name(static_cast<WaitEvent>(o.event));
      case TraceKind::kLockWait: return "wait " + lock_name(o.lock);
      case TraceKind::kHold: return lock_name(o.lock) + " " + mode_name(o.mode);
      default: return "?";
    }
  }
  static const char* cat_of(TraceKind k) {
    return k == TraceKind::kWait ? "wait_event" : k == TraceKind::kLockWait ? "lock_wait" : "hold";
  }
  Emitter& em_;
  uint32_t tid_;
  const std::map<const void*, LockInfo>& locks_;
  std::vector<Slice> stack_;
};

}  // namespace

std::string TraceSummary::line() const {
  if (!window_opened)
    return absl::StrFormat("trace: %s: the window never opened, no event recorded (%d bytes)", path, bytes);
  return absl::StrFormat("trace: %s, %d events, %d dropped, %d bytes", path, events, dropped, bytes);
}

std::string build_chrome_trace(const std::vector<TraceTrackInput>& tracks, uint64_t ts_origin_ns,
                               uint64_t start_ns, uint64_t end_ns, const nlohmann::json& other_data,
                               uint64_t* events) {
  *events = 0;
  // Locks: by tranche, then address (an array of locks keeps its order), numbered from 0 when
  // a tranche has several.
  std::map<const void*, LockInfo> locks;
  uint64_t last_ts = start_ns;
  for (const auto& t : tracks) {
    for (const auto& o : t.open_at_start)
      if (o.lock) locks[o.lock].tranche = o.event;
    for (const auto& e : t.events) {
      if (e.lock) locks[e.lock].tranche = e.event;
      last_ts = std::max(last_ts, e.ts_ns);
    }
  }
  const uint64_t stop_ns = std::min(end_ns, last_ts);
  {
    std::vector<std::tuple<uint16_t, const void*>> order;
    for (const auto& [addr, info] : locks) order.emplace_back(info.tranche, addr);
    std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
      if (std::get<0>(a) != std::get<0>(b)) return std::get<0>(a) < std::get<0>(b);
      return std::less<const void*>()(std::get<1>(a), std::get<1>(b));
    });
    std::map<uint16_t, uint32_t> per_tranche;
    for (const auto& [tr, addr] : order) ++per_tranche[tr];
    std::map<uint16_t, uint32_t> next;
    uint32_t tid = 1;
    for (const auto& [tr, addr] : order) {
      LockInfo& li = locks[addr];
      li.name = wait_event_name(static_cast<WaitEvent>(tr));
      if (per_tranche[tr] > 1) li.name += absl::StrFormat(" #%d", next[tr]++);
      li.tid = tid++;
    }
  }

  std::string out = "{\"displayTimeUnit\":\"ns\",\"otherData\":" + other_data.dump() + ",\"traceEvents\":[";
  Emitter em(out, ts_origin_ns, events);
  em.meta(kClientsPid, 0, "process_name", "clients");
  em.meta(kLocksPid, 0, "process_name", "locks");
  for (size_t i = 0; i < tracks.size(); ++i) {
    em.meta(kClientsPid, static_cast<uint32_t>(i + 1), "thread_name", tracks[i].name);
    em.sort_index(kClientsPid, static_cast<uint32_t>(i + 1), static_cast<uint32_t>(i));
  }
  for (const auto& [addr, li] : locks) {
    em.meta(kLocksPid, li.tid, "thread_name", li.name);
    em.sort_index(kLocksPid, li.tid, li.tid);
  }

  // Client tracks.
  for (size_t i = 0; i < tracks.size(); ++i) {
    TrackBuilder tb(em, static_cast<uint32_t>(i + 1), locks);
    for (const auto& o : tracks[i].open_at_start) tb.open(o, start_ns);
    for (const auto& e : tracks[i].events) tb.apply(e);
    tb.close_all(stop_ns);
  }

  // Lock tracks: every track's events in time order (ties by track, then the track's order).
  struct Ref {
    uint64_t ts;
    uint32_t track;
    uint32_t k;
  };
  std::vector<Ref> merged;
  for (size_t i = 0; i < tracks.size(); ++i)
    for (size_t k = 0; k < tracks[i].events.size(); ++k)
      merged.push_back({tracks[i].events[k].ts_ns, static_cast<uint32_t>(i), static_cast<uint32_t>(k)});
  std::sort(merged.begin(), merged.end(), [](const Ref& a, const Ref& b) {
    return std::tie(a.ts, a.track, a.k) < std::tie(b.ts, b.track, b.k);
  });
  struct LockState {
    int64_t holders = 0;
    int64_t queue = 0;
    int64_t exclusive_holder = -1;  // track, while a slice is open on the lock's track
  };
  std::map<const void*, LockState> state;
  auto counter = [&](const void* lock, uint64_t ts) {
    const LockState& s = state[lock];
    em.event('C', kLocksPid, locks[lock].tid, ts, locks[lock].name, nullptr,
             absl::StrFormat("{\"holders\":%d,\"queue\":%d}", s.holders, s.queue));
  };
  auto holder_name = [&](uint32_t track) { return tracks[track].name; };
  for (size_t i = 0; i < tracks.size(); ++i)
    for (const auto& o : tracks[i].open_at_start) {
      if (!o.lock) continue;
      LockState& s = state[o.lock];
      if (o.kind == TraceKind::kLockWait) ++s.queue;
      if (o.kind == TraceKind::kHold) ++s.holders;
    }
  for (const auto& [lock, s] : state) counter(lock, start_ns);
  for (size_t i = 0; i < tracks.size(); ++i)
    for (const auto& o : tracks[i].open_at_start)
      if (o.lock && o.kind == TraceKind::kHold && o.mode == TraceMode::kExclusive &&
          state[o.lock].exclusive_holder < 0) {
        state[o.lock].exclusive_holder = static_cast<int64_t>(i);
        em.event('B', kLocksPid, locks[o.lock].tid, start_ns, holder_name(static_cast<uint32_t>(i)), "holder", "");
      }
  for (const Ref& r : merged) {
    const TraceEvent& e = tracks[r.track].events[r.k];
    if (!e.lock) continue;
    LockState& s = state[e.lock];
    const uint32_t tid = locks[e.lock].tid;
    switch (e.kind) {
      case TraceKind::kLockWait: ++s.queue; break;
      case TraceKind::kLockWaitEnd:
        if (s.queue > 0) --s.queue;  // its start was lost (dropped): nothing to undo
        break;
      case TraceKind::kHold:
        ++s.holders;
        if (e.mode == TraceMode::kExclusive) {
          if (s.exclusive_holder >= 0)  // clocks of two cores a few ns apart
            em.event('E', kLocksPid, tid, e.ts_ns, holder_name(static_cast<uint32_t>(s.exclusive_holder)), nullptr, "");
          s.exclusive_holder = r.track;
          em.event('B', kLocksPid, tid, e.ts_ns, holder_name(r.track), "holder", "");
        }
        break;
      case TraceKind::kHoldEnd:
        if (s.holders > 0) --s.holders;
        if (s.exclusive_holder == static_cast<int64_t>(r.track)) {
          em.event('E', kLocksPid, tid, e.ts_ns, holder_name(r.track), nullptr, "");
          s.exclusive_holder = -1;
        }
        break;
      default: continue;
    }
    counter(e.lock, e.ts_ns);
  }
  for (auto& [lock, s] : state)
    if (s.exclusive_holder >= 0)
      em.event('E', kLocksPid, locks[lock].tid, std::max(stop_ns, start_ns),
               holder_name(static_cast<uint32_t>(s.exclusive_holder)), nullptr, "{\"cut_by_window_end\":true}");
  out += "\n]}\n";
  return out;
}

LockTracer::LockTracer(std::vector<std::string> track_names, const TraceOptions& opts,
                       uint64_t (*clock)(), bool lossless, uint64_t known_start_ns,
                       const std::atomic<bool>* measuring, uint64_t ts_origin_ns_if_known)
    : names_(std::move(track_names)), opts_(opts), lossless_(lossless),
      origin_known_(known_start_ns != TraceWindow::kUnknown), ts_origin_ns_(ts_origin_ns_if_known),
      events_(names_.size()), stored_cap_(kStoredEventsCap) {
  window_.start_ns.store(known_start_ns, std::memory_order_relaxed);
  window_.length_ns = static_cast<uint64_t>(opts.window_s * 1e9 + 0.5);
  window_.measuring = measuring;
  const size_t cap = queue_capacity(names_.size());
  for (size_t i = 0; i < names_.size(); ++i)
    clients_.push_back(std::make_unique<ClientTrace>(cap, clock, &window_, lossless));
  writer_ = std::thread([this] { writer_main(); });
}

LockTracer::~LockTracer() {
  stop_.store(true);
  if (writer_.joinable()) writer_.join();
}

void LockTracer::drain() {
  for (size_t i = 0; i < clients_.size(); ++i)
    clients_[i]->queue().consume_all([&](const TraceEvent& e) {
      if (stored_ >= stored_cap_) {
        ++over_cap_;
        return;
      }
      events_[i].push_back(e);
      ++stored_;
    });
}

void LockTracer::writer_main() {
  while (!stop_.load(std::memory_order_acquire)) {
    const uint64_t before = stored_ + over_cap_;
    drain();
    if (stored_ + over_cap_ == before) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

TraceSummary LockTracer::finish(nlohmann::json about) {
  stop_.store(true, std::memory_order_release);
  if (writer_.joinable()) writer_.join();
  drain();  // what the clients pushed after the writer's last pass
  TraceSummary sum;
  sum.path = opts_.path;
  uint64_t dropped = over_cap_;
  for (const auto& c : clients_) dropped += c->dropped();
  sum.dropped = dropped;
  const uint64_t start = window_.start_ns.load();
  sum.window_opened = start != TraceWindow::kUnknown;
  std::vector<TraceTrackInput> tracks(names_.size());
  for (size_t i = 0; i < names_.size(); ++i) {
    tracks[i].name = names_[i];
    if (sum.window_opened) {
      std::array<ClientTrace::Open, ClientTrace::kMaxOpen> open{};
      const uint32_t n = clients_[i]->open_at_start(open);
      tracks[i].open_at_start.assign(open.begin(), open.begin() + n);
      tracks[i].events = std::move(events_[i]);
    }
  }
  about["window_s"] = opts_.window_s;
  about["window_start_ns"] = sum.window_opened ? nlohmann::json(start) : nlohmann::json(nullptr);
  about["ts_origin_ns"] = origin_known_ ? ts_origin_ns_ : (sum.window_opened ? start : 0);
  about["dropped_events"] = dropped;
  about["lossless"] = lossless_;
  nlohmann::json other = {{"walbench", about}};
  const uint64_t s = sum.window_opened ? start : 0;
  const std::string text = build_chrome_trace(
      tracks, origin_known_ ? ts_origin_ns_ : s, s, s + window_.length_ns, other, &sum.events);
  write_file_atomically(opts_.path, text);
  sum.bytes = text.size();
  return sum;
}

}  // namespace walbench

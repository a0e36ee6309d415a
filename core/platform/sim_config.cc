// The sim platform's configuration: SimConfig (JSON, presets, validation), counters and outcome
// reports. Design: sim.h.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include "core/platform/line_names.h"
#include "core/platform/sim.h"

namespace walbench {

// =============================================================================================
// SimConfig
// =============================================================================================
namespace {

// THE PARAMETER TABLE: every JSON key of SimConfig but "placement", "preset", "preset_file" and
// "kind", with its unit, allowed range and one-line doc. validate() enforces the ranges and
// SimConfig::param_info() (`walbench list platforms`) prints them, so the two cannot drift.
// Defaults and their sources: the struct in sim.h. X(field, unit, min, max, bound, doc);
// bound kClosed: min <= v <= max; kMinOpen: min < v <= max; kMaxOpen: min <= v < max.
#define WALBENCH_SIM_PARAMS(X)                                                                    \
  X(cores, "cores", 1, 4096, kClosed, "physical cores, all sockets together")                     \
  X(sockets, "sockets", 1, 4096, kClosed,                                                         \
    "sockets; cores are numbered socket-major, so sockets must divide cores")                     \
  X(cores_per_cluster, "cores", 0, 4096, kClosed,                                                 \
    "cores sharing an L3 slice group (AMD CCX: 8); 0 = the whole socket is one cluster; must "   \
    "divide a socket's cores")                                                                    \
  X(smt, "threads per core", 1, 8, kClosed, "hardware threads per core (siblings share the L1)") \
  X(line_hit_ns, "ns", 1, kInf, kClosed,                                                          \
    "access to a line this core holds (L1 hit); >= 1 so that a load loop advances time")         \
  X(same_cluster_transfer_ns, "ns", 0, kInf, kClosed,                                             \
    "line transfer between cores of one cluster (only with cores_per_cluster > 0)")              \
  X(same_socket_transfer_ns, "ns", 0, kInf, kClosed,                                              \
    "line transfer between cores of one socket (core-to-core CAS latency)")                       \
  X(cross_socket_transfer_ns, "ns", 0, kInf, kClosed, "line transfer between sockets")            \
  X(memory_ns, "ns", 0, kInf, kClosed, "line in no cache: DRAM load-to-use latency")              \
  X(rmw_extra_ns, "ns", 0, kInf, kClosed,                                                         \
    "a locked instruction (LOCK XADD / CMPXCHG / XCHG) beyond its line access")                   \
  X(fence_ns, "ns", 0, kInf, kClosed, "a full fence (MFENCE) with an empty store buffer")        \
  X(snoop_linger, "0 or 1", 0, 1, kClosed,                                                        \
    "1: a request queued at a busy line is ordered when its snoop reaches the holder, so the "   \
    "holder's accesses issued before then (a failed CAS's retry) complete first; 0: at arrival") \
  X(request_at_issue, "0 or 1", 0, 1, kClosed,                                                    \
    "1: a miss's request leaves at issue and waits at a busy line, so the holder's later "       \
    "accesses come after it; 0: it leaves when the line frees (the holder keeps it meanwhile)")  \
  X(snoop_window_ns, "ns", 0, kInf, kClosed,                                                      \
    "with request_at_issue 1 (and snoop_linger 0): a request waiting at a busy line is ordered "  \
    "this long after the line frees, so the holder's accesses issued meanwhile come first")      \
  X(pause_ns, "ns", 1, kInf, kClosed, "one PAUSE: SPIN_DELAY() in s_lock-style spin loops")      \
  X(spin_park_after, "iterations", 0, kInf, kClosed,                                              \
    "simulator speed, not the model: unchanged (load, spin delay) pairs before a spinner parks; " \
    "0 = simulate every iteration")                                                               \
  X(spin_park_max_ns, "ns", 1, kInf, kClosed,                                                     \
    "a parked spinner replays at least this often (bounds how late its s_lock sleep frees the "  \
    "CPU)")                                                                                       \
  X(context_switch_ns, "ns", 0, kInf, kClosed, "dispatching a thread onto a CPU")                 \
  X(time_slice_ns, "ns", 1, kInf, kClosed,                                                        \
    "CPU time after which a thread is preempted if others wait in the run queue")                 \
  X(wakeup_preemption, "0, 1 or 2", 0, 2, kClosed,                                               \
    "1: a thread woken while no CPU is free preempts the one running on its last CPU at that "   \
    "one's next operation (Linux's wake-up preemption); 2: only if its vruntime is behind that " \
    "one's by more than wakeup_granularity_ns (CFS); 0: it waits in the run queue")              \
  X(wakeup_granularity_ns, "ns", 0, kInf, kClosed,                                               \
    "wakeup_preemption 2: how far the wakee's vruntime must be behind (CFS "                      \
    "sched_wakeup_granularity)")                                                                  \
  X(sleeper_credit_ns, "ns", 0, kInf, kClosed,                                                   \
    "wakeup_preemption 2: a woken thread's vruntime is raised to at least the fair clock minus " \
    "this (CFS place_entity: sched_latency / 2)")                                                 \
  X(semaphore_wake_ns, "ns", 0, kInf, kClosed,                                                    \
    "semaphore post -> waiter runnable on an idle CPU (IPI and wake-up; dispatch adds "            \
    "context_switch_ns); the idle CPU is claimed until it arrives; with none unclaimed the "       \
    "waiter is queued at once")                                                                   \
  X(idle_poll_ns, "ns", 0, kInf, kClosed,                                                         \
    "an idle CPU polls this long before it halts; a post whose waiter would run on a CPU idle "  \
    "for less wakes it without semaphore_wake_ns (cpuidle-haltpoll); 0 = no polling")            \
  X(semaphore_post_ns, "ns", 0, kInf, kClosed,                                                    \
    "the poster's futex_wake system call, paid only when a waiter sleeps")                        \
  X(semaphore_trylock_ns, "ns", 0, kInf, kClosed,                                                 \
    "one failed PGSemaphoreTryLock in a --disable-spinlocks spin loop beyond its load (call, "    \
    "errno); replaces pause_ns there")                                                            \
  X(sleep_slack_ns, "ns", 0, kInf, kClosed, "nanosleep overshoot (timer_slack_ns)")               \
  X(wake_jitter, "fraction", 0, 1, kMaxOpen,                                                      \
    "semaphore wake and sleep slack are scaled by U[1-j, 1+j], drawn from the seed")             \
  X(working_set_bytes, "bytes", 0, kInf, kClosed,                                                 \
    "memory a thread's own code touches (a backend's per-transaction footprint); a dispatch "     \
    "whose set the core's L2 lost leaves a refill due at its next statement; 0 = off")           \
  X(core_cache_bytes, "bytes", 0, kInf, kClosed,                                                  \
    "a core's private cache (L2): holds core_cache_bytes / working_set_bytes working sets")      \
  X(cluster_cache_bytes, "bytes", 0, kInf, kClosed,                                               \
    "the cache a cluster (or socket) shares (L3); a set it still holds refills at "              \
    "cluster_cache_ns per line, else at memory_ns")                                               \
  X(cluster_cache_ns, "ns", 0, kInf, kClosed, "L3 hit load-to-use latency (working-set refills)") \
  X(copy_bytes_per_ns, "bytes/ns (= GB/s)", 0, kInf, kMinOpen, "one core's memcpy bandwidth")     \
  X(memory_bandwidth_bytes_per_ns, "bytes/ns (= GB/s)", 0, kInf, kClosed,                         \
    "machine-wide cap on bytes copied (a copied byte is read and written); 0 = no cap")          \
  X(crc_bytes_per_ns, "bytes/ns (= GB/s)", 0, kInf, kMinOpen, "one core's CRC-32C speed")         \
  X(smt_work_factor, "factor", 1, kInf, kClosed,                                                  \
    "work and copies take this much longer while the SMT sibling is busy")                        \
  X(page_cache_write_bytes_per_ns, "bytes/ns (= GB/s)", 0, kInf, kClosed,                         \
    "one pwrite's rate into the page cache (copy, page allocation, dirtying); 0 = "               \
    "copy_bytes_per_ns")                                                                          \
  X(page_cache_bytes_per_ns, "bytes/ns (= GB/s)", 0, kInf, kClosed,                               \
    "page-cache write bandwidth of all concurrent pwrites together (shared FIFO server); 0 = "    \
    "no shared cap")                                                                              \
  X(storage_write_bytes_per_ns, "bytes/ns (= GB/s)", 0, kInf, kClosed,                            \
    "device write bandwidth, drained by fsync; 0 = instant")                                      \
  X(fsync_ns, "ns", 0, kInf, kClosed, "fdatasync latency on top of the device transfer; 0 with no transfer due (always so with storage_write_bytes_per_ns 0: no device, tmpfs): fdatasync costs syscall_ns and keeps the CPU")         \
  X(syscall_ns, "ns", 0, kInf, kClosed, "a system call's entry and exit (pwrite, fdatasync; an SLRU page read's open, lseek, read, close)")          \
  X(storage_fluctuation, "fraction", 0, 1, kMaxOpen,                                              \
    "device bandwidth x (1 + f x U[-1, 1]) per period, drawn from the seed; 0 = constant")        \
  X(storage_fluctuation_period_ns, "ns", 1, kInf, kClosed,                                        \
    "how long one fluctuating bandwidth level lasts")                                             \
  X(stack_kib, "KiB", 64, kInf, kClosed, "simulator only: each fiber's stack (touched pages)")

constexpr double kInf = std::numeric_limits<double>::infinity();
enum class Bound { kClosed, kMinOpen, kMaxOpen };
using enum Bound;

std::string fmt_bound(double x) {
  std::ostringstream o;
  o << x;
  return o.str();
}

// "[1, 4096]", ">= 0", "> 0", "[0, 1)": what validate() enforces.
std::string range_text(double lo, double hi, Bound b) {
  if (hi == kInf) return (b == kMinOpen ? "> " : ">= ") + fmt_bound(lo);
  return (b == kMinOpen ? "(" : "[") + fmt_bound(lo) + ", " + fmt_bound(hi) + (b == kMaxOpen ? ")" : "]");
}

bool in_range(double v, double lo, double hi, Bound b) {
  if (std::isnan(v)) return false;
  if (b == kMinOpen ? !(v > lo) : !(v >= lo)) return false;
  return b == kMaxOpen ? v < hi : v <= hi;
}

const char* placement_name(SimPlacement p) {
  return p == SimPlacement::kSpread ? "spread" : "compact";
}

std::vector<std::string> all_keys() {
  std::vector<std::string> k = {"kind", "preset", "preset_file", "placement"};
#define WALBENCH_SIM_KEY(f, ...) k.emplace_back(#f);
  WALBENCH_SIM_PARAMS(WALBENCH_SIM_KEY)
#undef WALBENCH_SIM_KEY
  return k;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string did_you_mean(const std::string& key, const std::vector<std::string>& keys) {
  std::string best;
  size_t best_d = std::max<size_t>(3, key.size() / 3) + 1;
  for (const std::string& k : keys) {
    const size_t d = edit_distance(key, k);
    if (d < best_d) {
      best_d = d;
      best = k;
    }
  }
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

// Where a key sits, for messages: "<path>.<key>" under a dotted path ("f.json: platform.cores"),
// "<path>/<key>" under a JSON Pointer ("/platform/cores") or inside a preset file, whose path
// ends in ": " ("presets/x.json: /cores").
std::string key_path(const std::string& path, const std::string& key) {
  if (key.empty()) return path;
  if (path.empty()) return key;
  if (path.front() == '/' || path.ends_with(": ")) return path + "/" + key;
  return path + "." + key;
}

[[noreturn]] void config_error(const std::string& path, const std::string& key, const std::string& what) {
  const std::string where = key_path(path, key);
  throw std::invalid_argument(where.ends_with(": ") ? where + what : where + ": " + what);
}

template <class T>
void read_field(const nlohmann::json& v, const std::string& path, const std::string& key, T& out) {
  if constexpr (std::is_integral_v<T>) {
    if (!v.is_number_integer()) config_error(path, key, "expected a non-negative integer, got " + v.dump());
    uint64_t x;
    if (v.is_number_unsigned()) {
      x = v.get<uint64_t>();
    } else {
      const int64_t s = v.get<int64_t>();
      if (s < 0) config_error(path, key, "expected a non-negative integer, got " + v.dump());
      x = static_cast<uint64_t>(s);
    }
    if (x > std::numeric_limits<T>::max()) config_error(path, key, "value " + v.dump() + " is too large");
    out = static_cast<T>(x);
  } else {
    if (!v.is_number()) config_error(path, key, "expected a number, got " + v.dump());
    out = v.get<T>();
  }
}

}  // namespace

nlohmann::json SimConfig::to_json() const {
  nlohmann::json j = nlohmann::json::object();
#define WALBENCH_SIM_TO_JSON(f, ...) j[#f] = f;
  WALBENCH_SIM_PARAMS(WALBENCH_SIM_TO_JSON)
#undef WALBENCH_SIM_TO_JSON
  j["placement"] = placement_name(placement);
  return j;
}

namespace {

// The keys of a SimConfig object (from_json's loop), applied over `c`. In a preset file
// (`in_file`) the documentation keys "description" (a string) and "sources" (a string, or an
// object from SimConfig keys to strings) are accepted and ignored; "preset" is handled by the
// caller.
void apply_keys(SimConfig& c, const nlohmann::json& j, const std::string& path, bool in_file) {
  std::vector<std::string> keys = all_keys();
  if (in_file) {
    keys.emplace_back("description");
    keys.emplace_back("sources");
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    const nlohmann::json& v = it.value();
    if (key == "preset" || key == "preset_file") continue;  // from_json's
    if (key == "kind") {
      if (v != "sim") config_error(path, key, "expected \"sim\", got " + v.dump());
      continue;
    }
    if (key == "placement") {
      if (v == "spread") c.placement = SimPlacement::kSpread;
      else if (v == "compact") c.placement = SimPlacement::kCompact;
      else config_error(path, key, "expected \"spread\" or \"compact\", got " + v.dump());
      continue;
    }
    if (in_file && key == "description") {
      if (!v.is_string()) config_error(path, key, "expected a string, got " + v.dump());
      continue;
    }
    if (in_file && key == "sources") {
      if (v.is_string()) continue;
      if (!v.is_object())
        config_error(path, key, "expected a string or an object, got " + v.dump());
      const std::vector<std::string> params = all_keys();
      for (auto s = v.begin(); s != v.end(); ++s) {
        const std::string at = key_path(path, "sources/" + s.key());
        if (std::find(params.begin(), params.end(), s.key()) == params.end())
          config_error(at, "", "not a machine parameter" + did_you_mean(s.key(), params));
        if (!s.value().is_string())
          config_error(at, "", "expected a string, got " + s.value().dump());
      }
      continue;
    }
#define WALBENCH_SIM_FROM_JSON(f, ...)\
  if (key == #f) {                \
    read_field(v, path, key, c.f); \
    continue;                     \
  }
    WALBENCH_SIM_PARAMS(WALBENCH_SIM_FROM_JSON)
#undef WALBENCH_SIM_FROM_JSON
    config_error(path, key, "unknown key" + did_you_mean(key, keys));
  }
}

bool is_preset_file(const std::string& name) { return name.ends_with(".json"); }

// Where a preset file named `name` is: an absolute `name` itself; a relative one in
// `preset_dir` ("" = the current directory), else in <repository>/presets/. "" if not found.
std::string find_preset_file(const std::string& name, const std::string& preset_dir,
                             std::vector<std::string>* tried) {
  std::vector<std::string> candidates;
  if (!name.empty() && name.front() == '/') {
    candidates.push_back(name);
  } else {
    candidates.push_back(preset_dir.empty() ? name : (std::filesystem::path(preset_dir) / name).string());
#ifdef WALBENCH_PRESETS_DIR
    candidates.push_back(std::string(WALBENCH_PRESETS_DIR) + "/" + name);
#endif
  }
  for (const std::string& f : candidates) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(f, ec)) return f;
    tried->push_back(f);
  }
  return "";
}

// The keys of to_json() that `j` lacks (empty: j is complete, its preset contributes nothing).
std::vector<std::string> missing_fields(const nlohmann::json& j) {
  std::vector<std::string> missing;
  for (const std::string& k : all_keys())
    if (k != "kind" && k != "preset" && k != "preset_file" && !j.contains(k)) missing.push_back(k);
  return missing;
}

// A preset file: a JSON object of SimConfig keys (plus "description" and "sources"), over the
// defaults or over the builtin preset it names; it may not name another file. `where` names the
// "preset" key; errors inside the file read "<where>: <file>: /<key>: <problem>". `*read`
// receives the absolute path of the file.
SimConfig load_preset_file(const std::string& name, const std::string& preset_dir,
                           const std::string& where, std::string* read) {
  std::vector<std::string> tried;
  const std::string file = find_preset_file(name, preset_dir, &tried);
  if (file.empty()) {
    std::string list;
    for (const std::string& t : tried) list += (list.empty() ? "" : ", ") + t;
    config_error(where, "", "preset file \"" + name + "\" not found (looked for " + list + ")");
  }
  std::ifstream in(file, std::ios::binary);
  if (!in.is_open())
    config_error(where, "", "cannot read preset file " + file + " (" + std::strerror(errno) + ")");
  std::ostringstream text;
  text << in.rdbuf();
  const std::string at = where + ": " + file + ": ";
  nlohmann::json j;
  std::string duplicate;
  try {
    // Duplicate top-level keys: nlohmann keeps the last one silently; refuse them.
    std::vector<std::string> seen;
    using Event = nlohmann::json::parse_event_t;
    j = nlohmann::json::parse(text.str(), [&](int depth, Event e, nlohmann::json& v) {
      if (depth == 1 && e == Event::key) {
        const std::string k = v.get<std::string>();
        const bool again = std::find(seen.begin(), seen.end(), k) != seen.end();
        if (again && duplicate.empty()) duplicate = k;
        seen.push_back(k);
      }
      return true;
    });
  } catch (const nlohmann::json::parse_error& e) {
    std::string detail = e.what();
    const size_t p = detail.find("parse error");
    if (p != std::string::npos) detail = detail.substr(p);
    config_error(at, "", "invalid JSON: " + detail);
  }
  if (!j.is_object())
    config_error(at, "", "expected a JSON object of machine parameters, got " + j.dump());
  if (!duplicate.empty()) config_error(at, duplicate, "duplicate key");
  if (j.contains("preset_file"))
    config_error(at, "preset_file", "walbench writes this key into resolved cells; a preset file "
                                    "may name a builtin \"preset\" only");
  SimConfig c;
  if (auto it = j.find("preset"); it != j.end()) {
    if (!it->is_string())
      config_error(at, "preset", "expected a builtin preset name, got " + it->dump());
    const std::string base = it->get<std::string>();
    if (is_preset_file(base))
      config_error(at, "preset",
                   "a preset file may name a builtin preset, not another file (\"" + base + "\")");
    try {
      c = SimConfig::preset(base);
    } catch (const std::invalid_argument& e) {
      config_error(at, "preset", e.what());
    }
  }
  apply_keys(c, j, at, /*in_file=*/true);
  c.validate(at);
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(file, ec);
  *read = ec ? file : absolute.lexically_normal().string();
  return c;
}

// from_json and resolved_json: `*preset_file` receives the absolute path of a preset file read.
SimConfig parse_sim_json(const nlohmann::json& j, const std::string& path,
                         const std::string& preset_dir, std::string* preset_file) {
  if (!j.is_object()) config_error(path, "", "expected an object, got " + j.dump());
  const std::vector<std::string> missing = missing_fields(j);
  if (auto it = j.find("preset_file"); it != j.end()) {
    if (!it->is_string()) config_error(path, "preset_file", "expected a string, got " + it->dump());
    if (!missing.empty())
      config_error(path, "preset_file",
                   "walbench writes this key into resolved cells, next to every machine "
                   "parameter; this object lacks " + missing.front() +
                   (missing.size() > 1 ? " and " + std::to_string(missing.size() - 1) + " more" : "") +
                   ": name the file in \"preset\" instead");
  }
  SimConfig c;
  if (auto it = j.find("preset"); it != j.end()) {
    if (!it->is_string()) config_error(path, "preset", "expected a string");
    const std::string name = it->get<std::string>();
    // A complete object takes nothing from its preset (RESOLVED FORM in sim.h): the name is
    // then a record of where the values came from, and its file need not exist any more.
    if (missing.empty()) {
      // nothing to look up
    } else if (is_preset_file(name)) {
      c = load_preset_file(name, preset_dir, key_path(path, "preset"), preset_file);
    } else {
      try {
        c = SimConfig::preset(name);
      } catch (const std::invalid_argument& e) {
        config_error(path, "preset", e.what());
      }
    }
  }
  apply_keys(c, j, path, /*in_file=*/false);
  c.validate(path);
  return c;
}

}  // namespace

SimConfig SimConfig::from_json(const nlohmann::json& j, const std::string& path,
                               const std::string& preset_dir) {
  std::string ignored;
  return parse_sim_json(j, path, preset_dir, &ignored);
}

nlohmann::json SimConfig::resolved_json(const nlohmann::json& j, const std::string& path,
                                        const std::string& preset_dir) {
  std::string file;
  const SimConfig c = parse_sim_json(j, path, preset_dir, &file);
  nlohmann::json out = c.to_json();
  if (auto it = j.find("preset"); it != j.end()) out["preset"] = *it;
  if (!file.empty()) {
    out["preset_file"] = file;
  } else if (auto kept = j.find("preset_file"); kept != j.end()) {
    out["preset_file"] = *kept;  // already resolved
  }
  return out;
}

void SimConfig::validate(const std::string& path) const {
  auto need = [&](bool ok, const char* key, const std::string& what) {
    if (!ok) config_error(path, key, what);
  };
  // Ranges: the parameter table (cores first, so that the cross-field checks below can divide).
  auto check = [&](const char* key, double v, double lo, double hi, Bound b) {
    need(in_range(v, lo, hi, b), key,
         hi == kInf ? "must be " + range_text(lo, hi, b) : "must be in " + range_text(lo, hi, b));
  };
  check("cores", static_cast<double>(cores), 1, 4096, kClosed);
  // Across parameters.
  need(sockets >= 1 && cores % sockets == 0, "sockets", "must be >= 1 and divide cores");
  need(cores_per_cluster == 0 || (cores / sockets) % cores_per_cluster == 0, "cores_per_cluster",
       "must be 0 or divide the cores of a socket");
  need(snoop_window_ns == 0 || (request_at_issue == 1 && snoop_linger == 0), "snoop_window_ns",
       "must be 0 unless request_at_issue is 1 and snoop_linger is 0 (the window is that of a "
       "request waiting at the line; snoop_linger 1 has its own, half a transfer)");
#define WALBENCH_SIM_CHECK(f, unit, lo, hi, bound, doc) check(#f, static_cast<double>(f), lo, hi, bound);
  WALBENCH_SIM_PARAMS(WALBENCH_SIM_CHECK)
#undef WALBENCH_SIM_CHECK
}

std::vector<SimConfig::ParamInfo> SimConfig::param_info() {
  std::vector<ParamInfo> out;
#define WALBENCH_SIM_INFO(f, unit, lo, hi, bound, doc) out.push_back({#f, unit, range_text(lo, hi, bound), doc});
  WALBENCH_SIM_PARAMS(WALBENCH_SIM_INFO)
#undef WALBENCH_SIM_INFO
  return out;
}

std::vector<std::string> SimConfig::json_keys() { return all_keys(); }

std::vector<std::string> SimConfig::preset_names() {
  return {"icelake_2s", "cascadelake_2s", "milan_2s", "milan_1s", "coffeelake_1s"};
}

// Latencies: nviennot/core-to-core-latency README tables (median CAS round trip between two
// pinned threads; "single socket" and "dual sockets" tables). Everything not listed keeps the
// Ice Lake-SP defaults.
SimConfig SimConfig::preset(const std::string& name) {
  SimConfig c;
  if (name == "icelake_2s") return c;  // Xeon Platinum 8375C x2 (c6i.metal): 51 / 108 ns
  if (name == "cascadelake_2s") {      // Xeon Platinum 8275CL x2 (c5.metal): 47 / 134 ns
    c.cores = 48;
    c.same_cluster_transfer_ns = c.same_socket_transfer_ns = 47;
    c.cross_socket_transfer_ns = 134;
    c.core_cache_bytes = 1048576;      // L2 1 MiB per core
    c.cluster_cache_bytes = 37486592;  // L3 35.75 MiB per socket (Intel ARK)
    return c;
  }
  if (name == "milan_2s" || name == "milan_1s") {  // EPYC 7R13 (c6a.metal): 23 ns inside an
    c.cores = name == "milan_2s" ? 96 : 48;        // 8-core CCX, ~107 ns across, 197 ns across
    c.sockets = name == "milan_2s" ? 2 : 1;        // sockets
    c.cores_per_cluster = 8;
    c.same_cluster_transfer_ns = 23;
    c.same_socket_transfer_ns = 107;
    c.cross_socket_transfer_ns = 197;
    c.core_cache_bytes = 524288;       // L2 512 KiB per core
    c.cluster_cache_bytes = 33554432;  // L3 32 MiB per 8-core CCX
    c.cluster_cache_ns = 14;           // ~46 cycles (AMD Zen 3 software optimization guide)
    return c;
  }
  if (name == "coffeelake_1s") {  // Core i9-9900K, 8 cores: 21 ns (a desktop; laptops likewise)
    c.cores = 8;
    c.sockets = 1;
    c.same_cluster_transfer_ns = c.same_socket_transfer_ns = 21;
    c.memory_bandwidth_bytes_per_ns = 20;  // 2 channels DDR4-2666, halved for copies
    c.core_cache_bytes = 262144;           // L2 256 KiB per core
    c.cluster_cache_bytes = 16777216;      // L3 16 MiB
    c.cluster_cache_ns = 12;               // ~42 cycles at 3.6 GHz
    return c;
  }
  std::string list;
  for (const std::string& n : preset_names()) list += (list.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown sim preset '" + name + "'" + did_you_mean(name, preset_names()) +
                              "; known: " + list + ", or a file NAME.json (presets/README.md)");
}

void SimConfig::set_storage(const std::string& name) {
  if (name == "nvme") {
    storage_write_bytes_per_ns = 2;
    fsync_ns = 50000;
  } else if (name == "tmpfs") {  // the page cache is the device: the write's memcpy is all
    storage_write_bytes_per_ns = 0;
    fsync_ns = 0;
  } else {
    throw std::invalid_argument("unknown storage model '" + name + "'; known: nvme, tmpfs");
  }
}

nlohmann::json SimCounters::to_json() const {
  return nlohmann::json{{"shared_ops", shared_ops},
                        {"replayed_loads", replayed_loads},
                        {"line_hits", line_hits},
                        {"cluster_transfers", cluster_transfers},
                        {"socket_transfers", socket_transfers},
                        {"cross_socket_transfers", cross_socket_transfers},
                        {"memory_fetches", memory_fetches},
                        {"line_wait_ns", line_wait_ns},
                        {"resumes", resumes},
                        {"events", events},
                        {"dispatches", dispatches},
                        {"preemptions", preemptions},
                        {"wakeup_preemptions", wakeup_preemptions},
                        {"cluster_cache_refills", cluster_cache_refills},
                        {"memory_refills", memory_refills},
                        {"refill_ns", refill_ns},
                        {"semaphore_sleeps", semaphore_sleeps},
                        {"semaphore_wakes", semaphore_wakes},
                        {"sleeps", sleeps},
                        {"spin_parks", spin_parks},
                        {"wait_parks", wait_parks},
                        {"park_wakes", park_wakes},
                        {"copy_bytes", copy_bytes},
                        {"storage_writes", storage_writes},
                        {"storage_syncs", storage_syncs}};
}

nlohmann::json Simulation::top_lines_json(const std::vector<LineReport>& at_open,
                                          const std::vector<LineReport>& at_close, size_t top,
                                          uint64_t txns) {
  std::unordered_map<uintptr_t, LineStats> before;
  for (const LineReport& r : at_open) before[r.address] = r.stats;
  std::vector<LineReport> window;
  for (const LineReport& r : at_close) {
    LineStats d = r.stats;
    if (const auto it = before.find(r.address); it != before.end()) {
      d.wait_ns -= it->second.wait_ns;
      d.loads -= it->second.loads;
      d.load_misses -= it->second.load_misses;
      d.rmws -= it->second.rmws;
      d.stores -= it->second.stores;
    }
    if (d.wait_ns + d.loads + d.rmws + d.stores > 0) window.push_back({r.address, r.id, d});
  }
  const auto hotter = [](const LineReport& a, const LineReport& b) {
    if (a.stats.wait_ns != b.stats.wait_ns) return a.stats.wait_ns > b.stats.wait_ns;
    if (a.stats.rmws != b.stats.rmws) return a.stats.rmws > b.stats.rmws;
    if (a.stats.loads != b.stats.loads) return a.stats.loads > b.stats.loads;
    return a.id < b.id;
  };
  const size_t n = std::min(top, window.size());
  std::partial_sort(window.begin(), window.begin() + static_cast<std::ptrdiff_t>(n), window.end(), hotter);
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < n; ++i) {
    const LineReport& r = window[i];
    std::ostringstream address;
    address << "0x" << std::hex << r.address;
    const std::string names = line_names::describe(r.address);
    nlohmann::json line{{"line", address.str()},
                        {"line_id", r.id},
                        {"names", names.empty() ? nlohmann::json(nullptr) : nlohmann::json(names)},
                        {"wait_ms", static_cast<double>(r.stats.wait_ns) / 1e6}};
    if (txns > 0) line["wait_us_per_txn"] = static_cast<double>(r.stats.wait_ns) / 1e3 / static_cast<double>(txns);
    line["loads"] = r.stats.loads;
    line["load_misses"] = r.stats.load_misses;
    line["rmws"] = r.stats.rmws;
    line["stores"] = r.stats.stores;
    out.push_back(std::move(line));
  }
  return out;
}

const char* sim_status_name(SimStatus s) {
  switch (s) {
    case SimStatus::kFinished: return "finished";
    case SimStatus::kTimeLimit: return "time limit";
    case SimStatus::kDeadlock: return "deadlock";
    case SimStatus::kInterrupted: return "interrupted";
  }
  return "?";
}

std::string SimOutcome::message() const {
  std::ostringstream o;
  o << "sim: " << sim_status_name(status) << " at " << now_ns << " ns: " << unfinished.size()
    << " of " << fibers << " fibers unfinished";
  for (const SimFiberReport& r : unfinished) {
    o << "\n  fiber " << r.fiber << " '" << r.name << "': " << r.state << ", clock " << r.clock_ns
      << " ns";
    if (!r.wait.empty()) o << ", wait: " << r.wait;
  }
  return o.str();
}
}  // namespace walbench

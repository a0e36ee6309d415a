// The sim platform: configuration, scheduler, cost model. Design: sim.h.
#include "core/platform/sim.h"

#include <absl/container/flat_hash_map.h>

#include <algorithm>
#include <boost/context/protected_fixedsize_stack.hpp>
#include <cerrno>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <utility>

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

namespace walbench {

// =============================================================================================
// SimConfig
// =============================================================================================
namespace {

// Every JSON key of SimConfig but "placement", "preset", "preset_file" and "kind".
#define WALBENCH_SIM_FIELDS(X)                                                                   \
  X(cores) X(sockets) X(cores_per_cluster) X(smt) X(line_hit_ns) X(same_cluster_transfer_ns)    \
  X(same_socket_transfer_ns) X(cross_socket_transfer_ns) X(memory_ns) X(rmw_extra_ns)           \
  X(fence_ns) X(pause_ns) X(spin_park_after) X(spin_park_max_ns) X(context_switch_ns)           \
  X(time_slice_ns) X(semaphore_wake_ns) X(semaphore_post_ns) X(sleep_slack_ns) X(wake_jitter)   \
  X(copy_bytes_per_ns) X(memory_bandwidth_bytes_per_ns) X(crc_bytes_per_ns) X(smt_work_factor) \
  X(storage_write_bytes_per_ns) X(fsync_ns) X(syscall_ns) X(stack_kib)

const char* placement_name(SimPlacement p) {
  return p == SimPlacement::kSpread ? "spread" : "compact";
}

std::vector<std::string> all_keys() {
  std::vector<std::string> k = {"kind", "preset", "preset_file", "placement"};
#define WALBENCH_SIM_KEY(f) k.emplace_back(#f);
  WALBENCH_SIM_FIELDS(WALBENCH_SIM_KEY)
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
#define WALBENCH_SIM_TO_JSON(f) j[#f] = f;
  WALBENCH_SIM_FIELDS(WALBENCH_SIM_TO_JSON)
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
#define WALBENCH_SIM_FROM_JSON(f) \
  if (key == #f) {                \
    read_field(v, path, key, c.f); \
    continue;                     \
  }
    WALBENCH_SIM_FIELDS(WALBENCH_SIM_FROM_JSON)
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
  need(cores >= 1 && cores <= 4096, "cores", "must be in [1, 4096]");
  need(sockets >= 1 && cores % sockets == 0, "sockets", "must be >= 1 and divide cores");
  need(cores_per_cluster == 0 || (cores / sockets) % cores_per_cluster == 0, "cores_per_cluster",
       "must be 0 or divide the cores of a socket");
  need(smt >= 1 && smt <= 8, "smt", "must be in [1, 8]");
  need(line_hit_ns >= 1, "line_hit_ns", "must be >= 1 (a zero-cost load loop would never yield)");
  need(pause_ns >= 1, "pause_ns", "must be >= 1");
  need(spin_park_max_ns >= 1, "spin_park_max_ns", "must be >= 1");
  need(time_slice_ns >= 1, "time_slice_ns", "must be >= 1");
  need(wake_jitter >= 0 && wake_jitter < 1, "wake_jitter", "must be in [0, 1)");
  need(copy_bytes_per_ns > 0, "copy_bytes_per_ns", "must be > 0");
  need(memory_bandwidth_bytes_per_ns >= 0, "memory_bandwidth_bytes_per_ns", "must be >= 0 (0 = no cap)");
  need(crc_bytes_per_ns > 0, "crc_bytes_per_ns", "must be > 0");
  need(smt_work_factor >= 1, "smt_work_factor", "must be >= 1");
  need(storage_write_bytes_per_ns >= 0, "storage_write_bytes_per_ns", "must be >= 0 (0 = instant)");
  need(stack_kib >= 64, "stack_kib", "must be >= 64");
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
    return c;
  }
  if (name == "milan_2s" || name == "milan_1s") {  // EPYC 7R13 (c6a.metal): 23 ns inside an
    c.cores = name == "milan_2s" ? 96 : 48;        // 8-core CCX, ~107 ns across, 197 ns across
    c.sockets = name == "milan_2s" ? 2 : 1;        // sockets
    c.cores_per_cluster = 8;
    c.same_cluster_transfer_ns = 23;
    c.same_socket_transfer_ns = 107;
    c.cross_socket_transfer_ns = 197;
    return c;
  }
  if (name == "coffeelake_1s") {  // Core i9-9900K, 8 cores: 21 ns (a desktop; laptops likewise)
    c.cores = 8;
    c.sockets = 1;
    c.same_cluster_transfer_ns = c.same_socket_transfer_ns = 21;
    c.memory_bandwidth_bytes_per_ns = 20;  // 2 channels DDR4-2666, halved for copies
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

const char* sim_status_name(SimStatus s) {
  switch (s) {
    case SimStatus::kFinished: return "finished";
    case SimStatus::kTimeLimit: return "time limit";
    case SimStatus::kDeadlock: return "deadlock";
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

// =============================================================================================
// Simulation: construction, fibers
// =============================================================================================
struct Simulation::LineMap {
  absl::flat_hash_map<uintptr_t, uint32_t> map;
};

namespace {
constexpr size_t kLineCache = 4096;  // direct-mapped cache in front of the line map
}

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
  occupant_.assign(hw_threads_, -1);
}

Simulation::~Simulation() {
  cancel_unfinished();
#ifdef WALBENCH_SIM_TSAN
  for (auto& f : fibers_)
    if (f->tsan != nullptr) __tsan_destroy_fiber(f->tsan);
#endif
}

size_t Simulation::spawn(std::function<void()> body, std::string name) {
  auto owned = std::make_unique<Fiber>();
  Fiber* f = owned.get();
  f->index = static_cast<uint32_t>(fibers_.size());
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
uint64_t Simulation::now_ns() const { return cur_ != nullptr ? cur_->clock : now_; }

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
  if (free) free_pos_bits_[pos / 64] |= uint64_t{1} << (pos % 64);
  else free_pos_bits_[pos / 64] &= ~(uint64_t{1} << (pos % 64));
}

void Simulation::arrive(Fiber& f, uint64_t t) {
  const int32_t hw = pick_free_hw(f.last_hw);
  if (hw >= 0) {
    dispatch(f, static_cast<uint32_t>(hw), t);
    return;
  }
  f.state = Fiber::State::kRunQueue;
  f.ready_at = t;
  runq_.push_back(f.index);
  arm_untimed_parks();
}

void Simulation::dispatch(Fiber& f, uint32_t hw, uint64_t t) {
  occupant_[hw] = static_cast<int32_t>(f.index);
  set_hw_free(hw, false);
  f.hw = static_cast<int32_t>(hw);
  f.last_hw = f.hw;
  f.core = hw % cfg_.cores;
  f.clock = std::max(f.clock, t) + cfg_.context_switch_ns;
  f.slice_end = f.clock + cfg_.time_slice_ns;
  f.state = Fiber::State::kReady;
  ++counters_.dispatches;
  push_event(f, f.clock);
}

void Simulation::release_cpu(Fiber& f, uint64_t t) {
  const uint32_t hw = static_cast<uint32_t>(f.hw);
  f.hw = -1;
  occupant_[hw] = -1;
  if (!runq_.empty()) {
    Fiber& g = *fibers_[runq_.front()];
    runq_.pop_front();
    dispatch(g, hw, std::max(t, g.ready_at));
  } else {
    set_hw_free(hw, true);
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

// =============================================================================================
// Cost model: lines
// =============================================================================================
uint32_t Simulation::line_id(const void* p) {
  const uintptr_t key = reinterpret_cast<uintptr_t>(p) >> 6;
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

uint64_t Simulation::cluster_ns() {
  if (cfg_.cores_per_cluster == 0) return socket_ns();  // the socket is the cluster
  ++counters_.cluster_transfers;
  return cfg_.same_cluster_transfer_ns;
}
uint64_t Simulation::socket_ns() {
  ++counters_.socket_transfers;
  return cfg_.same_socket_transfer_ns;
}
uint64_t Simulation::cross_ns() {
  ++counters_.cross_socket_transfers;
  return cfg_.cross_socket_transfer_ns;
}

uint64_t Simulation::transfer_ns(uint32_t from, uint32_t to) {
  if (cluster_lo_[from] == cluster_lo_[to]) return cluster_ns();
  if (socket_of_[from] == socket_of_[to]) return socket_ns();
  return cross_ns();
}

// A read miss: from the owner, else the nearest holder, else memory.
uint64_t Simulation::read_latency(uint32_t line, uint32_t c) {
  const Line& l = lines_[line];
  if (l.owner >= 0) return transfer_ns(static_cast<uint32_t>(l.owner), c);
  if (any_holder(line, cluster_lo_[c], cluster_hi_[c], c)) return cluster_ns();
  if (any_holder(line, socket_lo_[c], socket_hi_[c], c)) return socket_ns();
  if (any_holder(line, 0, cfg_.cores, c)) return cross_ns();
  ++counters_.memory_fetches;
  return cfg_.memory_ns;
}

// A write or RMW by a core that does not own the line: invalidate the farthest copy (or fetch
// from memory if nobody has it; an unshared copy of our own upgrades at hit cost).
uint64_t Simulation::write_latency(uint32_t line, uint32_t c) {
  if (any_holder(line, 0, socket_lo_[c], c) || any_holder(line, socket_hi_[c], cfg_.cores, c))
    return cross_ns();
  if (any_holder(line, socket_lo_[c], cluster_lo_[c], c) || any_holder(line, cluster_hi_[c], socket_hi_[c], c))
    return socket_ns();
  if (any_holder(line, cluster_lo_[c], cluster_hi_[c], c)) return cluster_ns();
  const uint64_t* b = &holders_[size_t{line} * words_];
  if (b[c / 64] >> (c % 64) & 1) {
    ++counters_.line_hits;
    return cfg_.line_hit_ns;
  }
  ++counters_.memory_fetches;
  return cfg_.memory_ns;
}

// =============================================================================================
// Fiber side: ordering, accesses, spinning
// =============================================================================================
inline void Simulation::sync(Fiber& f) {
  if (f.clock >= f.slice_end) slice_expired(f);
  // Ties by sequence number, the running fiber included: this P operation is ordered as an event
  // created now (it would get the next number), so an event already pending at the same
  // nanosecond was created earlier and goes first. yield_ready queues exactly that event.
  if (f.clock >= next_time_) yield_ready(f);
}

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

uint32_t Simulation::access(Fiber& f, const void* p, Access k) {
  if (f.replay) end_replay(f);
  if (k != Access::kRead) f.spin_addr = nullptr;
  sync(f);
  const uint32_t id = line_id(p);
  Line& l = lines_[id];
  const uint32_t c = f.core;
  const uint64_t t = f.clock;
  ++counters_.shared_ops;
  uint64_t* bits = &holders_[size_t{id} * words_];
  const uint64_t mine = uint64_t{1} << (c % 64);
  if (k == Access::kRead) {
    last_start_ = t;
    if (bits[c / 64] & mine) {
      ++counters_.line_hits;
      f.clock = t + cfg_.line_hit_ns;
      return id;
    }
    const uint64_t lat = read_latency(id, c);
    const uint64_t start = std::max(t, l.busy_until);
    counters_.line_wait_ns += start - t;
    f.clock = start + lat;
    l.owner = -1;  // the owner keeps a shared copy
    bits[c / 64] |= mine;
    return id;
  }
  uint64_t lat;
  if (l.owner == static_cast<int32_t>(c)) {
    ++counters_.line_hits;
    lat = cfg_.line_hit_ns;
  } else {
    lat = write_latency(id, c);
  }
  const uint64_t start = std::max(t, l.busy_until);
  last_start_ = start;
  counters_.line_wait_ns += start - t;
  const uint64_t done = start + lat + (k == Access::kRmw ? cfg_.rmw_extra_ns : 0);
  f.clock = done;
  l.busy_until = done;
  l.owner = static_cast<int32_t>(c);
  for (uint32_t w = 0; w < words_; ++w) bits[w] = 0;
  bits[c / 64] = mine;
  return id;
}

// A value-changing write took effect at `at` (its start; it completes when the line stops being
// busy). Parked spinners resume then: their replay ends at `at` and their next load waits for the
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

void Simulation::op_spin_delay() {
  Fiber* fp = cur_;
  if (fp == nullptr) return;
  Fiber& f = *fp;
  f.clock += cfg_.pause_ns;
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

void Simulation::op_fence() {
  Fiber* fp = cur_;
  if (fp == nullptr) return;
  fp->clock += cfg_.fence_ns;
  if (!fp->replay) sync(*fp);
}

void Simulation::op_sleep(uint64_t ns) {
  Fiber* fp = cur_;
  if (fp == nullptr || ns == 0) return;  // pg_usleep(0) returns at once
  Fiber& f = *fp;
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
  push_event(w, t + jittered(cfg_.semaphore_wake_ns));
  ++counters_.semaphore_wakes;
  if (fp != nullptr) fp->clock += cfg_.semaphore_post_ns;
}

bool Simulation::sem_try_wait(SimSemState& s) {
  if (Fiber* fp = cur_) access(*fp, &s, Access::kRmw);
  if (s.count == 0) return false;
  --s.count;
  return true;
}

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

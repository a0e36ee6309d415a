// The schema of a config: the fields of the top-level sections (one FieldDef each), the
// strategy variants and their parameters, the CLOG strategy. NB: must match the structs in
// core/cell/spec.h and the tables in configs/README.md.
#include "harness/config_internal.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/platform/sim.h"
#include "harness/postgres_config.h"
#include "strategies/strategy.h"

namespace walbench::config_internal {

namespace {

std::string want_nonempty_string(const OJson& v, const Where& w, const std::string& expected) {
  if (!v.is_string() || v.get<std::string>().empty()) fail(w, found(v), expected);
  return v.get<std::string>();
}

// A PostgreSQL memory value: "128MB", or an integer (pages of 8 kB, as postgresql.conf reads it).
std::string want_memory_setting(const OJson& v, const Where& w) {
  const char* expected = "a PostgreSQL memory value such as \"1GB\" or \"128MB\" (units kB, MB, GB, "
                         "TB), or an integer number of 8 kB pages";
  if (v.is_number_integer()) {
    if (v.get<int64_t>() < 16) fail(w, show(v) + " is out of range", expected);
    return std::to_string(v.get<int64_t>());
  }
  if (!v.is_string() || !is_memory_setting(v.get<std::string>())) fail(w, found(v), expected);
  return v.get<std::string>();
}

std::string want_absolute_path(const OJson& v, const Where& w) {
  const char* expected = "an absolute directory path (pg_wal goes to a fresh directory under it)";
  if (!v.is_string() || v.get<std::string>().empty() || v.get<std::string>()[0] != '/')
    fail(w, found(v), expected);
  return v.get<std::string>();
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The fields of the top-level sections. NB: must match the structs in core/cell/spec.h and the
// tables in configs/README.md.

const std::vector<FieldDef>& field_defs() {
  static const std::vector<FieldDef> defs = {
      {"platform", "kind",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.platform.kind = want_string(v, w, {"threads", "sim", "postgres"});
       }},
      // kind "postgres" only (harness/postgres_config.h).
      {"platform", "bindir",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.platform.postgres.bindir = want_nonempty_string(v, w, "a PostgreSQL bin directory");
       }},
      {"platform", "dsn",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.platform.postgres.dsn =
             want_nonempty_string(v, w, "a libpq connection string (\"host=... dbname=...\")");
       }},
      {"platform", "max_connections",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.platform.postgres.max_connections = static_cast<uint32_t>(want_int(v, w, 1, 262143));
       }},
      {"platform", "shared_buffers",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.platform.postgres.shared_buffers = want_memory_setting(v, w);
       }},
      {"platform", "wal_dir",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.platform.postgres.wal_dir = want_absolute_path(v, w);
       }},
      // NB: the choices must match strategies/make_cell.h.
      {"platform", "atomics",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.platform.atomics = want_string(v, w, {"native", "emulated"});
       }},
      {"platform", "spinlocks",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.platform.spinlocks = want_string(v, w, {"native", "semaphore"});
       }},
      {"wal", "page_size",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.wal.page_size = static_cast<uint32_t>(want_int(v, w, 1024, 65536, true));
       }},
      {"wal", "segment_size",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.wal.segment_size = static_cast<uint64_t>(want_int(v, w, 2048, int64_t{1} << 30, true));
       }},
      {"wal", "wal_buffers",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.wal.wal_buffers = static_cast<uint32_t>(want_int(v, w, 4, kMaxU31 / 1024));
       }},
      {"wal", "storage",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.wal.storage = want_string(v, w, {"memory", "file"});
       }},
      {"wal", "memory_mb",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.wal.memory_mb = static_cast<uint32_t>(want_int(v, w, 4, 65536));
       }},
      {"wal", "path",
       [](CellSpec& c, const OJson& v, const Where& w) { c.wal.path = want_string(v, w); }},
      {"wal", "fsync",
       [](CellSpec& c, const OJson& v, const Where& w) { c.wal.fsync = want_bool(v, w); }},
      {"wal", "buffer_init",
       [](CellSpec& c, const OJson& v, const Where& w) {
         // NB: must match parse_buffer_init in core/wal/wal.h.
         c.wal.buffer_init = want_string(v, w, {"mapping_lock", "lockfree"});
       }},
      {"commit", "synchronous_commit",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.commit.synchronous_commit = want_bool(v, w);
       }},
      {"commit", "wal_writer_delay_ms",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.commit.wal_writer_delay_ms = want_number(v, w, 0, true, 10000);
       }},
      {"commit", "wal_writer_flush_after",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.commit.wal_writer_flush_after = static_cast<uint32_t>(want_int(v, w, 0, kMaxU31));
       }},
      {"workload", "name",
       [](CellSpec& c, const OJson& v, const Where& w) {
         // NB: must match parse_workload in core/cell/wal_cell.h and harness/list.cc.
         c.workload.name =
             want_string(v, w, {"emit_message", "simple_update", "tpcb_like", "savepoints"});
       }},
      {"workload", "record_size",
       [](CellSpec& c, const OJson& v, const Where& w) { c.workload.record_size = parse_size(v, w); }},
      {"workload", "transactional",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.workload.transactional = want_bool(v, w);
       }},
      {"workload", "client_overhead_us",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.workload.client_overhead_us = want_number(v, w, 0, false, 1e7);
       }},
      {"workload", "payload_ns_per_byte",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.workload.payload_ns_per_byte = want_number(v, w, 0, false, 1e6);
       }},
      {"workload", "driver_us",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.workload.driver_us = want_number(v, w, 0, false, 1e7);
       }},
      {"workload", "client_overhead_jitter",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.workload.client_overhead_jitter = want_number(v, w, 0, false, 1);
       }},
      {"workload", "full_page_writes",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.workload.full_page_writes = want_bool(v, w);
       }},
      {"workload", "checkpoint_timeout_s",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.workload.checkpoint_timeout_s = want_number(v, w, 0, true, 86400);
       }},
      {"workload", "tables",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.workload.unlogged_tables = want_string(v, w, {"permanent", "unlogged"}) == "unlogged";
       }},
      {"workload", "scale",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.workload.scale = static_cast<uint32_t>(want_int(v, w, 1, 100000));
       }},
      {"clog", "strategy",
       [](CellSpec& c, const OJson& v, const Where& w) { parse_clog_strategy(c.clog, v, w); }},
      {"clog", "clog_buffers",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.clog.clog_buffers = static_cast<uint32_t>(want_int(v, w, 4, 16384));
       }},
      {"clog", "page_size",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.clog.page_size = static_cast<uint32_t>(want_int(v, w, 1024, 32768, true));
       }},
      {"clog", "hint_bit_miss",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.clog.hint_bit_miss = want_number(v, w, 0, false, 1);
       }},
      {"clog", "procarray",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.clog.procarray = want_string(v, w, {"off", "exclusive", "group_clear"});
       }},
      {"clog", "snapshot",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.clog.snapshot = want_string(v, w, {"pgxact", "dense"});
       }},
      {"clog", "xid_locks",
       [](CellSpec& c, const OJson& v, const Where& w) { c.clog.xid_locks = want_bool(v, w); }},
      {"clog", "snapshots_per_statement",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.clog.snapshots_per_statement = static_cast<uint32_t>(want_int(v, w, 1, 2));
       }},
      {"clog", "lookup_xids",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.clog.lookup_xids = want_string(v, w, {"run", "pgbench_pages"});
       }},
      {"clog", "xid_history",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.clog.xid_history = static_cast<uint32_t>(want_int(v, w, 0, 1000000000));
       }},
      {"run", "duration_s",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.run.duration_s = want_number(v, w, 0, true, 1e6);
       }},
      {"run", "warmup_s",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.run.warmup_s = want_number(v, w, 0, false, 1e6);
       }},
      {"run", "repetitions",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.run.repetitions = static_cast<uint32_t>(want_int(v, w, 1, 1000));
       }},
      {"run", "seed",
       [](CellSpec& c, const OJson& v, const Where& w) { c.run.seed = want_uint64(v, w); }},
      {"run", "progress_interval_s",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.run.progress_interval_s = want_number(v, w, 0, false, 1e6);
       }},
      {"run", "verify",
       [](CellSpec& c, const OJson& v, const Where& w) { c.run.verify = want_bool(v, w); }},
      {"run", "watchdog_s",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.run.watchdog_s = want_number(v, w, 0, false, 1e6);
       }},
      {"run", "interleave",
       [](CellSpec& c, const OJson& v, const Where& w) { c.run.interleave = want_bool(v, w); }},
      {"run", "min_txns_per_client",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.run.min_txns_per_client = static_cast<uint32_t>(want_int(v, w, 0, kMaxU31));
       }},
      {"run", "max_window_s",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.run.max_window_s = want_number(v, w, 0, false, 1e6);
       }},
      {"run", "trend_warn_pct",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.run.trend_warn_pct = want_number(v, w, 0, false, 1e6);
       }},
  };
  return defs;
}

const char* const kVariantExpected =
    "a strategy name or an object {\"name\": ..., \"label\": ..., \"params\": {...}}";

std::vector<std::string> section_keys(const std::string& section) {
  std::vector<std::string> keys;
  for (const auto& f : field_defs())
    if (section == f.section) keys.push_back(f.key);
  return keys;
}

const FieldDef* find_field(const std::string& dotted) {
  for (const auto& f : field_defs())
    if (dotted == std::string(f.section) + "." + f.key) return &f;
  return nullptr;
}

std::vector<std::string> strategy_names() {
  std::vector<std::string> names;
  for (const auto& s : strategies()) names.push_back(s.name);
  return names;
}

std::vector<std::string> sim_param_keys() {
  std::vector<std::string> keys;
  for (const std::string& k : SimConfig::json_keys())
    if (k != "kind" && k != "preset_file" && find_field(kPlatformPrefix + k) == nullptr)
      keys.push_back(k);
  return keys;
}

bool is_sim_param(const std::string& key) {
  const auto keys = sim_param_keys();
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

std::vector<std::string> settable_paths() {
  std::vector<std::string> keys;
  for (const auto& f : field_defs()) keys.push_back(std::string(f.section) + "." + f.key);
  for (const auto& k : sim_param_keys()) keys.push_back(kPlatformPrefix + k);
  std::set<std::string> params;
  for (const auto& s : strategies())
    for (const auto& p : s.params) params.insert(p.name);
  for (const auto& p : params) keys.push_back(kParamsPrefix + p);
  return keys;
}

// Every key a matrix may hold (for "did you mean").
std::vector<std::string> matrix_keys() {
  std::vector<std::string> keys = {"strategy", kVariantsKey, "clients"};
  for (const auto& k : settable_paths()) keys.push_back(k);
  return keys;
}

std::string want_label(const OJson& v, const Where& w) {
  const std::string label = want_string(v, w);
  const bool bad = label.empty() || label.size() > 64 ||
                   std::any_of(label.begin(), label.end(), [](char c) {
                     return std::isspace(static_cast<unsigned char>(c)) ||
                            std::iscntrl(static_cast<unsigned char>(c));
                   });
  if (bad) fail(w, show(v) + " is not a usable label", "1..64 characters without spaces");
  return label;
}

// ---------------------------------------------------------------------------------------------
// Strategy variants and their parameters

std::string param_expected(const ParamSpec& p) {
  using T = ParamSpec::Type;
  const bool ranged = !(p.min == 0 && p.max == 0);
  switch (p.type) {
    case T::kInt:
      if (!ranged) return "an integer";
      return absl::StrFormat("%s in %s..%s", p.power_of_two ? "a power of two" : "an integer",
                             fmt_num(p.min), fmt_num(p.max));
    case T::kDouble:
      return ranged ? "a number in " + fmt_num(p.min) + ".." + fmt_num(p.max) : "a number";
    case T::kBool:
      return "true or false";
    case T::kString:
      return p.choices.empty() ? "a string" : "one of " + quoted_list(p.choices);
  }
  return "a value";
}

// Checks one parameter value against its ParamSpec; returns it as stored in strategy_params.
nlohmann::json check_param(const ParamSpec& p, const OJson& v, const Where& w) {
  using T = ParamSpec::Type;
  const bool ranged = !(p.min == 0 && p.max == 0);
  const std::string expected = param_expected(p);
  switch (p.type) {
    case T::kInt: {
      if (!v.is_number_integer()) fail(w, found(v), expected);
      if (v.is_number_unsigned() &&
          v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        fail(w, show(v) + " is out of range", expected);
      const int64_t x = v.get<int64_t>();
      if (ranged && (static_cast<double>(x) < p.min || static_cast<double>(x) > p.max))
        fail(w, show(v) + " is out of range", expected);
      if (p.power_of_two && (x <= 0 || (x & (x - 1)) != 0))
        fail(w, show(v) + " is not a power of two", expected);
      return x;
    }
    case T::kDouble: {
      if (!v.is_number()) fail(w, found(v), expected);
      const double x = v.get<double>();
      if (ranged && (x < p.min || x > p.max)) fail(w, show(v) + " is out of range", expected);
      return x;
    }
    case T::kBool:
      if (!v.is_boolean()) fail(w, found(v), expected);
      return v.get<bool>();
    case T::kString: {
      if (!v.is_string()) fail(w, found(v), expected);
      const std::string s = v.get<std::string>();
      if (!p.choices.empty() && std::find(p.choices.begin(), p.choices.end(), s) == p.choices.end())
        fail(w, show(v) + " is not a valid choice", expected, closest_match(s, p.choices));
      return s;
    }
  }
  return nullptr;
}

const ParamSpec* find_param(const StrategyInfo& info, const std::string& name) {
  for (const auto& p : info.params)
    if (p.name == name) return &p;
  return nullptr;
}

std::string param_names(const StrategyInfo& info) {
  if (info.params.empty()) return "no parameters (" + info.name + " takes none)";
  std::vector<std::string> names;
  for (const auto& p : info.params) names.push_back(p.name);
  return "one of " + absl::StrJoin(names, ", ");
}

[[noreturn]] void fail_unknown_param(const StrategyInfo& info, const std::string& name,
                                     const Where& w) {
  std::vector<std::string> names;
  for (const auto& p : info.params) names.push_back(p.name);
  fail(w, "strategy " + info.name + " has no parameter \"" + name + "\"", param_names(info),
       closest_match(name, names));
}

std::vector<std::string> clog_strategy_names() {
  std::vector<std::string> names;
  for (const auto& s : clog_strategies()) names.push_back(s.name);
  return names;
}

void parse_clog_strategy(ClogSpec& clog, const OJson& v, const Where& w) {
  const std::string expected = "a CLOG strategy name (" + absl::StrJoin(clog_strategy_names(), ", ") +
                               ") or {\"name\": ..., \"params\": {...}}";
  OJson obj = v;
  if (v.is_string()) obj = OJson{{"name", v}};
  if (!obj.is_object()) fail(w, found(v), expected);
  check_keys(obj, w, {"name", "params"});
  if (!obj.contains("name")) fail(w, "the CLOG strategy has no \"name\"", expected);
  const Where wn = v.is_string() ? w : w / "name";
  if (!obj["name"].is_string()) fail(wn, found(obj["name"]), expected);
  const std::string name = obj["name"].get<std::string>();
  const ClogStrategyInfo* info = find_clog_strategy(name);
  if (info == nullptr)
    fail(wn, "unknown CLOG strategy \"" + name + "\"",
         "one of " + absl::StrJoin(clog_strategy_names(), ", "),
         closest_match(name, clog_strategy_names()));
  clog.strategy = name;
  clog.params = nlohmann::json::object();
  std::vector<std::string> names;
  for (const auto& p : info->params) {
    clog.params[p.name] = p.default_value;
    names.push_back(p.name);
  }
  if (!obj.contains("params")) return;
  const Where wp = w / "params";
  const std::string what = info->params.empty()
                               ? "no parameters (" + name + " takes none)"
                               : "one of " + absl::StrJoin(names, ", ");
  check_object(obj["params"], wp, "an object of parameters: " + what);
  for (auto it = obj["params"].begin(); it != obj["params"].end(); ++it) {
    const ParamSpec* p = nullptr;
    for (const auto& q : info->params)
      if (q.name == it.key()) p = &q;
    if (p == nullptr)
      fail(wp / it.key(), "CLOG strategy " + name + " has no parameter \"" + it.key() + "\"",
           what, closest_match(it.key(), names));
    clog.params[p->name] = check_param(*p, it.value(), wp / it.key());
  }
}

Variant parse_variant(const OJson& v, const Where& w) {
  Variant out;
  out.where = w;
  OJson obj = v;
  if (v.is_string()) obj = OJson{{"name", v}};
  if (!obj.is_object()) fail(w, found(v), kVariantExpected);
  check_keys(obj, w, kVariantKeys);
  if (!obj.contains("name")) fail(w, "the strategy has no \"name\"", kVariantExpected);
  const Where wn = v.is_string() ? w : w / "name";
  if (!obj["name"].is_string())
    fail(wn, found(obj["name"]), "a strategy name: one of " + absl::StrJoin(strategy_names(), ", "));
  const std::string name = obj["name"].get<std::string>();
  out.info = find_strategy(name);
  if (out.info == nullptr)
    fail(wn, "unknown strategy \"" + name + "\"",
         "one of " + absl::StrJoin(strategy_names(), ", "),
         closest_match(name, strategy_names()));
  out.label = name;
  if (obj.contains("label")) {
    out.label = want_label(obj["label"], w / "label");
    out.label_given = true;
  }
  out.params = nlohmann::json::object();
  for (const auto& p : out.info->params) out.params[p.name] = p.default_value;
  if (obj.contains("params")) {
    const Where wp = w / "params";
    check_object(obj["params"], wp, "an object of parameters: " + param_names(*out.info));
    for (auto it = obj["params"].begin(); it != obj["params"].end(); ++it) {
      const ParamSpec* p = find_param(*out.info, it.key());
      if (p == nullptr) fail_unknown_param(*out.info, it.key(), wp / it.key());
      out.params[p->name] = check_param(*p, it.value(), wp / it.key());
      out.given.insert(p->name);
    }
  }
  return out;
}
}  // namespace walbench::config_internal

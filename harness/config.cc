// Config loading, validation, matrix expansion and --set overrides. configs/README.md is the
// user-facing reference for every key handled here; keep the two in step (and both in step with
// the defaults in harness/spec.h).
//
// Flow: load_config_file() parses (syntax, duplicate keys) -> apply_override() edits the JSON ->
// parse_plan() validates every key once, at its JSON path, into a Plan (base spec from the
// top-level sections, strategy variants, the matrix dimensions) -> expand() walks the cartesian
// product, resolves each cell and runs the cross-field checks, which name the JSON path that set
// the offending value.
#include "harness/config.h"

#include "core/platform/sim.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "strategies/strategy.h"

namespace walbench {

using OJson = nlohmann::ordered_json;

// ---------------------------------------------------------------------------------------------
// Errors

namespace {

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  return s;
}

std::string compose(const std::string& file, const std::string& json_path, int line, int column,
                    const std::string& problem, const std::string& expected,
                    const std::string& suggestion) {
  std::string s = file;
  if (line > 0) {
    s += absl::StrFormat(":%d:%d", line, column);
  } else if (!json_path.empty()) {
    s += ": " + json_path;
  }
  s += ": " + problem;
  if (!expected.empty()) s += "; expected " + expected;
  if (!suggestion.empty()) s += " (did you mean \"" + suggestion + "\"?)";
  return one_line(s);
}

}  // namespace

ConfigError::ConfigError(std::string file_, std::string json_path_, std::string problem_,
                         std::string expected_, std::string suggestion_)
    : std::runtime_error(
          compose(file_, json_path_, 0, 0, problem_, expected_, suggestion_)),
      file(std::move(file_)),
      json_path(std::move(json_path_)),
      problem(std::move(problem_)),
      expected(std::move(expected_)),
      suggestion(std::move(suggestion_)) {}

ConfigError ConfigError::syntax(std::string file, int line, int column, std::string problem,
                                std::string expected) {
  ConfigError e(file, "", problem, expected);
  e.line = line;
  e.column = column;
  // Rebuild what() with the position: runtime_error's message is immutable, so assign a fresh
  // base subobject.
  static_cast<std::runtime_error&>(e) =
      std::runtime_error(compose(file, "", line, column, problem, expected, ""));
  return e;
}

ConfigError ConfigError::with_file(std::string new_file) const {
  if (line > 0) return syntax(new_file, line, column, problem, expected);
  return ConfigError(std::move(new_file), json_path, problem, expected, suggestion);
}

// ---------------------------------------------------------------------------------------------
// "did you mean"

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Optimal string alignment distance (Levenshtein plus adjacent transpositions).
size_t edit_distance(const std::string& a, const std::string& b) {
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1));
  for (size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[n][m];
}

}  // namespace

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  const std::string w = lower(word);
  if (w.empty()) return "";
  // A dotted candidate whose last part is the word: "record_size" -> "workload.record_size".
  std::string suffix_hit;
  int suffix_hits = 0;
  for (const auto& c : candidates) {
    const std::string lc = lower(c);
    if (lc.size() > w.size() && lc.compare(lc.size() - w.size(), w.size(), w) == 0 &&
        lc[lc.size() - w.size() - 1] == '.') {
      suffix_hit = c;
      ++suffix_hits;
    }
  }
  if (suffix_hits == 1) return suffix_hit;

  std::string best;
  size_t best_d = std::numeric_limits<size_t>::max();
  for (const auto& c : candidates) {
    const size_t d = edit_distance(w, lower(c));
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  if (best.empty()) return "";
  const size_t len = std::min(w.size(), best.size());
  const size_t limit = std::max<size_t>(1, len / 3 + (len >= 4 ? 1 : 0));
  return best_d <= limit ? best : "";
}

// ---------------------------------------------------------------------------------------------
// Validation helpers

namespace {

std::string escape_pointer(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

// Where a value sits: the file (for messages) and its JSON Pointer.
struct Where {
  std::string file;
  std::string path;
  Where operator/(const std::string& key) const { return {file, path + "/" + escape_pointer(key)}; }
  Where operator/(size_t index) const { return {file, path + "/" + std::to_string(index)}; }
};

[[noreturn]] void fail(const Where& w, std::string problem, std::string expected,
                       std::string suggestion = "") {
  throw ConfigError(w.file, w.path, std::move(problem), std::move(expected),
                    std::move(suggestion));
}

// A value as it appears in a message: JSON for scalars (strings shortened), a word otherwise.
std::string show(const OJson& v) {
  if (v.is_object()) return "an object";
  if (v.is_array()) return "a list";
  std::string s = v.dump();
  if (s.size() > 48) s = s.substr(0, 44) + (v.is_string() ? "...\"" : "...");
  return s;
}

std::string kind_of(const OJson& v) {
  switch (v.type()) {
    case OJson::value_t::null: return "null";
    case OJson::value_t::object: return "an object";
    case OJson::value_t::array: return "a list";
    case OJson::value_t::string: return "a string";
    case OJson::value_t::boolean: return "a boolean";
    case OJson::value_t::number_integer:
    case OJson::value_t::number_unsigned: return "an integer";
    case OJson::value_t::number_float: return "a fractional number";
    default: return "an unsupported value";
  }
}

std::string found(const OJson& v) {
  if (v.is_null() || v.is_object() || v.is_array()) return "found " + kind_of(v);
  return "found " + kind_of(v) + " " + show(v);
}

std::string quoted_list(const std::vector<std::string>& xs) {
  std::vector<std::string> q;
  for (const auto& x : xs) q.push_back("\"" + x + "\"");
  return absl::StrJoin(q, ", ");
}

std::string fmt_num(double x) {
  if (x == std::floor(x) && std::fabs(x) < 1e15) return absl::StrFormat("%.0f", x);
  return absl::StrFormat("%g", x);
}

void check_object(const OJson& v, const Where& w, const std::string& expected) {
  if (!v.is_object()) fail(w, found(v), expected);
}

// Every key of `obj` must be in `allowed`.
void check_keys(const OJson& obj, const Where& w, const std::vector<std::string>& allowed) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (std::find(allowed.begin(), allowed.end(), it.key()) != allowed.end()) continue;
    fail(w / it.key(), "unknown key \"" + it.key() + "\"", "one of " + absl::StrJoin(allowed, ", "),
         closest_match(it.key(), allowed));
  }
}

int64_t want_int(const OJson& v, const Where& w, int64_t lo, int64_t hi, bool pow2 = false) {
  const std::string expected =
      absl::StrFormat("%s in %d..%d", pow2 ? "a power of two" : "an integer", lo, hi);
  if (!v.is_number_integer()) fail(w, found(v), expected);
  if (v.is_number_unsigned() &&
      v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    fail(w, show(v) + " is out of range", expected);
  const int64_t x = v.get<int64_t>();
  if (x < lo || x > hi) fail(w, show(v) + " is out of range", expected);
  if (pow2 && (x & (x - 1)) != 0) fail(w, show(v) + " is not a power of two", expected);
  return x;
}

uint64_t want_uint64(const OJson& v, const Where& w) {
  const std::string expected = "a non-negative integer below 2^64";
  if (!v.is_number_integer()) fail(w, found(v), expected);
  if (!v.is_number_unsigned() && v.get<int64_t>() < 0)
    fail(w, show(v) + " is out of range", expected);
  return v.get<uint64_t>();
}

// A number in [lo, hi], or in (lo, hi] when lo is exclusive.
double want_number(const OJson& v, const Where& w, double lo, bool lo_exclusive, double hi) {
  const std::string expected =
      lo_exclusive ? "a number > " + fmt_num(lo) + " and <= " + fmt_num(hi)
                   : "a number in " + fmt_num(lo) + ".." + fmt_num(hi);
  if (!v.is_number()) fail(w, found(v), expected);
  const double x = v.get<double>();
  if (!(lo_exclusive ? x > lo : x >= lo) || !(x <= hi))
    fail(w, show(v) + " is out of range", expected);
  return x;
}

bool want_bool(const OJson& v, const Where& w) {
  if (!v.is_boolean()) fail(w, found(v), "true or false");
  return v.get<bool>();
}

std::string want_string(const OJson& v, const Where& w,
                        const std::vector<std::string>& choices = {}) {
  const std::string expected =
      choices.empty() ? "a string" : (choices.size() == 1 ? "\"" + choices[0] + "\""
                                                          : "one of " + quoted_list(choices));
  if (!v.is_string()) fail(w, found(v), expected);
  std::string s = v.get<std::string>();
  if (!choices.empty() && std::find(choices.begin(), choices.end(), s) == choices.end())
    fail(w, show(v) + " is not a valid choice", expected, closest_match(s, choices));
  return s;
}

// ---------------------------------------------------------------------------------------------
// Record sizes

constexpr int64_t kMaxMessage = int64_t{1} << 30;  // 1 GiB: message length limit
const char* const kSizeExpected =
    "a message length in bytes (1..1073741824), {\"dist\": \"uniform\", \"min\": a, \"max\": b} "
    "or {\"dist\": \"exponential\", \"mean\": m, \"min\": a, \"max\": b}";

SizeSpec parse_size(const OJson& v, const Where& w) {
  SizeSpec s;
  if (v.is_number_integer()) {
    s.kind = SizeSpec::Kind::kFixed;
    s.value = static_cast<uint32_t>(want_int(v, w, 1, kMaxMessage));
    return s;
  }
  if (!v.is_object()) fail(w, found(v), kSizeExpected);
  check_keys(v, w, {"dist", "min", "max", "mean"});
  if (!v.contains("dist")) fail(w, "the size object has no \"dist\"", kSizeExpected);
  const std::string dist = want_string(v["dist"], w / "dist", {"uniform", "exponential"});
  if (dist == "uniform") {
    s.kind = SizeSpec::Kind::kUniform;
    for (const char* k : {"min", "max"})
      if (!v.contains(k))
        fail(w, absl::StrFormat("a uniform size needs \"%s\"", k),
             "{\"dist\": \"uniform\", \"min\": a, \"max\": b}");
    if (v.contains("mean"))
      fail(w / "mean", "\"mean\" belongs to an exponential size",
           "{\"dist\": \"uniform\", \"min\": a, \"max\": b}");
    s.min = static_cast<uint32_t>(want_int(v["min"], w / "min", 1, kMaxMessage));
    s.max = static_cast<uint32_t>(want_int(v["max"], w / "max", 1, kMaxMessage));
  } else {
    s.kind = SizeSpec::Kind::kExponential;
    if (!v.contains("mean"))
      fail(w, "an exponential size needs \"mean\"",
           "{\"dist\": \"exponential\", \"mean\": m, \"min\": a, \"max\": b}");
    s.mean = want_number(v["mean"], w / "mean", 0, true, static_cast<double>(kMaxMessage));
    s.min = v.contains("min") ? static_cast<uint32_t>(want_int(v["min"], w / "min", 1, kMaxMessage))
                              : 1;
    s.max = v.contains("max") ? static_cast<uint32_t>(want_int(v["max"], w / "max", 1, kMaxMessage))
                              : static_cast<uint32_t>(kMaxMessage);
  }
  if (s.max < s.min)
    fail(w / "max", absl::StrFormat("max %u is below min %u", s.max, s.min), "max >= min");
  return s;
}

// ---------------------------------------------------------------------------------------------
// The fields of the top-level sections. NB: must match the structs in harness/spec.h and the
// tables in configs/README.md.

using Apply = void (*)(CellSpec&, const OJson&, const Where&);
// clog.strategy: a name or {"name": ..., "params": {...}} (defined with the strategy variants).
void parse_clog_strategy(ClogSpec& clog, const OJson& v, const Where& w);
struct FieldDef {
  const char* section;
  const char* key;
  Apply apply;
};

constexpr int64_t kMaxU31 = std::numeric_limits<int32_t>::max();

const std::vector<FieldDef>& field_defs() {
  static const std::vector<FieldDef> defs = {
      {"platform", "kind",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.platform.kind = want_string(v, w, {"threads", "sim"});
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
         // NB: must match parse_workload in harness/wal_cell.h and harness/list.cc.
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
      {"workload", "client_overhead_jitter",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.workload.client_overhead_jitter = want_number(v, w, 0, false, 1);
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
      {"run", "trend_warn_pct",
       [](CellSpec& c, const OJson& v, const Where& w) {
         c.run.trend_warn_pct = want_number(v, w, 0, false, 1e6);
       }},
  };
  return defs;
}

const std::vector<std::string> kSections = {"platform", "wal", "commit", "workload", "clog", "run"};
const std::vector<std::string> kTopKeys = {"description", "platform", "wal",      "commit",
                                           "workload",    "clog",     "run",      "strategy",
                                           "matrix",      "fitted"};
const std::vector<std::string> kVariantKeys = {"name", "label", "params"};
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

// Every key a matrix may hold (for "did you mean").
std::vector<std::string> matrix_keys() {
  std::vector<std::string> keys = {"strategy", "clients"};
  for (const auto& f : field_defs()) keys.push_back(std::string(f.section) + "." + f.key);
  std::set<std::string> params;
  for (const auto& s : strategies())
    for (const auto& p : s.params) params.insert(p.name);
  for (const auto& p : params) keys.push_back("strategy.params." + p);
  return keys;
}

const std::string kParamsPrefix = "strategy.params.";

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

struct Variant {
  const StrategyInfo* info = nullptr;
  std::string label;
  nlohmann::json params;        // defaults filled in, explicit values applied
  std::set<std::string> given;  // parameters the variant sets itself
  Where where;                  // of the variant
  bool label_given = false;
};

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
    const Where wl = w / "label";
    const std::string label = want_string(obj["label"], wl);
    const bool bad = label.empty() || label.size() > 64 ||
                     std::any_of(label.begin(), label.end(), [](char c) {
                       return std::isspace(static_cast<unsigned char>(c)) ||
                              std::iscntrl(static_cast<unsigned char>(c));
                     });
    if (bad) fail(wl, show(obj["label"]) + " is not a usable label",
                  "1..64 characters without spaces");
    out.label = label;
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

// ---------------------------------------------------------------------------------------------
// The plan: everything validated, nothing expanded yet

struct Dim {
  std::string key;              // matrix key: "workload.record_size", "strategy.params.num_locks"
  std::vector<OJson> values;
  Where where;                  // of the matrix entry
  bool is_list = false;         // written as a list (paths then end in the item index)
  const FieldDef* field = nullptr;  // section fields; nullptr for strategy.params.*
  Where item(size_t i) const { return is_list ? where / i : where; }
};

struct Plan {
  CellSpec base;
  std::map<std::string, std::string> sources;  // "wal.page_size" -> "/wal/page_size"
  std::vector<Variant> variants;
  bool variants_from_matrix = false;
  std::vector<int64_t> clients = {1};
  bool clients_from_matrix = false;
  Where clients_where;
  std::vector<Dim> dims;  // other matrix keys, in file order
  std::string file;
};

// A matrix entry as a non-empty list without duplicates (a scalar is a one-element list).
std::vector<OJson> as_list(const OJson& v, const Where& w) {
  std::vector<OJson> out;
  if (v.is_array()) {
    for (const auto& x : v) out.push_back(x);
    if (out.empty()) fail(w, "the list is empty", "at least one value");
  } else {
    out.push_back(v);
  }
  for (size_t i = 1; i < out.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (out[i] == out[j])
        fail(v.is_array() ? w / i : w,
             absl::StrFormat("%s repeats item %d", show(out[i]), j),
             "each value once (a repeated value would run identical cells)");
  return out;
}

// platform {"kind": "sim", ...}: the platform fields, then every other key is a simulated
// machine parameter, checked (with "did you mean") by SimConfig::from_json.
void parse_sim_platform(PlatformSpec& p, const OJson& v, const Where& w,
                        const std::vector<std::string>& platform_keys) {
  nlohmann::json sim = nlohmann::json::object();
  for (auto it = v.begin(); it != v.end(); ++it) {
    const bool platform_field =
        std::find(platform_keys.begin(), platform_keys.end(), it.key()) != platform_keys.end();
    if (platform_field && it.key() != "kind") {
      CellSpec tmp;
      find_field("platform." + it.key())->apply(tmp, it.value(), w / it.key());
      if (it.key() == "atomics") p.atomics = tmp.platform.atomics;
      if (it.key() == "spinlocks") p.spinlocks = tmp.platform.spinlocks;
    } else if (!platform_field) {
      sim[it.key()] = nlohmann::json(it.value());
    }
  }
  try {
    nlohmann::json whole = sim;
    whole["kind"] = "sim";
    (void)SimConfig::from_json(whole, w.path);
  } catch (const std::exception& e) {
    // SimConfig's messages start with the key's pointer ("/platform/cores: must be ...", or
    // "/platform/preset: presets/x.json: /cores: ..." for a preset file): report that pointer
    // as the error's JSON path, so a --set that put the value there is named.
    std::string msg = e.what();
    Where at = w;
    const size_t colon = msg.find(": ");
    if (msg.rfind(w.path + "/", 0) == 0 && colon != std::string::npos) {
      at.path = msg.substr(0, colon);
      msg = msg.substr(colon + 2);
    }
    fail(at, msg, "simulated machine parameters (configs/README.md, platform \"sim\")");
  }
  p.kind = "sim";
  p.sim = std::move(sim);
}

// "fitted": the reference points a config took values from (harness/fidelity.h): a list of
// objects, each a "reason" and the reference-table columns it selects ("clients": 1 selects
// every 1-client row; "variant", "record_size", ... narrow it). `compare --reference` shows
// these points but does not score them.
const char* const kFittedExpected =
    "a list of objects {\"reason\": \"...\", COLUMN: VALUE, ...} naming the reference points "
    "the config was fitted to (COLUMN: variant, clients or another column of the reference table)";

void check_fitted(const OJson& v, const Where& w) {
  if (!v.is_array()) fail(w, found(v), kFittedExpected);
  for (size_t i = 0; i < v.size(); ++i) {
    const OJson& e = v[i];
    const Where we = w / i;
    check_object(e, we, kFittedExpected);
    if (!e.contains("reason")) fail(we, "the entry has no \"reason\"", kFittedExpected);
    want_string(e["reason"], we / "reason");
    if (e.size() < 2) fail(we, "the entry selects no column", kFittedExpected);
    for (auto it = e.begin(); it != e.end(); ++it) {
      if (it.key() == "reason") continue;
      if (!(it.value().is_string() || it.value().is_number()))
        fail(we / it.key(), found(it.value()), "a string or a number (a value of that column)");
    }
  }
}

Plan parse_plan(const OJson& config, const std::string& file) {
  Plan plan;
  plan.file = file;
  const Where root{file, ""};
  if (!config.is_object())
    fail(root, "the config is " + kind_of(config),
         "a JSON object with keys " + absl::StrJoin(kTopKeys, ", "));
  check_keys(config, root, kTopKeys);

  if (config.contains("description")) want_string(config["description"], root / "description");
  if (config.contains("fitted")) check_fitted(config["fitted"], root / "fitted");

  // Top-level sections over the spec.h defaults.
  for (const auto& section : kSections) {
    if (!config.contains(section)) continue;
    const Where ws = root / section;
    const std::vector<std::string> keys = section_keys(section);
    check_object(config[section], ws, "an object with keys " + absl::StrJoin(keys, ", "));
    if (section == "platform" && config[section].contains("kind") &&
        config[section]["kind"] == "sim") {
      parse_sim_platform(plan.base.platform, config[section], ws, keys);
      continue;
    }
    check_keys(config[section], ws, keys);
    for (auto it = config[section].begin(); it != config[section].end(); ++it) {
      const FieldDef* f = find_field(section + "." + it.key());
      f->apply(plan.base, it.value(), ws / it.key());
      plan.sources[section + "." + it.key()] = (ws / it.key()).path;
    }
  }

  std::vector<Variant> top_variant;
  if (config.contains("strategy"))
    top_variant.push_back(parse_variant(config["strategy"], root / "strategy"));

  // The matrix, key by key in file order.
  std::vector<std::pair<std::string, Where>> param_keys;  // checked once variants are known
  if (config.contains("matrix")) {
    const Where wm = root / "matrix";
    const OJson& m = config["matrix"];
    check_object(m, wm,
                 "an object whose keys are strategy, clients or dotted parameter paths such as "
                 "workload.record_size");
    for (auto it = m.begin(); it != m.end(); ++it) {
      const std::string& key = it.key();
      const Where wk = wm / key;
      if (key == "strategy") {
        const std::vector<OJson> list = as_list(it.value(), wk);
        for (size_t i = 0; i < list.size(); ++i)
          plan.variants.push_back(parse_variant(list[i], it.value().is_array() ? wk / i : wk));
        plan.variants_from_matrix = true;
      } else if (key == "clients") {
        const std::vector<OJson> list = as_list(it.value(), wk);
        plan.clients.clear();
        for (size_t i = 0; i < list.size(); ++i)
          plan.clients.push_back(
              want_int(list[i], it.value().is_array() ? wk / i : wk, 1, 65535));
        plan.clients_from_matrix = true;
        plan.clients_where = wk;
      } else if (const FieldDef* f = find_field(key)) {
        Dim d{key, as_list(it.value(), wk), wk, it.value().is_array(), f};
        CellSpec scratch;
        for (size_t i = 0; i < d.values.size(); ++i) f->apply(scratch, d.values[i], d.item(i));
        plan.dims.push_back(std::move(d));
      } else if (key.rfind(kParamsPrefix, 0) == 0 && key.size() > kParamsPrefix.size()) {
        plan.dims.push_back(Dim{key, as_list(it.value(), wk), wk, it.value().is_array(), nullptr});
        param_keys.emplace_back(key, wk);
      } else {
        fail(wk, "unknown matrix key \"" + key + "\"",
             "strategy, clients, a section field such as workload.record_size or "
             "wal.wal_buffers, or strategy.params.<name>",
             closest_match(key, matrix_keys()));
      }
    }
  }

  // One place for the strategy, so that a --set on the other one cannot be silently ignored.
  if (plan.variants_from_matrix && !top_variant.empty())
    fail(root / "strategy", "both /strategy and /matrix/strategy are given",
         "one of them: /strategy for a single variant, /matrix/strategy for a list");
  if (!plan.variants_from_matrix) plan.variants = top_variant;
  if (plan.variants.empty())
    fail(root, "no strategy given",
         "\"strategy\": {\"name\": ...} or \"matrix\": {\"strategy\": [...]} (strategies: " +
             absl::StrJoin(strategy_names(), ", ") + ")");

  // Labels name report rows: they must tell the variants apart.
  for (size_t i = 0; i < plan.variants.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (plan.variants[i].label == plan.variants[j].label) {
        const Variant& v = plan.variants[i];
        fail(v.label_given ? v.where / "label" : v.where,
             absl::StrFormat("duplicate label \"%s\" (variant %d has it too)", v.label, j),
             "a distinct \"label\" for each variant");
      }

  // strategy.params.<name>: every variant must have the parameter, and not set it itself.
  for (const auto& d : plan.dims) {
    if (d.field != nullptr) continue;
    const std::string name = d.key.substr(kParamsPrefix.size());
    for (const auto& v : plan.variants) {
      const ParamSpec* p = find_param(*v.info, name);
      if (p == nullptr) {
        std::vector<std::string> names;
        for (const auto& q : v.info->params) names.push_back(q.name);
        const std::string hint = closest_match(name, names);
        fail(d.where,
             "variant \"" + v.label + "\" (strategy " + v.info->name + ") has no parameter \"" +
                 name + "\"",
             "a parameter of every variant: " + param_names(*v.info),
             hint.empty() ? "" : kParamsPrefix + hint);
      }
      if (plan.variants_from_matrix && v.given.count(name) != 0)
        fail(v.where / "params" / name,
             "\"" + name + "\" is set here and by " + d.where.path,
             "one place for it: drop it here or there");
      for (size_t i = 0; i < d.values.size(); ++i) check_param(*p, d.values[i], d.item(i));
    }
  }
  return plan;
}

size_t cell_count(const Plan& plan) {
  size_t n = plan.variants.size() * plan.clients.size();
  for (const auto& d : plan.dims) {
    if (n > 1000000 / d.values.size())
      fail(Where{plan.file, "/matrix"}, "the matrix has more than 1000000 cells",
           "a smaller matrix (split it into several configs)");
    n *= d.values.size();
  }
  if (n > 1000000)
    fail(Where{plan.file, "/matrix"}, "the matrix has more than 1000000 cells",
         "a smaller matrix (split it into several configs)");
  return n;
}

// Cross-field checks on one resolved cell. Each names the path that set the value it blames.
void check_cell(const CellSpec& c, const std::map<std::string, std::string>& src,
                const std::string& file) {
  auto from = [&](const std::string& field) -> std::string {
    auto it = src.find(field);
    return it == src.end() ? "" : it->second;
  };
  auto blame = [&](const std::string& first, const std::string& second) -> Where {
    std::string p = from(first);
    if (p.empty()) p = from(second);
    return Where{file, p};
  };
  auto origin = [&](const std::string& field) {
    const std::string p = from(field);
    return p.empty() ? std::string(" (default)") : " (from " + p + ")";
  };
  if (c.wal.segment_size < 2ull * c.wal.page_size)
    fail(blame("wal.segment_size", "wal.page_size"),
         absl::StrFormat("segment_size %d is less than two pages of %d bytes%s", c.wal.segment_size,
                         c.wal.page_size, origin("wal.page_size")),
         "segment_size >= 2 x page_size");
  if (static_cast<uint64_t>(c.wal.wal_buffers) * c.wal.page_size >
      static_cast<uint64_t>(kMaxU31))
    fail(blame("wal.wal_buffers", "wal.page_size"),
         absl::StrFormat("%d buffers of %d bytes%s exceed 2 GiB", c.wal.wal_buffers,
                         c.wal.page_size, origin("wal.page_size")),
         absl::StrFormat("wal_buffers <= %d for this page_size (PostgreSQL's limit)",
                         kMaxU31 / c.wal.page_size));
  if (c.wal.storage == "file" && c.wal.path.empty())
    fail(blame("wal.path", "wal.storage"), "storage \"file\" needs a directory in wal.path",
         "\"wal\": {\"storage\": \"file\", \"path\": \"/some/dir\"}");
  if (!c.workload.transactional && c.workload.name != "emit_message")
    fail(blame("workload.transactional", "workload.name"),
         "workload " + c.workload.name + " is always transactional" + origin("workload.name"),
         "\"transactional\": false only with emit_message");
}

std::vector<CellSpec> expand(const Plan& plan) {
  const size_t total = cell_count(plan);
  std::vector<size_t> sizes = {plan.variants.size(), plan.clients.size()};
  for (const auto& d : plan.dims) sizes.push_back(d.values.size());

  std::vector<CellSpec> cells;
  cells.reserve(total);
  std::vector<size_t> at(sizes.size(), 0);  // odometer; the last dimension turns fastest
  for (size_t n = 0; n < total; ++n) {
    CellSpec c = plan.base;
    auto src = plan.sources;
    c.index = n;
    c.total = total;
    c.matrix_values = nlohmann::json::object();

    const Variant& v = plan.variants[at[0]];
    c.strategy = v.info->name;
    c.label = v.label;
    c.strategy_params = v.params;
    if (sizes[0] > 1) c.matrix_values["strategy"] = v.label;

    c.clients = static_cast<uint32_t>(plan.clients[at[1]]);
    if (sizes[1] > 1) c.matrix_values["clients"] = c.clients;

    for (size_t k = 0; k < plan.dims.size(); ++k) {
      const Dim& d = plan.dims[k];
      const size_t i = at[k + 2];
      const Where w = d.item(i);
      if (d.field != nullptr) {
        d.field->apply(c, d.values[i], w);
        src[d.key] = w.path;
      } else {
        c.strategy_params[d.key.substr(kParamsPrefix.size())] = nlohmann::json(d.values[i]);
      }
      if (d.values.size() > 1) c.matrix_values[d.key] = nlohmann::json(d.values[i]);
    }
    check_cell(c, src, plan.file);
    cells.push_back(std::move(c));

    for (size_t k = sizes.size(); k-- > 0;) {
      if (++at[k] < sizes[k]) break;
      at[k] = 0;
    }
  }
  return cells;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Public entry points

nlohmann::ordered_json load_config_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw ConfigError(path, "", "is a directory", "a JSON config file");
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    throw ConfigError(path, "", std::string("cannot read the file (") + std::strerror(err) + ")",
                      "a readable JSON config file");
  }
  std::ostringstream buf;
  buf << in.rdbuf();
  const std::string text = buf.str();

  // Duplicate keys: nlohmann keeps the last silently; we refuse them.
  struct Frame {
    explicit Frame(bool is_array) : array(is_array) {}
    bool array;
    size_t index = 0;
    std::string key;
    std::set<std::string> keys;
  };
  std::vector<Frame> stack;
  std::string dup_path, dup_key;
  auto path_of = [&] {
    std::string p;
    for (const auto& f : stack) p += "/" + (f.array ? std::to_string(f.index) : escape_pointer(f.key));
    return p;
  };
  using E = nlohmann::ordered_json::parse_event_t;
  auto callback = [&](int /*depth*/, E event, OJson& parsed) -> bool {
    switch (event) {
      case E::object_start: stack.emplace_back(false); break;
      case E::array_start: stack.emplace_back(true); break;
      case E::key: {
        Frame& f = stack.back();
        f.key = parsed.get<std::string>();
        if (!f.keys.insert(f.key).second && dup_path.empty()) {
          dup_path = path_of();
          dup_key = f.key;
        }
        break;
      }
      case E::object_end:
      case E::array_end:
        stack.pop_back();
        if (!stack.empty() && stack.back().array) ++stack.back().index;
        break;
      case E::value:
        if (!stack.empty() && stack.back().array) ++stack.back().index;
        break;
    }
    return true;
  };

  OJson config;
  try {
    config = OJson::parse(text, callback, /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte is the 1-based index of the last character read (size+1 at end of input), so the
    // position is the end of the offending token, as in nlohmann's own message.
    const size_t at = std::min<size_t>(e.byte == 0 ? 0 : e.byte - 1, text.size());
    int line = 1;
    size_t line_start = 0;
    for (size_t i = 0; i < at; ++i)
      if (text[i] == '\n') {
        ++line;
        line_start = i + 1;
      }
    const int column = static_cast<int>(at - line_start) + 1;
    // "[json.exception.parse_error.101] parse error at line 3, column 5: syntax error while
    // parsing object - unexpected '}'; expected string literal" -> the part after "column N: ".
    std::string detail = e.what();
    const size_t colon = detail.find(": ", detail.find("parse error"));
    if (colon != std::string::npos) detail = detail.substr(colon + 2);
    std::string expected = "valid JSON (no comments, no trailing commas)";
    const size_t exp = detail.find("; expected ");
    if (exp != std::string::npos) {
      expected = detail.substr(exp + 11) + " (valid JSON: no comments, no trailing commas)";
      detail = detail.substr(0, exp);
    }
    if (text.find_first_not_of(" \t\r\n") == std::string::npos)
      throw ConfigError(path, "", "the file is empty", "a JSON object");
    throw ConfigError::syntax(path, line, column, detail, expected);
  }
  if (!dup_path.empty())
    throw ConfigError(path, dup_path, "duplicate key \"" + dup_key + "\"",
                      "each key once per object (JSON parsers keep only one of them)");
  if (!config.is_object())
    throw ConfigError(path, "", "the config is " + kind_of(config),
                      "a JSON object with keys " + absl::StrJoin(kTopKeys, ", "));
  return config;
}

void apply_override(nlohmann::ordered_json& config, const std::string& assignment) {
  const std::string arg = "--set " + assignment;
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw ConfigError(arg, "", "not an assignment",
                      "PATH=VALUE with a dotted PATH, e.g. --set run.duration_s=2");
  const std::string path = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  std::vector<std::string> parts = absl::StrSplit(path, '.');
  for (const auto& p : parts)
    if (p.empty())
      throw ConfigError(arg, "", "\"" + path + "\" has an empty part",
                        "a dotted PATH such as run.duration_s or matrix.clients");

  // Check the path against the schema, so a typo gets its "did you mean" here.
  auto unknown = [&](const std::string& key, const std::vector<std::string>& allowed,
                     const std::string& where) {
    throw ConfigError(arg, where, "unknown key \"" + key + "\"",
                      "one of " + absl::StrJoin(allowed, ", "), closest_match(key, allowed));
  };
  std::vector<std::string> keys;  // object keys from the root to the value
  const std::string& top = parts[0];
  if (std::find(kTopKeys.begin(), kTopKeys.end(), top) == kTopKeys.end())
    unknown(top, kTopKeys, "/" + escape_pointer(top));
  keys.push_back(top);
  if (top == "matrix") {
    if (parts.size() > 1) {
      const std::string mkey = path.substr(std::string("matrix.").size());
      const auto allowed = matrix_keys();
      const bool params = mkey.rfind(kParamsPrefix, 0) == 0 && mkey.size() > kParamsPrefix.size();
      if (!params && std::find(allowed.begin(), allowed.end(), mkey) == allowed.end())
        throw ConfigError(arg, "/matrix/" + escape_pointer(mkey),
                          "unknown matrix key \"" + mkey + "\"",
                          "strategy, clients, a section field such as workload.record_size, or "
                          "strategy.params.<name>",
                          closest_match(mkey, allowed));
      keys.push_back(mkey);
    }
  } else if (top == "strategy") {
    if (parts.size() > 1) {
      if (std::find(kVariantKeys.begin(), kVariantKeys.end(), parts[1]) == kVariantKeys.end())
        unknown(parts[1], kVariantKeys, "/strategy/" + escape_pointer(parts[1]));
      if (parts.size() > (parts[1] == "params" ? 3u : 2u))
        throw ConfigError(arg, "", "\"" + path + "\" is too deep",
                          "strategy.name, strategy.label or strategy.params.<name>");
    }
    keys.insert(keys.end(), parts.begin() + 1, parts.end());
  } else if (top == "description" || top == "fitted") {
    if (parts.size() > 1)
      throw ConfigError(arg, "", "\"" + top + "\" has no sub-keys",
                        "--set " + top + "=" + (top == "fitted" ? "[...]" : "TEXT"));
  } else {  // a section
    if (parts.size() > 1) {
      auto allowed = section_keys(top);
      if (top == "platform")  // the simulated machine's keys (checked again when parsed)
        for (const std::string& k : SimConfig::json_keys())
          if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) allowed.push_back(k);
      if (std::find(allowed.begin(), allowed.end(), parts[1]) == allowed.end())
        unknown(parts[1], allowed, "/" + top + "/" + escape_pointer(parts[1]));
      const bool size_part = top == "workload" && parts[1] == "record_size" && parts.size() == 3;
      if (parts.size() > 2 && !size_part)
        throw ConfigError(arg, "", "\"" + path + "\" is too deep",
                          "SECTION.KEY such as " + top + "." + allowed[0]);
      if (size_part) {
        const std::vector<std::string> dist_keys = {"dist", "min", "max", "mean"};
        if (std::find(dist_keys.begin(), dist_keys.end(), parts[2]) == dist_keys.end())
          unknown(parts[2], dist_keys, "/workload/record_size/" + escape_pointer(parts[2]));
      }
    }
    keys.insert(keys.end(), parts.begin() + 1, parts.end());
  }

  OJson value;
  try {
    value = OJson::parse(text);
  } catch (const nlohmann::json::parse_error&) {
    value = text;  // not JSON: a plain string (wal.storage=file)
  }

  if (!config.is_object()) config = OJson::object();
  OJson* node = &config;
  std::string pointer;
  for (size_t i = 0; i + 1 < keys.size(); ++i) {
    pointer += "/" + escape_pointer(keys[i]);
    OJson& next = (*node)[keys[i]];
    if (next.is_null()) next = OJson::object();
    if (i == 0 && keys[0] == "strategy" && next.is_string())
      next = OJson{{"name", next}};  // "strategy": "x" is short for {"name": "x"}
    if (!next.is_object())
      throw ConfigError(arg, pointer, "the config has " + kind_of(next) + " here",
                        "an object to set \"" + keys[i + 1] + "\" in");
    node = &next;
  }
  (*node)[keys.back()] = std::move(value);
}

void apply_override(nlohmann::json& config, const std::string& assignment) {
  OJson ordered = config;
  apply_override(ordered, assignment);
  config = ordered;
}

std::vector<CellSpec> expand_matrix(const nlohmann::ordered_json& config, const std::string& file) {
  return expand(parse_plan(config, file));
}

std::vector<CellSpec> expand_matrix(const nlohmann::json& config, const std::string& file) {
  return expand_matrix(OJson(config), file);
}

std::string MatrixShape::describe() const {
  std::vector<std::string> parts;
  for (const auto& [name, n] : dims) {
    if (name == "strategies" || name == "clients") {
      const std::string singular = name == "strategies" ? "strategy" : "client";
      parts.push_back(absl::StrFormat("%d %s", n, n == 1 ? singular : name));
    } else {
      parts.push_back(absl::StrFormat("%d %s", n, name));
    }
  }
  return absl::StrJoin(parts, " x ");
}

MatrixShape matrix_shape(const nlohmann::ordered_json& config, const std::string& file) {
  const Plan plan = parse_plan(config, file);
  MatrixShape shape;
  shape.dims.emplace_back("strategies", plan.variants.size());
  shape.dims.emplace_back("clients", plan.clients.size());
  for (const auto& d : plan.dims) shape.dims.emplace_back(d.key, d.values.size());
  shape.cells = cell_count(plan);
  return shape;
}

nlohmann::json LoadedConfigs::combined() const {
  if (configs.size() == 1) return nlohmann::json(configs[0]);
  nlohmann::json all = nlohmann::json::array();
  for (const auto& c : configs) all.push_back(nlohmann::json(c));
  return all;
}

LoadedConfigs load_configs(const std::vector<std::string>& paths,
                           const std::vector<std::string>& overrides) {
  LoadedConfigs out;
  for (const auto& path : paths) {
    OJson config = load_config_file(path);
    // Where each override landed, to name it when its value is what the validator rejects.
    std::vector<std::pair<std::string, std::string>> landed;  // pointer, argument
    for (const auto& o : overrides) {
      apply_override(config, o);
      const std::string p = o.substr(0, o.find('='));
      std::string pointer;
      if (p.rfind("matrix.", 0) == 0) {
        pointer = "/matrix/" + escape_pointer(p.substr(7));
      } else {
        for (const auto& part : absl::StrSplit(p, '.'))
          pointer += "/" + escape_pointer(std::string(part));
      }
      landed.emplace_back(pointer, "--set " + o);
    }
    std::vector<CellSpec> cells;
    try {
      cells = expand_matrix(config, path);
    } catch (const ConfigError& e) {
      for (auto it = landed.rbegin(); it != landed.rend(); ++it) {
        const std::string& p = it->first;
        if (e.json_path == p || e.json_path.rfind(p + "/", 0) == 0)
          throw e.with_file(it->second + (paths.size() > 1 ? " (on " + path + ")" : ""));
      }
      throw;
    }
    for (auto& c : cells) out.cells.push_back(std::move(c));
    out.paths.push_back(path);
    out.configs.push_back(std::move(config));
  }
  for (size_t i = 0; i < out.cells.size(); ++i) {
    out.cells[i].index = i;
    out.cells[i].total = out.cells.size();
  }
  return out;
}

std::string config_hash(const nlohmann::json& config) {
  const std::string canonical = config.dump();  // nlohmann::json keeps keys sorted
  uint64_t h = 14695981039346656037ull;         // FNV-1a 64 offset basis
  for (unsigned char c : canonical) {
    h ^= c;
    h *= 1099511628211ull;  // FNV-1a 64 prime
  }
  return absl::StrFormat("%016x", h);
}

}  // namespace walbench

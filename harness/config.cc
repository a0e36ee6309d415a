// Config loading and its errors. configs/README.md is the user-facing reference for every key
// the parser handles; keep the two in step (and both in step with the defaults in
// core/cell/spec.h).
//
// Flow: load_config_file() parses (syntax, duplicate keys) -> apply_override() edits the JSON
// (config_override.cc) -> parse_plan() validates every key once, at its JSON path, into a Plan
// (base spec from the top-level sections, strategy variants, the matrix dimensions) -> expand()
// walks the cartesian product, resolves each cell and runs the cross-field checks, which name
// the JSON path that set the offending value (config_matrix.cc). The value checks are in
// config_values.cc, the schema in config_fields.cc (harness/config_internal.h lists them).
#include "harness/config.h"

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
#include "harness/config_internal.h"

namespace walbench {

using config_internal::escape_pointer;
using config_internal::kind_of;
using config_internal::kTopKeys;
using config_internal::OJson;

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

nlohmann::json LoadedConfigs::combined() const {
  if (configs.size() == 1) return nlohmann::json(configs[0]);
  nlohmann::json all = nlohmann::json::array();
  for (const auto& c : configs) all.push_back(nlohmann::json(c));
  return all;
}

namespace {

// One config file after the overrides: where each override landed, to name it when its value is
// what the validator rejects, and where the file's relative preset files are looked up.
struct Overridden {
  OJson config;
  std::vector<std::pair<std::string, std::string>> landed;  // JSON pointer, "--set ..."
  // A relative preset file is relative to the config that names it; one given by --set (or a
  // whole --set platform={...}) to the current directory.
  std::string preset_dir;
};

std::string override_pointer(const std::string& assignment) {
  const std::string p = assignment.substr(0, assignment.find('='));
  if (p.rfind("matrix.", 0) == 0) return "/matrix/" + escape_pointer(p.substr(7));
  std::string pointer;
  for (const auto& part : absl::StrSplit(p, '.')) pointer += "/" + escape_pointer(std::string(part));
  return pointer;
}

// Applies the overrides in order. With `errors`, a bad override is recorded and skipped;
// without, it throws.
Overridden apply_overrides(OJson config, const std::string& path,
                           const std::vector<std::string>& overrides,
                           std::vector<ConfigError>* errors) {
  Overridden out;
  out.config = std::move(config);
  out.preset_dir = std::filesystem::path(path).parent_path().string();
  for (const auto& o : overrides) {
    try {
      apply_override(out.config, o);
    } catch (const ConfigError& e) {
      if (errors == nullptr) throw;
      errors->push_back(e);
      continue;
    }
    const std::string pointer = override_pointer(o);
    out.landed.emplace_back(pointer, "--set " + o);
    if (pointer == "/platform" || pointer == "/platform/preset") out.preset_dir = "";
  }
  return out;
}

// An error in a value that came from a --set is reported against that --set.
ConfigError blame_override(const ConfigError& e, const Overridden& o, const std::string& path,
                           bool several_files) {
  for (auto it = o.landed.rbegin(); it != o.landed.rend(); ++it) {
    const std::string& p = it->first;
    if (e.json_path == p || e.json_path.rfind(p + "/", 0) == 0)
      return e.with_file(it->second + (several_files ? " (on " + path + ")" : ""));
  }
  return e;
}

}  // namespace

LoadedConfigs load_configs(const std::vector<std::string>& paths,
                           const std::vector<std::string>& overrides) {
  LoadedConfigs out;
  for (const auto& path : paths) {
    Overridden o = apply_overrides(load_config_file(path), path, overrides, nullptr);
    std::vector<CellSpec> cells;
    MatrixShape shape;
    try {
      cells = config_internal::expand_config(o.config, path, o.preset_dir, nullptr, &shape);
    } catch (const ConfigError& e) {
      throw blame_override(e, o, path, paths.size() > 1);
    }
    for (auto& c : cells) out.cells.push_back(std::move(c));
    out.paths.push_back(path);
    out.configs.push_back(std::move(o.config));
    out.shapes.push_back(std::move(shape));
  }
  for (size_t i = 0; i < out.cells.size(); ++i) {
    out.cells[i].index = i;
    out.cells[i].total = out.cells.size();
  }
  return out;
}

std::vector<ConfigError> config_errors(const std::string& path,
                                       const std::vector<std::string>& overrides) {
  std::vector<ConfigError> errors;
  OJson config;
  try {
    config = load_config_file(path);
  } catch (const ConfigError& e) {
    return {e};  // nothing past a syntax error can be trusted
  }
  const Overridden o = apply_overrides(std::move(config), path, overrides, &errors);
  std::vector<ConfigError> found;
  try {
    config_internal::expand_config(o.config, path, o.preset_dir, &found, nullptr);
  } catch (const ConfigError& e) {  // what stops the parse: not an object, no strategy
    found.push_back(e);
  }
  for (const ConfigError& e : found) errors.push_back(blame_override(e, o, path, false));
  return errors;
}

namespace {

std::string seconds_text(double s) {
  if (s < 10) return absl::StrFormat("%.3g s", s);
  if (s < 120) return absl::StrFormat("%.0f s", s);
  if (s < 7200) return absl::StrFormat("%.0f min", s / 60);
  return absl::StrFormat("%.1f h", s / 3600);
}

}  // namespace

std::string run_time_summary(const std::vector<CellSpec>& cells) {
  double wall = 0, virtual_total = 0;
  double virtual_min = std::numeric_limits<double>::infinity(), virtual_max = 0;
  size_t threads_cells = 0, sim_cells = 0;
  double max_window = 0;
  for (const auto& c : cells) {
    const double per_cell = c.run.repetitions * (c.run.warmup_s + c.run.duration_s);
    if (c.platform.kind == "sim") {
      ++sim_cells;
      max_window = std::max(max_window, c.run.max_window_s);
      virtual_total += per_cell;
      virtual_min = std::min(virtual_min, per_cell);
      virtual_max = std::max(virtual_max, per_cell);
    } else {
      ++threads_cells;
      wall += per_cell;
    }
  }
  std::vector<std::string> parts;
  if (threads_cells > 0)
    parts.push_back((sim_cells > 0 ? absl::StrFormat("%d threads cells: ", threads_cells) : "") +
                    "at least " + seconds_text(wall) + " of timed runs (wall clock)");
  if (sim_cells > 0) {
    const std::string per_cell = virtual_min == virtual_max
                                     ? seconds_text(virtual_max)
                                     : seconds_text(virtual_min) + " to " + seconds_text(virtual_max);
    parts.push_back((threads_cells > 0 ? absl::StrFormat("%d sim cells: ", sim_cells) : "") +
                    "virtual time per cell " + per_cell + " (" + seconds_text(virtual_total) +
                    " in all)" +
                    (max_window > 0
                         ? absl::StrFormat(", more for a cell short of run.min_txns_per_client "
                                           "(run again, warm-up and window lengthened alike, the window up to %g s)",
                                           max_window)
                         : std::string()) +
                    "; real time depends on clients x duration, not estimated");
  }
  return absl::StrJoin(parts, "; ");
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
// `walbench report` / `walbench compare`; the table layout is described in report.h, the file
// layout in harness/RESULTS.md (NB: must match what runner.cc writes).
#include "harness/report.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "harness/config.h"
#include "harness/pairing.h"
#include "harness/pairing_noise.h"
#include "harness/runner.h"

namespace walbench {

namespace {

using json = nlohmann::json;

using ojson = nlohmann::ordered_json;

// `compare --json` files (layout in report.h); raise when a field changes its meaning.
constexpr int kCompareVersion = 1;

// Schema 1 (no clog block, platform.kind only) and the schema written now.
constexpr int64_t kOldestReadableSchema = 1;
constexpr int64_t kNewestReadableSchema = std::max(2, kResultSchemaVersion);

[[noreturn]] void bad_file(const std::string& path, const std::string& what) {
  throw UsageError(path + ": " + what);
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// One cell of a result file, as the tables see it.
struct CellView {
  std::string label;
  uint64_t clients = 0;
  std::string column;     // record size label
  bool ok = false;
  bool has_tps = false;
  double tps = 0;         // summary.tps_median
  std::string error;
  json matrix_rest;       // matrix values other than label, clients and record size
  std::string group_key;  // everything that must be equal to share a table
  std::string footer;     // the line under the table
  std::vector<double> rep_tps;  // compare: repetitions[*].tps that are not null

  std::string row() const { return absl::StrFormat("%s_%d_clients", label, clients); }
  std::string describe() const {
    std::string s = row() + " record_size=" + column;
    for (const auto& [k, v] : matrix_rest.items()) s += " " + k + "=" + value_text(v);
    return s;
  }
};

std::string column_label(const json& cell) {
  if (!cell.contains("workload") || !cell["workload"].is_object()) return "-";
  const json& w = cell["workload"];
  if (w.contains("record_size_label") && w["record_size_label"].is_string())
    return w["record_size_label"].get<std::string>();
  if (w.contains("record_size")) return value_text(w["record_size"]);
  return "-";
}

const json& member_or_null(const json& obj, const char* key) {
  static const json null_value;
  if (obj.is_object() && obj.contains(key)) return obj[key];
  return null_value;
}

template <class T>
T get_or(const json& obj, const char* key, T fallback) {
  const json& v = member_or_null(obj, key);
  if (v.is_null()) return fallback;
  try {
    return v.get<T>();
  } catch (const json::exception&) {
    return fallback;
  }
}

// Removes what a config path (an override variant's "set" key) determines from a table key
// made of the cell's blocks: "wal.buffer_init" -> wal.buffer_init; "platform.cores" ->
// platform.sim.cores; "platform.preset" and "platform.kind" -> the whole machine.
void erase_set_path(json& key, const std::string& path) {
  const size_t dot = path.find('.');
  if (dot == std::string::npos) return;
  const std::string block = path.substr(0, dot), name = path.substr(dot + 1);
  if (!key.contains(block) || !key[block].is_object()) return;
  json& b = key[block];
  if (block == "platform" && name != "atomics" && name != "spinlocks") {
    if (name == "kind" || name == "preset") {
      if (name == "kind") b.erase("kind");
      for (const char* k : {"preset", "preset_file", "sim"}) b.erase(k);
    } else if (b.contains("sim") && b["sim"].is_object()) {
      b["sim"].erase(name);
    }
    return;
  }
  b.erase(name);
}

std::vector<CellView> views_of(const json& doc) {
  // The config paths an override variant of the file sets (the cells' "set"): the labels tell
  // those rows apart, so the paths leave the table key, as a strategy's parameters do, and the
  // line under the table names them.
  std::vector<std::string> set_paths;
  for (const json& cell : doc["cells"]) {
    const json& set = member_or_null(cell, "set");
    if (!set.is_object()) continue;
    for (const auto& [k, v] : set.items())
      if (std::find(set_paths.begin(), set_paths.end(), k) == set_paths.end()) set_paths.push_back(k);
  }
  std::vector<CellView> views;
  for (const json& cell : doc["cells"]) {
    CellView v;
    v.label = cell["label"].get<std::string>();
    v.clients = cell["clients"].get<uint64_t>();
    v.ok = cell["ok"].get<bool>();
    v.column = column_label(cell);
    const json& summary = member_or_null(cell, "summary");
    if (summary.is_object() && summary.contains("tps_median") && summary["tps_median"].is_number()) {
      v.has_tps = true;
      v.tps = summary["tps_median"].get<double>();
    }
    v.error = get_or<std::string>(cell, "error", "");

    const json& matrix = member_or_null(cell, "matrix");
    v.matrix_rest = json::object();
    if (matrix.is_object()) {
      for (const auto& [k, val] : matrix.items()) {
        // strategy and variants are parts of the label.
        if (k == "clients" || k == "strategy" || k == "variants" || ends_with(k, "record_size") ||
            is_label_value(val, v.label))
          continue;
        v.matrix_rest[k] = val;
      }
    }
    json key = json::object();
    for (const char* block : {"platform", "wal", "commit", "run"}) key[block] = member_or_null(cell, block);
    json w = member_or_null(cell, "workload");
    if (w.is_object()) {
      w.erase("record_size");
      w.erase("record_size_label");
    }
    key["workload"] = w;
    key["matrix"] = v.matrix_rest;
    for (const std::string& p : set_paths) erase_set_path(key, p);
    v.group_key = key.dump();
    v.footer = setup_line(cell, v.matrix_rest);
    if (!set_paths.empty()) v.footer += "; variants set " + absl::StrJoin(set_paths, ", ");
    for (const json& rep : member_or_null(cell, "repetitions"))
      if (rep.is_object() && rep.contains("tps") && rep["tps"].is_number())
        v.rep_tps.push_back(rep["tps"].get<double>());
    views.push_back(std::move(v));
  }
  return views;
}

struct Group {
  std::string key;
  std::string footer;
  std::vector<size_t> cells;                                      // indices into the views
  std::map<std::tuple<std::string, uint64_t, std::string>, size_t> slot;  // (label, clients, column)
};

// Groups in order of first appearance. A second cell for an occupied (label, clients, column)
// slot opens another table with the same key rather than hiding one of the two.
std::vector<Group> group_views(const std::vector<CellView>& views) {
  std::vector<Group> groups;
  for (size_t i = 0; i < views.size(); ++i) {
    const CellView& v = views[i];
    const auto slot = std::make_tuple(v.label, v.clients, v.column);
    Group* target = nullptr;
    for (auto& g : groups)
      if (g.key == v.group_key && !g.slot.count(slot)) {
        target = &g;
        break;
      }
    if (!target) {
      groups.push_back(Group{v.group_key, v.footer, {}, {}});
      target = &groups.back();
    }
    target->cells.push_back(i);
    target->slot[slot] = i;
  }
  return groups;
}

bool is_decimal(const std::string& s) {
  return !s.empty() && s.size() < 19 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Renders one group with `text(view index)` as the cell text.
template <class CellText>
std::string render_group(const Group& g, const std::vector<CellView>& views, CellText text) {
  // Columns: fixed (decimal) sizes ascending, then the others in order of appearance.
  std::vector<std::string> columns;
  for (size_t i : g.cells)
    if (std::find(columns.begin(), columns.end(), views[i].column) == columns.end())
      columns.push_back(views[i].column);
  std::stable_sort(columns.begin(), columns.end(), [](const std::string& a, const std::string& b) {
    const bool da = is_decimal(a), db = is_decimal(b);
    if (da && db) return std::stoull(a) < std::stoull(b);
    return da && !db;
  });
  // Rows: labels in order of appearance, clients ascending.
  std::vector<std::string> labels;
  for (size_t i : g.cells)
    if (std::find(labels.begin(), labels.end(), views[i].label) == labels.end())
      labels.push_back(views[i].label);
  std::vector<std::pair<std::string, uint64_t>> rows;
  for (const auto& label : labels) {
    std::set<uint64_t> clients;
    for (size_t i : g.cells)
      if (views[i].label == label) clients.insert(views[i].clients);
    for (uint64_t c : clients) rows.emplace_back(label, c);
  }

  std::vector<std::string> header{""};
  header.insert(header.end(), columns.begin(), columns.end());
  std::vector<std::vector<std::string>> body;
  for (const auto& [label, clients] : rows) {
    std::vector<std::string> line{absl::StrFormat("%s_%d_clients", label, clients)};
    for (const auto& col : columns) {
      const auto it = g.slot.find(std::make_tuple(label, clients, col));
      line.push_back(it == g.slot.end() ? "-" : text(it->second));
    }
    body.push_back(std::move(line));
  }
  std::string s = render_table(header, body);
  s += g.footer + '\n';
  return s;
}

}  // namespace

bool is_label_value(const json& v, const std::string& label) {
  std::string text;
  if (v.is_string()) {
    text = v.get<std::string>();
  } else if (v.is_object() && v.contains("label") && v["label"].is_string()) {
    text = v["label"].get<std::string>();
  } else {
    return false;
  }
  if (text == label) return true;
  // "<strategy label>+<variant label>": a strategy and an override variant crossed.
  const size_t plus = label.find('+');
  return plus != std::string::npos && !text.empty() &&
         ((text.size() == plus && label.compare(0, plus, text) == 0) ||
          label.compare(plus + 1, std::string::npos, text) == 0);
}

std::string value_text(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

std::string setup_line(const json& cell, const json& matrix_rest) {
  const json& w = member_or_null(cell, "workload");
  const json& c = member_or_null(cell, "commit");
  const json& wal = member_or_null(cell, "wal");
  const json& p = member_or_null(cell, "platform");
  const json& r = member_or_null(cell, "run");

  std::vector<std::string> attrs;
  if (get_or<bool>(w, "transactional", true))
    attrs.push_back(get_or<bool>(c, "synchronous_commit", true) ? "synchronous_commit=on"
                                                                : "synchronous_commit=off");
  else
    attrs.push_back("non-transactional");
  const double overhead = get_or<double>(w, "client_overhead_us", 0.0);
  if (overhead > 0) attrs.push_back(absl::StrFormat("client_overhead_us=%g", overhead));
  const double jitter = get_or<double>(w, "client_overhead_jitter", 0.0);
  if (jitter > 0) attrs.push_back(absl::StrFormat("client_overhead_jitter=%g", jitter));
  const double per_byte = get_or<double>(w, "payload_ns_per_byte", 0.0);
  if (per_byte > 0) attrs.push_back(absl::StrFormat("payload_ns_per_byte=%g", per_byte));
  std::string s = "workload " + get_or<std::string>(w, "name", "?") + " (";
  for (size_t i = 0; i < attrs.size(); ++i) s += (i ? ", " : "") + attrs[i];
  s += ")";

  const std::string storage = get_or<std::string>(wal, "storage", "?");
  s += ", storage " + storage;
  const bool fsync = get_or<bool>(wal, "fsync", true);
  if (storage == "file" || !fsync) s += fsync ? " (fsync on)" : " (fsync off)";
  const std::string kind = get_or<std::string>(p, "kind", "?");
  s += ", platform " + kind;
  // The simulated machine in a few words (the cell holds every parameter).
  if (kind == "sim" && p.contains("sim") && p["sim"].is_object()) {
    const json& m = p["sim"];
    std::string machine;
    if (p.contains("preset") && p["preset"].is_string()) machine = p["preset"].get<std::string>() + ", ";
    machine += absl::StrFormat("%d cores", get_or<uint64_t>(m, "cores", 0));
    const uint64_t sockets = get_or<uint64_t>(m, "sockets", 1);
    if (sockets > 1) machine += absl::StrFormat(" on %d sockets", sockets);
    if (get_or<uint64_t>(m, "smt", 1) > 1) machine += absl::StrFormat(" x %d SMT", get_or<uint64_t>(m, "smt", 1));
    if (fsync) machine += absl::StrFormat(", fsync %g us", get_or<double>(m, "fsync_ns", 0.0) / 1000.0);
    s += " (" + machine + ")";
  }
  for (const char* policy : {"atomics", "spinlocks"}) {
    const std::string v = get_or<std::string>(p, policy, "native");
    if (v != "native") s += absl::StrFormat(" %s=%s", policy, v);
  }
  const uint64_t reps = get_or<uint64_t>(r, "repetitions", 1);
  s += absl::StrFormat(", %d repetition%s x %g s, median tps", reps, reps == 1 ? "" : "s",
                       get_or<double>(r, "duration_s", 0.0));
  for (const auto& [k, v] : matrix_rest.items()) s += ", " + k + "=" + value_text(v);
  return s;
}

std::string render_table(const std::vector<std::string>& header,
                         const std::vector<std::vector<std::string>>& rows) {
  const size_t ncols = header.size();
  std::vector<size_t> width(ncols, 0);
  auto widen = [&](const std::vector<std::string>& line) {
    for (size_t c = 0; c < ncols && c < line.size(); ++c) width[c] = std::max(width[c], line[c].size());
  };
  widen(header);
  for (const auto& line : rows) widen(line);
  auto render_line = [&](const std::vector<std::string>& line) {
    std::string s;
    for (size_t c = 0; c < ncols; ++c) {
      const std::string& cell = c < line.size() ? line[c] : std::string();
      if (c == 0)
        s += cell + std::string(width[0] - cell.size(), ' ');
      else
        s += "  " + std::string(width[c] - cell.size(), ' ') + cell;
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();  // a table of one column
    return s + '\n';
  };
  std::string s = render_line(header);
  for (const auto& line : rows) s += render_line(line);
  return s;
}

json load_result_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) bad_file(path, std::string("cannot read result file: ") + std::strerror(errno));
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string text = buf.str();
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    bad_file(path, "not a walbench result file: the file is empty");
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    // Line and column of the byte where parsing stopped.
    size_t line = 1, col = 1;
    for (size_t i = 0; i + 1 < e.byte && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    bad_file(path, absl::StrFormat("not a walbench result file: invalid JSON at line %d, column %d", line, col));
  }
  if (!doc.is_object() || !doc.contains("cells") || !doc["cells"].is_array() ||
      !doc.contains("context") || !doc["context"].is_object())
    bad_file(path, "not a walbench result file: expected an object with \"context\" and a \"cells\" array");
  const json& ctx = doc["context"];
  if (!ctx.contains("schema_version") || !ctx["schema_version"].is_number_integer())
    bad_file(path, "not a walbench result file: /context/schema_version is missing");
  const auto version = ctx["schema_version"].get<int64_t>();
  if (version < kOldestReadableSchema || version > kNewestReadableSchema)
    bad_file(path, absl::StrFormat("result schema_version %d is not supported (this walbench reads %d to %d)",
                                   version, kOldestReadableSchema, kNewestReadableSchema));
  for (size_t i = 0; i < doc["cells"].size(); ++i) {
    const json& c = doc["cells"][i];
    auto need = [&](const char* key, bool good, const char* expected) {
      if (!good)
        bad_file(path, absl::StrFormat("/cells/%d/%s: missing or invalid; expected %s", i, key, expected));
    };
    need("", c.is_object(), "an object");
    need("label", c.contains("label") && c["label"].is_string(), "a string");
    need("clients", c.contains("clients") && c["clients"].is_number_unsigned(), "a non-negative integer");
    need("ok", c.contains("ok") && c["ok"].is_boolean(), "true or false");
  }
  return doc;
}

int report_command(const std::string& result_path, std::ostream& out, std::ostream& /*err*/) {
  const json doc = load_result_file(result_path);
  const std::vector<CellView> views = views_of(doc);
  if (views.empty()) {
    out << result_path << ": no cells\n";
    return 0;
  }
  const std::vector<Group> groups = group_views(views);
  for (size_t g = 0; g < groups.size(); ++g) {
    if (g) out << '\n';
    out << render_group(groups[g], views, [&](size_t i) -> std::string {
      const CellView& v = views[i];
      if (!v.ok) return "FAILED";
      if (!v.has_tps) return "-";
      return std::to_string(std::llround(v.tps));
    });
  }
  std::vector<const CellView*> failed;
  for (const auto& v : views)
    if (!v.ok) failed.push_back(&v);
  if (!failed.empty()) {
    out << absl::StrFormat("\nfailed cells (%d):\n", failed.size());
    for (const CellView* v : failed) out << "  " << v->describe() << ": " << v->error << '\n';
  }
  return 0;
}


namespace {

// "1, 2, 4"
std::string value_list(const std::vector<std::string>& values) { return absl::StrJoin(values, ", "); }

bool is_subset(const std::vector<std::string>& small, const std::vector<std::string>& big) {
  return std::all_of(small.begin(), small.end(), [&](const std::string& v) {
    return std::find(big.begin(), big.end(), v) != big.end();
  });
}

// One header line per setting the files differ in: "  wal.storage: memory -> file".
std::string difference_line(const SettingDiff& d) {
  std::string s = "  " + d.path + ": " + value_list(d.base_values) + " -> " + value_list(d.next_values);
  switch (d.role) {
    case SettingDiff::Role::kMeasurement: return s + " (measurement; cells still pair)";
    case SettingDiff::Role::kIgnored: return s + " (--ignore; cells still pair)";
    case SettingDiff::Role::kNotPairedBy: return s + " (not a --pair-by key; cells still pair)";
    case SettingDiff::Role::kPairs: break;
  }
  if (is_subset(d.next_values, d.base_values)) return s + " (NEW has a subset)";
  if (is_subset(d.base_values, d.next_values)) return s + " (BASE has a subset)";
  return s;
}

// The line about settings only one file records.
std::string only_recorded_line(const char* side, const std::vector<std::string>& settings) {
  return absl::StrFormat("only %s records (not compared): %s\n", side, absl::StrJoin(settings, ", "));
}

}  // namespace

int compare_command(const std::string& base, const std::string& next, std::ostream& out,
                    std::ostream& err, const CompareOptions& options, const std::string& json_path) {
  const json base_doc = load_result_file(base);
  const json next_doc = load_result_file(next);
  const Pairing pairing = pair_cells(base_doc, base, next_doc, next, options);
  const std::vector<CellView> bviews = views_of(base_doc);
  const std::vector<CellView> nviews = views_of(next_doc);

  out << "compare: NEW " << next << " vs BASE " << base << " (median tps, NEW/BASE - 1)\n";
  if (pairing.differences.empty()) {
    out << "settings: the files agree on every setting both record\n";
  } else {
    out << "settings that differ (BASE -> NEW):\n";
    for (const SettingDiff& d : pairing.differences) out << difference_line(d) << '\n';
  }
  // The machine and the build are part of what a real-thread number measures: say where the
  // two files differ in them (a simulated cell's numbers do not depend on the host, but they do
  // on the code).
  {
    const json& bc = base_doc["context"];
    const json& nc = next_doc["context"];
    auto text_of = [](const json& ctx, const char* key) -> std::string {
      if (!ctx.contains(key)) return "?";
      return ctx[key].is_string() ? ctx[key].get<std::string>() : ctx[key].dump();
    };
    auto build_of = [&](const json& ctx) {
      if (ctx.contains("build") && ctx["build"].is_object())
        return text_of(ctx["build"], "type") + " " + text_of(ctx["build"], "compiler") + " " +
               text_of(ctx["build"], "flags");
      return text_of(ctx, "build_type") + " " + text_of(ctx, "compiler");
    };
    auto code_of = [&](const json& ctx) {
      std::string sha = text_of(ctx, "git_sha").substr(0, 12);
      if (ctx.value("git_dirty", false))
        sha += "+dirty(" + text_of(ctx, "git_diff_hash").substr(0, 8) + ")";
      return sha;
    };
    std::vector<std::string> lines;
    for (const char* key : {"host", "cpu_model", "logical_cores", "kernel"})
      if (text_of(bc, key) != text_of(nc, key))
        lines.push_back(absl::StrFormat("  %s: %s -> %s", key, text_of(bc, key), text_of(nc, key)));
    if (build_of(bc) != build_of(nc))
      lines.push_back("  build: " + build_of(bc) + " -> " + build_of(nc));
    if (code_of(bc) != code_of(nc)) lines.push_back("  code: " + code_of(bc) + " -> " + code_of(nc));
    bool threads = false;
    for (const json* d : {&base_doc, &next_doc})
      for (const auto& c : (*d)["cells"])
        if (c.contains("platform") && c["platform"].value("kind", std::string("threads")) == "threads")
          threads = true;
    if (!lines.empty()) {
      out << "machine and build (BASE -> NEW):\n";
      for (const auto& l : lines) out << l << '\n';
      bool machine = false;
      for (const auto& l : lines) machine |= l.rfind("  code:", 0) != 0;
      if (threads && machine)
        out << "  real-thread cells ran on another machine or build: their change includes it\n";
    }
  }
  const bool base_old = base_doc["context"]["schema_version"].get<int>() == 1;
  const bool next_old = next_doc["context"]["schema_version"].get<int>() == 1;
  if (base_old || next_old)
    out << (base_old && next_old ? "BASE and NEW are schema-1 files, which record"
                                 : base_old ? "BASE is a schema-1 file, which records"
                                            : "NEW is a schema-1 file, which records")
        << " no clog block and only platform.kind (not the simulated machine), so cells pair on "
           "less\n";
  if (!pairing.base_only_settings.empty()) out << only_recorded_line("BASE", pairing.base_only_settings);
  if (!pairing.next_only_settings.empty()) out << only_recorded_line("NEW", pairing.next_only_settings);

  // Paired cells: NEW/BASE - 1 with the noise mark.
  std::vector<CellView> paired;  // the NEW side of each pair, in NEW's order
  std::vector<std::string> text;
  double log_sum = 0;
  size_t log_n = 0, up = 0, down = 0, within = 0, no_verdict = 0;
  std::vector<std::pair<std::string, size_t>> no_verdict_reasons;  // reason, cells
  ojson pairs_json = ojson::array();
  for (const auto& [bi, ni] : pairing.pairs) {
    const CellView& bv = bviews[bi];
    const CellView& nv = nviews[ni];
    paired.push_back(nv);
    ojson& pj = pairs_json.emplace_back(ojson::object());
    pj["base_cell"] = bi;
    pj["new_cell"] = ni;
    pj["label"] = nv.label;
    pj["clients"] = nv.clients;
    pj["record_size"] = nv.column;
    pj["base_tps"] = bv.has_tps ? ojson(bv.tps) : ojson(nullptr);
    pj["new_tps"] = nv.has_tps ? ojson(nv.tps) : ojson(nullptr);
    pj["change"] = nullptr;
    pj["status"] = "ok";
    pj["noise"] = nullptr;
    pj["p"] = nullptr;
    pj["repetitions"] = {bv.rep_tps.size(), nv.rep_tps.size()};
    pj["no_verdict"] = nullptr;
    if (!nv.ok || !bv.ok) {
      text.push_back("FAILED");
      pj["status"] = "failed";
      continue;
    }
    if (!nv.has_tps || !bv.has_tps || bv.tps <= 0) {
      text.push_back("-");
      pj["status"] = "no_tps";
      continue;
    }
    const double ratio = nv.tps / bv.tps;
    pj["change"] = ratio - 1;
    if (ratio > 0) {
      log_sum += std::log(ratio);
      ++log_n;
    }
    const NoiseVerdict verdict = noise_verdict(bv.rep_tps, nv.rep_tps);
    char mark = ' ';
    switch (verdict.kind) {
      case NoiseVerdict::Kind::kExceedsNoise:
        mark = '*';
        ++(ratio >= 1 ? up : down);
        pj["noise"] = "exceeds";
        pj["p"] = verdict.p;
        break;
      case NoiseVerdict::Kind::kWithinNoise:
        ++within;
        pj["noise"] = "within";
        pj["p"] = verdict.p;
        break;
      case NoiseVerdict::Kind::kNoVerdict: {
        mark = '?';
        ++no_verdict;
        pj["noise"] = "n/a";
        pj["no_verdict"] = verdict.reason;
        auto it = std::find_if(no_verdict_reasons.begin(), no_verdict_reasons.end(),
                               [&](const auto& r) { return r.first == verdict.reason; });
        if (it == no_verdict_reasons.end())
          no_verdict_reasons.emplace_back(verdict.reason, 1);
        else
          ++it->second;
        break;
      }
    }
    text.push_back(absl::StrFormat("%+.1f%%%c", (ratio - 1) * 100, mark));
  }

  if (!paired.empty()) {
    out << '\n';
    const std::vector<Group> groups = group_views(paired);
    for (const Group& g : groups) {
      out << render_group(g, paired, [&](size_t i) { return text[i]; });
      out << '\n';
    }
    std::string legend = absl::StrFormat(
        "* the change exceeds the noise within each run: exact two-sided Mann-Whitney U test "
        "over the repetitions' tps, p < %g; unmarked: p >= %g (drift between the two runs is "
        "not noise it can see)",
        kNoiseAlpha, kNoiseAlpha);
    if (!no_verdict_reasons.empty()) {
      std::vector<std::string> reasons;
      for (const auto& [reason, cells] : no_verdict_reasons)
        reasons.push_back(absl::StrFormat("%s (%d cell%s)", reason, cells, cells == 1 ? "" : "s"));
      legend += "; ? n/a, too few repetitions for any p < " + absl::StrFormat("%g", kNoiseAlpha) +
                ": " + absl::StrJoin(reasons, "; ");
    }
    out << legend << '\n';
    const size_t testable = up + down + within;
    out << absl::StrFormat("beyond the noise: %d of %d cells with a verdict (%d up, %d down)", up + down,
                           testable, up, down);
    if (no_verdict > 0) out << absl::StrFormat("; %d without a verdict", no_verdict);
    out << '\n';
    if (log_n > 0)
      out << absl::StrFormat("geometric mean change: %+.1f%% over %d cell%s, the paired cells that succeeded in both files (of %d paired)\n",
                             (std::exp(log_sum / static_cast<double>(log_n)) - 1) * 100, log_n,
                             log_n == 1 ? "" : "s", pairing.pairs.size());
    else
      out << absl::StrFormat("geometric mean change: n/a (none of the %d paired cells succeeded in both files)\n",
                             pairing.pairs.size());
  }

  auto list_unpaired = [&](const char* side, const char* other_side, const std::vector<UnpairedCell>& cells,
                           const std::vector<CellView>& own, const std::vector<CellView>& other) {
    if (cells.empty()) return;
    out << absl::StrFormat("\nunpaired in %s (%d):\n", side, cells.size());
    for (const UnpairedCell& u : cells) {
      out << "  " << own[u.cell].describe() << ": ";
      if (!u.note.empty())
        out << u.note << '\n';
      else if (u.closest == UnpairedCell::kNone)
        out << other_side << " has no cells\n";
      else
        out << "the closest " << other_side << " cell (" << other[u.closest].describe() << ") differs in "
            << absl::StrJoin(u.differences, ", ") << '\n';
    }
  };
  list_unpaired("BASE", "NEW", pairing.base_only, bviews, nviews);
  list_unpaired("NEW", "BASE", pairing.next_only, nviews, bviews);

  if (!json_path.empty()) {
    auto role_name = [](SettingDiff::Role r) {
      switch (r) {
        case SettingDiff::Role::kPairs: return "pairs";
        case SettingDiff::Role::kMeasurement: return "measurement";
        case SettingDiff::Role::kIgnored: return "ignored";
        case SettingDiff::Role::kNotPairedBy: return "not_paired_by";
      }
      return "pairs";
    };
    ojson doc = ojson::object();
    doc["compare_version"] = kCompareVersion;
    doc["base"] = base;
    doc["new"] = next;
    doc["metric"] = "summary.tps_median";
    doc["noise_test"] = {{"test", "exact two-sided Mann-Whitney U"}, {"over", "repetitions[*].tps"},
                         {"alpha", kNoiseAlpha}};
    doc["ignore"] = options.ignore;
    doc["pair_by"] = options.pair_by;
    ojson diffs = ojson::array();
    for (const SettingDiff& d : pairing.differences)
      diffs.push_back({{"path", d.path}, {"role", role_name(d.role)}, {"base", d.base_values}, {"new", d.next_values}});
    doc["differences"] = diffs;
    doc["base_only_settings"] = pairing.base_only_settings;
    doc["new_only_settings"] = pairing.next_only_settings;
    doc["pairs"] = pairs_json;
    auto unpaired_json = [&](const std::vector<UnpairedCell>& cells, const std::vector<CellView>& own) {
      ojson list = ojson::array();
      for (const UnpairedCell& u : cells)
        list.push_back({{"cell", u.cell},
                        {"label", own[u.cell].label},
                        {"clients", own[u.cell].clients},
                        {"record_size", own[u.cell].column},
                        {"closest", u.closest == UnpairedCell::kNone || !u.note.empty() ? ojson(nullptr) : ojson(u.closest)},
                        {"differences", u.differences},
                        {"note", u.note.empty() ? ojson(nullptr) : ojson(u.note)}});
      return list;
    };
    doc["unpaired_base"] = unpaired_json(pairing.base_only, bviews);
    doc["unpaired_new"] = unpaired_json(pairing.next_only, nviews);
    doc["geometric_mean_change"] =
        log_n > 0 ? ojson(std::exp(log_sum / static_cast<double>(log_n)) - 1) : ojson(nullptr);
    doc["geometric_mean_cells"] = log_n;
    write_file_atomically(json_path, doc.dump(1) + "\n");
  }

  if (pairing.pairs.empty()) {
    out.flush();
    // The settings with no value in common explain it; the ones that merely overlap do not.
    std::vector<std::string> apart;
    for (const SettingDiff& d : pairing.differences)
      if (d.role == SettingDiff::Role::kPairs &&
          std::none_of(d.next_values.begin(), d.next_values.end(), [&](const std::string& v) {
            return std::find(d.base_values.begin(), d.base_values.end(), v) != d.base_values.end();
          }))
        apart.push_back(d.path);
    if (apart.empty()) apart = pairing.identity_diff_paths;
    std::string why;
    if (bviews.empty() || nviews.empty())
      why = absl::StrFormat("%s has no cells", bviews.empty() ? "BASE" : "NEW");
    else if (apart.empty())
      why = "no combination of the settings occurs in both files (see the unpaired cells above)";
    else
      why = "the files differ in " + absl::StrJoin(apart, ", ") +
            " (listed above); --ignore KEY or --pair-by KEY pairs such cells deliberately";
    err << "walbench: compare: no cell of NEW pairs with a cell of BASE: " << why << '\n';
    return 1;
  }
  return 0;
}

}  // namespace walbench

// `walbench report` / `walbench compare`; the table layout is described in report.h, the file
// layout in harness/RESULTS.md (NB: must match what runner.cc writes).
#include "harness/report.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "harness/config.h"
#include "harness/measure.h"
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

// The axes a table can put in its rows or columns: the variant label, the client count, the
// record size, or any other matrix key by its path ("strategy.params.num_locks").
constexpr const char* kLabelAxis = "label";
constexpr const char* kClientsAxis = "clients";
constexpr const char* kRecordSizeAxis = "record_size";

// Which axes make a table's rows (their values joined into the row name) and its columns; every
// axis in neither splits the file into tables. The default is the pgsql-hackers layout.
struct Layout {
  std::vector<std::string> rows{kLabelAxis, kClientsAxis};
  std::string columns = kRecordSizeAxis;  // empty: the columns are wait events
  bool has_axis(const std::string& axis) const {
    return columns == axis || std::find(rows.begin(), rows.end(), axis) != rows.end();
  }
};

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
  std::vector<std::string> row_parts;  // the values of the layout's row axes
  std::string row_name;                // "insert_locks_atomic_16_clients"
  std::string column_value;            // the value of its column axis ("" for wait events)
  const json* source = nullptr;        // the cell in its file

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

// The value of `axis` for a cell ("-" when its matrix lacks the key).
std::string axis_value(const CellView& v, const json& cell, const std::string& axis) {
  if (axis == kLabelAxis) return v.label;
  if (axis == kClientsAxis) return std::to_string(v.clients);
  if (axis == kRecordSizeAxis) return v.column;
  const json& matrix = member_or_null(cell, "matrix");
  return matrix.is_object() && matrix.contains(axis) ? value_text(matrix[axis]) : "-";
}

// A part of a row name: the label itself, else the value and the key's last component
// ("16_clients", "8_num_locks").
std::string row_part_text(const std::string& axis, const std::string& value) {
  if (axis == kLabelAxis) return value;
  const size_t dot = axis.rfind('.');
  return value + "_" + (dot == std::string::npos ? axis : axis.substr(dot + 1));
}

// The line under the table names `measure` where the default table says "median tps".
std::string setup_line_measuring(const json& cell, const json& matrix_rest, const std::string& measure);

std::vector<CellView> views_of(const json& doc, const Layout& layout = Layout{},
                               const std::string& measure = "median tps") {
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
    v.source = &cell;
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
    // What the layout puts in the rows or columns leaves the table key and the line under the
    // table; clients and the record size, when neither, join them.
    json rest = v.matrix_rest;
    for (const std::string& axis : layout.rows) rest.erase(axis);
    rest.erase(layout.columns);
    json key = json::object();
    for (const char* block : {"platform", "wal", "commit", "run"}) key[block] = member_or_null(cell, block);
    json w = member_or_null(cell, "workload");
    if (w.is_object() && layout.has_axis(kRecordSizeAxis)) {
      w.erase("record_size");
      w.erase("record_size_label");
    }
    key["workload"] = w;
    key["matrix"] = rest;
    if (!layout.has_axis(kClientsAxis)) {
      key["clients"] = v.clients;
      rest[kClientsAxis] = v.clients;
    }
    if (!layout.has_axis(kRecordSizeAxis)) rest[kRecordSizeAxis] = v.column;
    for (const std::string& p : set_paths) erase_set_path(key, p);
    for (const std::string& axis : layout.rows) erase_set_path(key, axis);
    erase_set_path(key, layout.columns);
    v.group_key = key.dump();
    v.footer = setup_line_measuring(cell, rest, measure);
    if (!set_paths.empty()) v.footer += "; variants set " + absl::StrJoin(set_paths, ", ");
    for (const json& rep : member_or_null(cell, "repetitions"))
      if (rep.is_object() && rep.contains("tps") && rep["tps"].is_number())
        v.rep_tps.push_back(rep["tps"].get<double>());
    std::vector<std::string> names;
    for (const std::string& axis : layout.rows) {
      v.row_parts.push_back(axis_value(v, cell, axis));
      names.push_back(row_part_text(axis, v.row_parts.back()));
    }
    v.row_name = absl::StrJoin(names, "_");
    if (!layout.columns.empty()) v.column_value = axis_value(v, cell, layout.columns);
    views.push_back(std::move(v));
  }
  return views;
}

// (row parts joined, column value): one cell of a table.
using Slot = std::pair<std::string, std::string>;

std::string row_key(const std::vector<std::string>& parts) { return absl::StrJoin(parts, "\x1f"); }

struct Group {
  std::string key;
  std::string footer;
  std::vector<size_t> cells;      // indices into the views
  std::map<Slot, size_t> slot;    // the view in each slot
};

// Groups in order of first appearance. A second cell for an occupied slot opens another table
// with the same key rather than hiding one of the two.
std::vector<Group> group_views(const std::vector<CellView>& views) {
  std::vector<Group> groups;
  for (size_t i = 0; i < views.size(); ++i) {
    const CellView& v = views[i];
    const Slot slot{row_key(v.row_parts), v.column_value};
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

// "16", "-3", "0.5": a value that sorts as a number.
bool is_number(const std::string& s) {
  size_t i = s.size() > 1 && s[0] == '-' ? 1 : 0;
  const size_t digits = i;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
  if (i == digits) return false;
  if (i < s.size() && s[i] == '.') {
    const size_t frac = ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    if (i == frac) return false;
  }
  return i == s.size();
}

// The values of one axis in table order: numbers ascending, then the others in order of
// appearance; labels keep their order of appearance.
std::vector<std::string> axis_order(std::vector<std::string> values, bool keep_order) {
  if (!keep_order)
    std::stable_sort(values.begin(), values.end(), [](const std::string& a, const std::string& b) {
      const bool na = is_number(a), nb = is_number(b);
      if (na && nb) return std::strtod(a.c_str(), nullptr) < std::strtod(b.c_str(), nullptr);
      return na && !nb;
    });
  return values;
}

void add_once(std::vector<std::string>& list, const std::string& value) {
  if (std::find(list.begin(), list.end(), value) == list.end()) list.push_back(value);
}

// The group's column values in table order.
std::vector<std::string> ordered_columns(const Group& g, const std::vector<CellView>& views, bool keep_order) {
  std::vector<std::string> columns;
  for (size_t i : g.cells) add_once(columns, views[i].column_value);
  return axis_order(columns, keep_order);
}

// The group's rows in table order: lexicographic by the rank of each part on its axis. Each
// row is (its parts, its name).
std::vector<std::pair<std::vector<std::string>, std::string>> ordered_rows(
    const Group& g, const std::vector<CellView>& views, const std::vector<bool>& keep_order) {
  std::vector<std::pair<std::vector<std::string>, std::string>> rows;
  std::vector<std::vector<std::string>> per_axis(keep_order.size());
  for (size_t i : g.cells) {
    const CellView& v = views[i];
    if (std::none_of(rows.begin(), rows.end(), [&](const auto& r) { return r.first == v.row_parts; }))
      rows.emplace_back(v.row_parts, v.row_name);
    for (size_t a = 0; a < per_axis.size() && a < v.row_parts.size(); ++a) add_once(per_axis[a], v.row_parts[a]);
  }
  std::vector<std::map<std::string, size_t>> rank(per_axis.size());
  for (size_t a = 0; a < per_axis.size(); ++a) {
    const std::vector<std::string> order = axis_order(per_axis[a], keep_order[a]);
    for (size_t r = 0; r < order.size(); ++r) rank[a][order[r]] = r;
  }
  std::stable_sort(rows.begin(), rows.end(), [&](const auto& x, const auto& y) {
    for (size_t a = 0; a < rank.size() && a < x.first.size(); ++a) {
      const size_t rx = rank[a].at(x.first[a]), ry = rank[a].at(y.first[a]);
      if (rx != ry) return rx < ry;
    }
    return false;
  });
  return rows;
}

// A table before rendering: the header (its first entry heads the row names) and the rows.
struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> body;
};

// A group with its column values as columns and `text(view index)` in each cell ("-" for an
// empty slot).
template <class CellText>
Table value_table(const Group& g, const std::vector<CellView>& views, const Layout& layout, CellText text) {
  std::vector<bool> keep_order;
  for (const std::string& axis : layout.rows) keep_order.push_back(axis == kLabelAxis);
  const std::vector<std::string> columns = ordered_columns(g, views, layout.columns == kLabelAxis);
  Table t;
  t.header.push_back("");
  t.header.insert(t.header.end(), columns.begin(), columns.end());
  for (const auto& [parts, name] : ordered_rows(g, views, keep_order)) {
    std::vector<std::string> line{name};
    for (const auto& col : columns) {
      const auto it = g.slot.find(Slot{row_key(parts), col});
      line.push_back(it == g.slot.end() ? "-" : text(it->second));
    }
    t.body.push_back(std::move(line));
  }
  return t;
}

// Renders one group in the default layout with `text(view index)` as the cell text, and the
// line under it (compare).
template <class CellText>
std::string render_group(const Group& g, const std::vector<CellView>& views, CellText text) {
  const Layout pgsql_hackers;  // (GCC 12 crashes on a Layout{} temporary here)
  const Table t = value_table(g, views, pgsql_hackers, text);
  return render_table(t.header, t.body) + g.footer + '\n';
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

namespace {

std::string setup_line_measuring(const json& cell, const json& matrix_rest, const std::string& measure) {
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
  const double driver = get_or<double>(w, "driver_us", 0.0);
  if (driver > 0) attrs.push_back(absl::StrFormat("driver_us=%g", driver));
  // pgbench workloads' full-page images (a cell written without the key ran without them).
  if (get_or<std::string>(w, "name", "") != "emit_message" && w.contains("full_page_writes"))
    attrs.push_back(get_or<bool>(w, "full_page_writes", false)
                        ? absl::StrFormat("full_page_writes=on, scale=%d, checkpoint_timeout_s=%g",
                                          get_or<int>(w, "scale", 1),
                                          get_or<double>(w, "checkpoint_timeout_s", 300.0))
                        : std::string("full_page_writes=off"));
  if (get_or<std::string>(w, "tables", "permanent") == "unlogged")
    attrs.push_back("unlogged tables");
  std::string s = "workload " + get_or<std::string>(w, "name", "?") + " (";
  for (size_t i = 0; i < attrs.size(); ++i) s += (i ? ", " : "") + attrs[i];
  s += ")";

  const std::string kind = get_or<std::string>(p, "kind", "?");
  const std::string storage =
      kind == "postgres" ? "the server's pg_wal" : get_or<std::string>(wal, "storage", "?");
  s += ", storage " + storage;
  const bool fsync = get_or<bool>(wal, "fsync", true);
  if (storage == "file" || kind == "postgres" || !fsync) s += fsync ? " (fsync on)" : " (fsync off)";
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
  s += absl::StrFormat(", %d repetition%s x %g s", reps, reps == 1 ? "" : "s",
                       get_or<double>(r, "duration_s", 0.0));
  const double max_window = get_or<double>(r, "max_window_s", 0.0);
  if (max_window > 0 && get_or<std::string>(p, "kind", "") == "sim")
    s += absl::StrFormat(" (up to %g s in cells short of run.min_txns_per_client)", max_window);
  s += ", " + measure;
  for (const auto& [k, v] : matrix_rest.items()) s += ", " + k + "=" + value_text(v);
  return s;
}

}  // namespace

std::string setup_line(const json& cell, const json& matrix_rest) {
  return setup_line_measuring(cell, matrix_rest, "median tps");
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

namespace {

// A measure a cell records, for `report --metric`.
struct Metric {
  const char* name;
  const char* measure;       // in the line under the table ("median tps")
  int decimals;
  const char* summary_key;   // the cell's summary field, or null
  const char* latency_key;   // else this repetitions[*].latency_ms field, median over them
};

constexpr Metric kMetrics[] = {
    {"tps", "median tps", 0, "tps_median", nullptr},
    {"tps_min", "lowest tps of the repetitions", 0, "tps_min", nullptr},
    {"tps_max", "highest tps of the repetitions", 0, "tps_max", nullptr},
    {"tps_rsd", "tps relative standard deviation over the repetitions in %", 1, "tps_rsd_pct", nullptr},
    {"bytes_per_s", "median WAL bytes per second", 0, "bytes_per_s_median", nullptr},
    {"lat_mean", "mean latency in ms (median of the repetitions' means)", 3, "lat_ms_median", nullptr},
    {"lat_stddev", "latency standard deviation in ms (median over the repetitions)", 3, nullptr, "stddev"},
    {"p50", "p50 latency in ms (median over the repetitions)", 3, nullptr, "p50"},
    {"p90", "p90 latency in ms (median over the repetitions)", 3, nullptr, "p90"},
    {"p99", "p99 latency in ms (median over the repetitions)", 3, nullptr, "p99"},
    {"p999", "p99.9 latency in ms (median over the repetitions)", 3, nullptr, "p999"},
};

// The columns of a wait-event table: the events with the largest share in any of its cells.
constexpr size_t kWaitEventColumns = 6;

const Metric* find_metric(const std::string& name) {
  for (const Metric& m : kMetrics)
    if (name == m.name) return &m;
  return nullptr;
}

std::optional<double> metric_value(const Metric& m, const json& cell) {
  if (m.summary_key) {
    const json& v = member_or_null(member_or_null(cell, "summary"), m.summary_key);
    return v.is_number() ? std::optional<double>(v.get<double>()) : std::nullopt;
  }
  std::vector<double> values;
  for (const json& rep : member_or_null(cell, "repetitions")) {
    const json& v = member_or_null(member_or_null(rep, "latency_ms"), m.latency_key);
    if (v.is_number()) values.push_back(v.get<double>());
  }
  if (values.empty()) return std::nullopt;
  return median(values);
}

std::string number_text(double x, int decimals) {
  return decimals == 0 ? std::to_string(std::llround(x)) : absl::StrFormat("%.*f", decimals, x);
}

// Samples per wait event over every repetition of the cell.
std::map<std::string, double> wait_samples(const json& cell) {
  std::map<std::string, double> samples;
  for (const json& rep : member_or_null(cell, "repetitions")) {
    const json& events = member_or_null(rep, "wait_events");
    if (!events.is_object()) continue;
    for (const auto& [name, n] : events.items())
      if (n.is_number()) samples[name] += n.get<double>();
  }
  return samples;
}

// Shares in % of the cell's samples; empty when it has none.
std::map<std::string, double> wait_shares(const json& cell) {
  std::map<std::string, double> shares = wait_samples(cell);
  double total = 0;
  for (const auto& [name, n] : shares) total += n;
  if (total <= 0) return {};
  for (auto& [name, n] : shares) n = 100.0 * n / total;
  return shares;
}

// A table in the asked format, with its caption.
std::string render_formatted(const std::string& format, const Table& t, const std::string& caption) {
  if (format == "markdown") {
    auto cell_text = [](std::string s) {
      std::string e;
      for (char c : s) e += c == '|' ? std::string("\\|") : std::string(1, c);
      return e;
    };
    auto line = [&](const std::vector<std::string>& cells) {
      std::vector<std::string> escaped;
      for (size_t c = 0; c < t.header.size(); ++c) escaped.push_back(cell_text(c < cells.size() ? cells[c] : ""));
      return "| " + absl::StrJoin(escaped, " | ") + " |\n";
    };
    std::string s = line(t.header) + "|:--" + std::string();
    for (size_t c = 1; c < t.header.size(); ++c) s += "|--:";
    s += "|\n";
    for (const auto& row : t.body) s += line(row);
    return s + "\n" + caption + "\n";
  }
  if (format == "csv") {
    auto field = [](const std::string& s) {
      std::string v = s;
      if (!v.empty() && v.back() == '%') v.pop_back();  // the caption says the unit
      if (v.find_first_of(",\"\n") == std::string::npos) return v;
      std::string q = "\"";
      for (char c : v) q += c == '"' ? std::string("\"\"") : std::string(1, c);
      return q + "\"";
    };
    auto line = [&](const std::vector<std::string>& cells) {
      std::vector<std::string> fields;
      for (const auto& c : cells) fields.push_back(field(c));
      return absl::StrJoin(fields, ",") + "\n";
    };
    std::string s = "# " + caption + "\n" + line(t.header);
    for (const auto& row : t.body) s += line(row);
    return s;
  }
  return render_table(t.header, t.body) + caption + "\n";
}

// The names a swept key is known by: "label" (also strategy, variant, variants), "clients",
// "record_size" (also workload.record_size), each other matrix key by its path or, when no
// other key shares it, its last component. Throws UsageError listing the swept keys.
std::string resolve_axis(const std::string& name, const char* option, const std::string& path,
                         const std::vector<CellView>& views) {
  if (name == "label" || name == "strategy" || name == "variant" || name == "variants") return kLabelAxis;
  if (name == "clients") return kClientsAxis;
  if (name == "record_size" || name == "workload.record_size") return kRecordSizeAxis;
  std::vector<std::string> keys;
  for (const CellView& v : views)
    for (const auto& [k, val] : v.matrix_rest.items()) add_once(keys, k);
  std::vector<std::string> matches;
  for (const std::string& k : keys)
    if (k == name) return k;
  for (const std::string& k : keys)
    if (ends_with(k, "." + name)) matches.push_back(k);
  if (matches.size() == 1) return matches[0];
  std::vector<std::string> swept{kLabelAxis, kClientsAxis, kRecordSizeAxis};
  swept.insert(swept.end(), keys.begin(), keys.end());
  if (matches.size() > 1)
    throw UsageError(absl::StrFormat("report: %s %s: ambiguous in %s; it ends %s", option, name, path,
                                     absl::StrJoin(matches, ", ")));
  throw UsageError(absl::StrFormat("report: %s %s: not a swept key of %s; swept keys: %s", option, name,
                                   path, absl::StrJoin(swept, ", ")));
}

std::string short_axis(const std::string& axis) {
  const size_t dot = axis.rfind('.');
  return dot == std::string::npos ? axis : axis.substr(dot + 1);
}

}  // namespace

std::string report_metric_names() {
  std::vector<std::string> names;
  for (const Metric& m : kMetrics) names.push_back(m.name);
  return absl::StrJoin(names, ", ");
}

int report_command(const std::string& result_path, std::ostream& out, std::ostream& /*err*/,
                   const ReportOptions& options) {
  if (options.format != "text" && options.format != "markdown" && options.format != "csv")
    throw UsageError("report: --format " + options.format + ": expected text, markdown or csv");
  const Metric* metric = find_metric(options.metric);
  if (!metric)
    throw UsageError("report: --metric " + options.metric + ": unknown; expected one of " +
                     report_metric_names());
  if (options.wait_events) {
    for (const auto& [set, name] : {std::pair{!options.columns.empty(), "--columns"},
                                    std::pair{!options.ratio.empty(), "--ratio"},
                                    std::pair{options.metric != "tps", "--metric"}})
      if (set)
        throw UsageError(std::string("report: --wait-events puts the wait events in the columns; ") +
                         name + " does not apply to it");
  }
  const json doc = load_result_file(result_path);
  if (doc["cells"].empty()) {
    out << result_path << ": no cells\n";
    return 0;
  }

  Layout layout;
  {
    const std::vector<CellView> plain = views_of(doc);
    const std::string rows = options.rows.empty() ? std::string(kClientsAxis)
                                                  : resolve_axis(options.rows, "--rows", result_path, plain);
    const std::string columns = options.wait_events ? std::string()
                                : options.columns.empty()
                                    ? std::string(kRecordSizeAxis)
                                    : resolve_axis(options.columns, "--columns", result_path, plain);
    if (!options.rows.empty() && rows == columns)
      throw UsageError("report: --rows and --columns name the same key, " + rows);
    layout.columns = columns;
    layout.rows = {kLabelAxis};
    if (rows != kLabelAxis) layout.rows.push_back(rows);
    layout.rows.erase(std::remove(layout.rows.begin(), layout.rows.end(), columns), layout.rows.end());
    if (!options.ratio.empty()) {
      std::vector<std::string> labels;
      for (const CellView& v : plain) add_once(labels, v.label);
      if (std::find(labels.begin(), labels.end(), options.ratio) == labels.end())
        throw UsageError(absl::StrFormat("report: --ratio %s: no such variant in %s; variants: %s",
                                         options.ratio, result_path, absl::StrJoin(labels, ", ")));
    }
  }
  const std::string measure =
      options.wait_events ? "wait-event shares in % of the samples of the timed windows (all repetitions)"
                          : metric->measure;
  const std::vector<CellView> views = views_of(doc, layout, measure);
  const std::vector<Group> groups = group_views(views);

  // Where the caption says more than the default: what the columns are, what 100% is.
  std::string columns_note;
  if (!layout.columns.empty() && layout.columns != kRecordSizeAxis)
    columns_note = "; columns: " + layout.columns;
  std::string ratio_note;
  if (!options.ratio.empty()) {
    std::vector<std::string> same;
    for (const std::string& axis : layout.rows)
      if (axis != kLabelAxis) same.push_back(short_axis(axis));
    if (layout.columns != kLabelAxis) same.push_back(short_axis(layout.columns));
    ratio_note = absl::StrFormat("; in %% of %s: 100%% = %s's %s", options.ratio, options.ratio,
                                 metric->measure);
    ratio_note += layout.columns == kLabelAxis ? " in the same row"
                                               : " with the same " + absl::StrJoin(same, " and ");
  }

  const size_t label_at = static_cast<size_t>(
      std::find(layout.rows.begin(), layout.rows.end(), kLabelAxis) - layout.rows.begin());
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const Group& g = groups[gi];
    if (gi) out << '\n';
    std::string caption = g.footer + columns_note;
    Table t;
    if (options.wait_events) {
      // Events by their largest share in any cell of the table.
      std::map<size_t, std::map<std::string, double>> shares;
      std::map<std::string, double> largest;
      for (size_t i : g.cells) {
        shares[i] = wait_shares(*views[i].source);
        for (const auto& [name, s] : shares[i]) largest[name] = std::max(largest[name], s);
      }
      std::vector<std::pair<std::string, double>> ranked(largest.begin(), largest.end());
      std::stable_sort(ranked.begin(), ranked.end(),
                       [](const auto& a, const auto& b) { return a.second > b.second; });
      const size_t shown = std::min(ranked.size(), kWaitEventColumns);
      const bool other = ranked.size() > shown;
      t.header.push_back("");
      for (size_t e = 0; e < shown; ++e) t.header.push_back(ranked[e].first);
      if (other) t.header.push_back("other");
      if (ranked.empty()) t.header.push_back("samples");  // says "-" or "FAILED"
      std::vector<bool> keep_order;
      for (const std::string& axis : layout.rows) keep_order.push_back(axis == kLabelAxis);
      for (const auto& [parts, name] : ordered_rows(g, views, keep_order)) {
        const size_t i = g.slot.at(Slot{row_key(parts), ""});
        std::vector<std::string> line{name};
        const auto& s = shares[i];
        double listed = 0;
        for (size_t e = 0; e < shown; ++e) {
          const auto it = s.find(ranked[e].first);
          const double share = it == s.end() ? 0.0 : it->second;
          listed += share;
          line.push_back(!views[i].ok ? "FAILED" : s.empty() ? "-" : absl::StrFormat("%.1f%%", share));
        }
        if (other)
          line.push_back(!views[i].ok ? "FAILED"
                         : s.empty()  ? "-"
                                      : absl::StrFormat("%.1f%%", std::max(0.0, 100.0 - listed)));
        if (ranked.empty()) line.push_back(!views[i].ok ? "FAILED" : "-");
        t.body.push_back(std::move(line));
      }
      caption += ranked.empty()          ? std::string("; no wait-event samples")
                 : shown == ranked.size() ? absl::StrFormat("; every event sampled (%d)", shown)
                                          : absl::StrFormat(
                                                "; the %d events with the largest share in any row, "
                                                "other = the remaining %d event%s",
                                                shown, ranked.size() - shown,
                                                ranked.size() - shown == 1 ? "" : "s");
    } else if (options.ratio.empty()) {
      t = value_table(g, views, layout, [&](size_t i) -> std::string {
        const CellView& v = views[i];
        if (!v.ok) return "FAILED";
        const std::optional<double> x = metric_value(*metric, *v.source);
        return x ? number_text(*x, metric->decimals) : "-";
      });
    } else {
      bool missing_baseline = false;
      t = value_table(g, views, layout, [&](size_t i) -> std::string {
        const CellView& v = views[i];
        if (!v.ok) return "FAILED";
        const std::optional<double> x = metric_value(*metric, *v.source);
        if (!x) return "-";
        std::vector<std::string> parts = v.row_parts;
        std::string column = v.column_value;
        if (label_at < parts.size())
          parts[label_at] = options.ratio;
        else
          column = options.ratio;
        const auto it = g.slot.find(Slot{row_key(parts), column});
        std::optional<double> base;
        if (it != g.slot.end() && views[it->second].ok) base = metric_value(*metric, *views[it->second].source);
        if (!base || *base == 0) {
          missing_baseline = true;
          return "n/a";
        }
        return absl::StrFormat("%.1f%%", *x / *base * 100.0);
      });
      caption += ratio_note;
      if (missing_baseline) caption += "; n/a: " + options.ratio + " has no value there";
    }
    out << render_formatted(options.format, t, caption);
  }

  std::vector<const CellView*> failed;
  for (const auto& v : views)
    if (!v.ok) failed.push_back(&v);
  if (!failed.empty()) {
    const char* bullet = options.format == "markdown" ? "- " : options.format == "csv" ? "# " : "  ";
    out << absl::StrFormat("\n%sfailed cells (%d):\n", options.format == "csv" ? "# " : "", failed.size());
    for (const CellView* v : failed) out << bullet << v->describe() << ": " << v->error << '\n';
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

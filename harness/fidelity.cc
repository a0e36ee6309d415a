// `walbench compare RESULT --reference REF.csv`; what is matched and scored is described in
// fidelity.h, the JSON layout in harness/RESULTS.md ("Fidelity comparison files").
#include "harness/fidelity.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <initializer_list>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "harness/config.h"
#include "harness/report.h"
#include "harness/runner.h"

namespace walbench {

namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

constexpr int kFidelityVersion = 3;

[[noreturn]] void bad(const std::string& what) { throw UsageError(what); }

// A reference CSV's "clients" field: a positive integer; `where` names the file and line.
uint64_t parse_clients(const std::string& c, const std::string& where) {
  const bool digits = !c.empty() && c.size() < 19 &&
                      std::all_of(c.begin(), c.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
  if (!digits || std::stoull(c) == 0)
    bad(absl::StrFormat("%s: column \"clients\": expected a positive integer, found \"%s\"", where, c));
  return std::stoull(c);
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string in_quotes_text(const std::string& s) { return "\"" + s + "\""; }

// A reference CSV's header: each column's index, every column named once, the `needed` ones
// present (else "<where>: header lacks column(s) ...; <needs> (the header has ...)").
std::map<std::string, size_t> header_index(const std::vector<std::string>& header,
                                           const std::string& where,
                                           std::initializer_list<const char*> needed,
                                           const std::string& needs) {
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i].empty()) bad(absl::StrFormat("%s: header column %d has no name", where, i + 1));
    if (!index.emplace(header[i], i).second)
      bad(where + ": header names column " + in_quotes_text(header[i]) + " twice");
  }
  std::vector<std::string> missing;
  for (const char* need : needed)
    if (!index.count(need)) missing.push_back(need);
  if (!missing.empty())
    bad(absl::StrFormat("%s: header lacks column%s %s; %s (the header has %s)", where,
                        missing.size() == 1 ? "" : "s", absl::StrJoin(missing, ", "), needs,
                        absl::StrJoin(header, ", ")));
  return index;
}

// A whole string as a finite double.
std::optional<double> parse_number(const std::string& s) {
  if (s.empty()) return std::nullopt;
  const char* begin = s.c_str();
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(begin, &end);
  if (end != begin + s.size() || errno == ERANGE || !std::isfinite(v)) return std::nullopt;
  return v;
}

// The same value written two ways ("16" and "16.0" are the same number).
bool same_value(const std::string& a, const std::string& b) {
  if (a == b) return true;
  const auto x = parse_number(a), y = parse_number(b);
  return x && y && *x == *y;
}

std::string last_component(const std::string& key) {
  const auto dot = key.rfind('.');
  return dot == std::string::npos ? key : key.substr(dot + 1);
}

// ---------------------------------------------------------------------------------------------
// Reference CSV

std::vector<std::string> split_csv_line(const std::string& line, const std::string& where) {
  std::vector<std::string> fields;
  std::string cur;
  bool in_quotes = false, was_quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (in_quotes) {
      if (c == '"') {
        if (i + 1 < line.size() && line[i + 1] == '"') {
          cur += '"';
          ++i;
        } else {
          in_quotes = false;
        }
      } else {
        cur += c;
      }
    } else if (c == '"' && trim(cur).empty() && !was_quoted) {
      in_quotes = was_quoted = true;
      cur.clear();
    } else if (c == ',') {
      fields.push_back(was_quoted ? cur : trim(cur));
      cur.clear();
      was_quoted = false;
    } else if (was_quoted) {
      if (c != ' ' && c != '\t' && c != '\r') bad(where + ": text after a closing quote");
    } else {
      cur += c;
    }
  }
  if (in_quotes) bad(where + ": unterminated quote");
  fields.push_back(was_quoted ? cur : trim(cur));
  return fields;
}

// "record_size=16 tables=permanent"; "all rows" without series columns.
std::string series_name(const std::vector<std::string>& columns, const std::vector<std::string>& values) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < columns.size() && i < values.size(); ++i)
    parts.push_back(columns[i] + "=" + values[i]);
  return parts.empty() ? "all rows" : absl::StrJoin(parts, " ");
}

// ---------------------------------------------------------------------------------------------
// Result cells as the comparison sees them

struct Point {
  size_t cell = 0;            // index in /cells
  std::string label;          // the cell's label
  std::string variant;        // label after --variant renames
  uint64_t clients = 0;
  std::vector<std::string> values;  // per series column: the CSV's spelling when it matched one
  bool in_reference_series = true;  // false: some value is not in the (sliced) CSV
  std::string why_not;        // set when the cell cannot be placed at all
  bool ok = false;            // ok and a tps (the metric: summary.tps_median or one repetition's)
  double tps = 0;
  std::vector<double> rep_tps;  // each repetition's tps (2+ repetitions, all ok); else empty
  std::string error;
};

std::string clients_list(const std::vector<uint64_t>& clients) {
  std::vector<std::string> parts;
  for (uint64_t c : clients) parts.push_back(std::to_string(c));
  return absl::StrJoin(parts, " ");
}

std::string fmt_tps(double v) { return std::to_string(std::llround(v)); }
std::string fmt_ratio(const ojson& v) { return v.is_number() ? absl::StrFormat("%.2f", v.get<double>()) : "-"; }
std::string fmt_pct(double fraction) { return absl::StrFormat("%.1f%%", 100 * fraction); }

// "13 points; median 22.0%, 90th percentile 85.3%, max 940.1%; under 10%: 5, under 25%: 7, under 50%: 9"
std::string error_stats_text(const ojson& e) {
  const size_t n = e["points"].get<size_t>();
  if (n == 0) return "none scored";
  return absl::StrFormat("%d point%s; median %s, 90th percentile %s, max %s; under 10%%: %d, under 25%%: %d, "
                         "under 50%%: %d",
                         n, n == 1 ? "" : "s", fmt_pct(e["median"].get<double>()), fmt_pct(e["p90"].get<double>()),
                         fmt_pct(e["max"].get<double>()), e["under_10_pct"].get<size_t>(),
                         e["under_25_pct"].get<size_t>(), e["under_50_pct"].get<size_t>());
}

// Index of the highest tps (the first of equals).
size_t argmax(const std::vector<double>& v) {
  size_t best = 0;
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i] > v[best]) best = i;
  return best;
}

// "KEY=VALUE" with both sides non-empty.
std::pair<std::string, std::string> split_assignment(const std::string& s, const std::string& option,
                                                     const std::string& form) {
  const auto eq = s.find('=');
  if (eq == std::string::npos || trim(s.substr(0, eq)).empty() || trim(s.substr(eq + 1)).empty())
    bad(absl::StrFormat("compare: %s %s: expected %s", option, s, form));
  return {trim(s.substr(0, eq)), trim(s.substr(eq + 1))};
}

std::string winner_of(double ratio, double tie, const std::string& other, const std::string& baseline) {
  if (ratio > 1 + tie) return other;
  if (ratio < 1 - tie) return baseline;
  return "tie";
}

// ---------------------------------------------------------------------------------------------
// Fitted points (the `fitted` list of a config)

struct FittedEntry {
  std::string reason;
  std::vector<std::pair<std::string, std::string>> columns;  // reference column -> value text
  std::string origin;                                        // "FILE /JSON/path"
};

std::string fitted_columns_text(const FittedEntry& e) {
  std::vector<std::string> parts;
  for (const auto& [col, value] : e.columns) parts.push_back(col + "=" + value);
  return absl::StrJoin(parts, " ");
}

// Appends the entries of the `fitted` list at JSON path `where` of `file` (checked as
// harness/config.cc checks a config's), skipping entries already present (several configs may
// repeat one).
void read_fitted_list(const json& list, const std::string& file, const std::string& where,
                      std::vector<FittedEntry>& out) {
  const std::string expected = "expected a list of {\"reason\": TEXT, COLUMN: VALUE, ...}";
  if (!list.is_array()) bad(absl::StrFormat("%s: %s: %s", file, where, expected));
  for (size_t i = 0; i < list.size(); ++i) {
    const json& e = list[i];
    const std::string w = absl::StrFormat("%s/%d", where, i);
    if (!e.is_object()) bad(absl::StrFormat("%s: %s: %s", file, w, expected));
    if (!e.contains("reason") || !e["reason"].is_string())
      bad(absl::StrFormat("%s: %s/reason: expected a string saying what was taken from these rows", file, w));
    FittedEntry entry;
    entry.reason = e["reason"].get<std::string>();
    entry.origin = file + " " + w;
    for (const auto& [key, value] : e.items()) {
      if (key == "reason") continue;
      if (!value.is_string() && !value.is_number())
        bad(absl::StrFormat("%s: %s/%s: expected a string or a number (a value of that column)", file, w, key));
      entry.columns.emplace_back(key, value_text(value));
    }
    if (entry.columns.empty())
      bad(absl::StrFormat("%s: %s: the entry selects no column; name variant, clients or another column "
                          "of the reference table",
                          file, w));
    const bool seen = std::any_of(out.begin(), out.end(), [&](const FittedEntry& o) {
      return o.reason == entry.reason && o.columns == entry.columns;
    });
    if (!seen) out.push_back(std::move(entry));
  }
}

struct FittedList {
  std::vector<FittedEntry> entries;
  std::string source;  // where the list came from; empty without one
  std::vector<std::string> warnings;
};

// The fitted list of the result's context.config (the union over an array of configs), or of
// --fitted-from CONFIG in its place.
FittedList collect_fitted(const json& result, const FidelityOptions& opts) {
  FittedList f;
  std::vector<FittedEntry> recorded;
  if (result.contains("context") && result["context"].is_object() && result["context"].contains("config")) {
    const json& config = result["context"]["config"];
    if (config.is_object() && config.contains("fitted")) {
      read_fitted_list(config["fitted"], opts.result_path, "/context/config/fitted", recorded);
    } else if (config.is_array()) {
      for (size_t i = 0; i < config.size(); ++i)
        if (config[i].is_object() && config[i].contains("fitted"))
          read_fitted_list(config[i]["fitted"], opts.result_path,
                           absl::StrFormat("/context/config/%d/fitted", i), recorded);
    }
  }
  if (opts.fitted_from.empty()) {
    f.entries = std::move(recorded);
    if (!f.entries.empty()) f.source = "the result file's context.config";
    return f;
  }
  std::ifstream in(opts.fitted_from, std::ios::binary);
  if (!in) bad("compare --fitted-from " + opts.fitted_from + ": cannot read: " + std::strerror(errno));
  json config;
  try {
    config = json::parse(in);
  } catch (const json::parse_error& e) {
    bad("compare --fitted-from " + opts.fitted_from + ": not JSON: " + e.what());
  }
  if (!config.is_object() || !config.contains("fitted"))
    bad(opts.fitted_from + ": expected a config with a top-level \"fitted\" list (--fitted-from)");
  read_fitted_list(config["fitted"], opts.fitted_from, "/fitted", f.entries);
  f.source = "--fitted-from " + opts.fitted_from;
  auto same_entries = [](const std::vector<FittedEntry>& a, const std::vector<FittedEntry>& b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](const auto& x, const auto& y) {
             return x.reason == y.reason && x.columns == y.columns;
           });
  };
  if (!recorded.empty() && !same_entries(recorded, f.entries))
    f.warnings.push_back(absl::StrFormat(
        "the result file's context.config has its own fitted list (%d entr%s); --fitted-from %s replaces it",
        recorded.size(), recorded.size() == 1 ? "y" : "ies", opts.fitted_from));
  return f;
}

// Whether `row` has every column value that `e` names; `missing_column` is set to a column
// the table does not have (then nothing matches).
bool fitted_row(const FittedEntry& e, const ReferenceTable& ref, const ReferenceTable::Row& row,
                std::string* missing_column) {
  for (const auto& [col, value] : e.columns) {
    if (col == "variant") {
      if (row.variant != value) return false;
    } else if (col == "clients") {
      if (!same_value(std::to_string(row.clients), value)) return false;
    } else {
      const auto it = std::find(ref.series_columns.begin(), ref.series_columns.end(), col);
      if (it == ref.series_columns.end()) {
        if (missing_column) *missing_column = col;
        return false;
      }
      if (!same_value(row.values[static_cast<size_t>(it - ref.series_columns.begin())], value)) return false;
    }
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Score statistics

// The q-quantile of sorted, non-empty `v`, linear between the two nearest ranks.
double quantile(const std::vector<double>& v, double q) {
  const double h = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(h));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (h - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

// points, median, 90th percentile and max of `values` (null statistics when there are none).
ojson distribution(std::vector<double>& values) {
  std::sort(values.begin(), values.end());
  ojson s = ojson::object();
  s["points"] = values.size();
  s["median"] = values.empty() ? ojson(nullptr) : ojson(quantile(values, 0.5));
  s["p90"] = values.empty() ? ojson(nullptr) : ojson(quantile(values, 0.9));
  s["max"] = values.empty() ? ojson(nullptr) : ojson(values.back());
  return s;
}

// The distribution of ratio errors |r_res / r_pub - 1|.
ojson error_stats(std::vector<double> errors) {
  ojson s = distribution(errors);
  for (const auto& [key, limit] : {std::pair{"under_10_pct", 0.10}, {"under_25_pct", 0.25}, {"under_50_pct", 0.50}})
    s[key] = std::count_if(errors.begin(), errors.end(), [&](double e) { return e < limit; });
  return s;
}

// The distribution of peak distances (client-count ratios, >= 1).
ojson peak_stats(std::vector<double> distances, size_t curves) {
  std::sort(distances.begin(), distances.end());
  ojson s = ojson::object();
  s["curves"] = curves;
  s["scored"] = distances.size();
  s["median_distance"] = distances.empty() ? ojson(nullptr) : ojson(quantile(distances, 0.5));
  s["max_distance"] = distances.empty() ? ojson(nullptr) : ojson(distances.back());
  s["within_2x"] = std::count_if(distances.begin(), distances.end(), [](double d) { return d <= 2; });
  s["same_clients"] = std::count_if(distances.begin(), distances.end(), [](double d) { return d == 1; });
  return s;
}

// One target of the fidelity bar: how many of `of` meet it, and whether the share reaches it
// (share and met are null when nothing was scored).
ojson target_score(size_t count, size_t of, double target_share) {
  ojson t = ojson::object();
  t["count"] = count;
  t["of"] = of;
  t["share"] = of ? ojson(static_cast<double>(count) / static_cast<double>(of)) : ojson(nullptr);
  t["target"] = target_share;
  t["met"] = of ? ojson(static_cast<double>(count) >= target_share * static_cast<double>(of)) : ojson(nullptr);
  return t;
}

// The three targets of the fidelity bar (fidelity.h "Targets").
ojson target_scores(const std::vector<double>& distances, size_t winners_agree, size_t winners_scored,
                    const std::vector<double>& errors) {
  ojson t = ojson::object();
  const auto peaks_within = static_cast<size_t>(
      std::count_if(distances.begin(), distances.end(), [](double d) { return d <= kTargetPeakDistance; }));
  const auto ratios_within = static_cast<size_t>(
      std::count_if(errors.begin(), errors.end(), [](double e) { return e <= kTargetRatioError; }));
  t["peaks_within_2x"] = target_score(peaks_within, distances.size(), kTargetPeakShare);
  t["winners_agree"] = target_score(winners_agree, winners_scored, kTargetWinnerShare);
  t["ratios_within_35_pct"] = target_score(ratios_within, errors.size(), kTargetRatioShare);
  return t;
}

// How far apart a point's repetitions are: max / min - 1 per compared point with 2+ repetitions.
ojson spread_stats(std::vector<double> spreads) { return distribution(spreads); }

// "11/14 = 79% (target 80%: missed)"; "n/a" when nothing was scored.
std::string target_text(const ojson& t, bool with_target) {
  if (t["of"].get<size_t>() == 0) return "n/a";
  std::string text = absl::StrFormat("%d/%d = %.0f%%", t["count"].get<size_t>(), t["of"].get<size_t>(),
                                     100 * t["share"].get<double>());
  if (with_target)
    text += absl::StrFormat(" (target %.0f%%: %s)", 100 * t["target"].get<double>(),
                            t["met"].get<bool>() ? "met" : "missed");
  return text;
}

}  // namespace

ReferenceTable load_reference_csv(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) bad(path + ": cannot read reference table: " + std::strerror(errno));
  ReferenceTable t;
  t.path = path;
  std::string line;
  size_t lineno = 0;
  std::vector<std::string> header;
  size_t i_variant = 0, i_clients = 0, i_tps = 0;
  std::vector<size_t> i_series;
  std::map<std::tuple<std::string, std::vector<std::string>, uint64_t>, size_t> seen;  // -> line
  while (std::getline(in, line)) {
    ++lineno;
    if (lineno == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);  // UTF-8 BOM
    if (trim(line).empty()) continue;
    const std::string where = absl::StrFormat("%s:%d", path, lineno);
    std::vector<std::string> fields = split_csv_line(line, where);
    if (header.empty()) {
      header = fields;
      std::map<std::string, size_t> index = header_index(
          header, where, {"variant", "clients", "tps"},
          "a reference table needs variant, clients and tps");
      i_variant = index["variant"];
      i_clients = index["clients"];
      i_tps = index["tps"];
      for (size_t i = 0; i < header.size(); ++i)
        if (i != i_variant && i != i_clients && i != i_tps) {
          i_series.push_back(i);
          t.series_columns.push_back(header[i]);
        }
      continue;
    }
    if (fields.size() != header.size())
      bad(absl::StrFormat("%s: expected %d fields (%s), found %d", where, header.size(),
                          absl::StrJoin(header, ","), fields.size()));
    ReferenceTable::Row row;
    row.line = lineno;
    row.variant = fields[i_variant];
    if (row.variant.empty()) bad(where + ": column \"variant\" is empty");
    row.clients = parse_clients(fields[i_clients], where);
    const auto tps = parse_number(fields[i_tps]);
    if (!tps || *tps < 0)
      bad(absl::StrFormat("%s: column \"tps\": expected a non-negative number, found \"%s\"", where,
                          fields[i_tps]));
    row.tps = *tps;
    for (size_t i : i_series) row.values.push_back(fields[i]);
    const auto [it, fresh] = seen.emplace(std::make_tuple(row.variant, row.values, row.clients), lineno);
    if (!fresh)
      bad(absl::StrFormat("%s: duplicate row: variant=%s clients=%d%s (first at line %d)", where, row.variant,
                          row.clients, row.values.empty() ? "" : " " + series_name(t.series_columns, row.values),
                          it->second));
    t.rows.push_back(std::move(row));
  }
  if (in.bad()) bad(path + ": cannot read reference table: " + std::strerror(errno));
  if (header.empty()) bad(path + ": the reference table is empty; expected a header with variant, clients and tps");
  if (t.rows.empty()) bad(path + ": the reference table has a header but no rows");
  return t;
}

// One comparison of the result's tps with the table. `repetition`: score repetition r's tps
// (0-based) of every cell instead of its median; a failed cell (the runner fails a cell at its
// first failed repetition) or one without repetition r is a failed cell of that comparison, so
// every scoring of a file compares the same ok cells. `compared_cells`, when given, receives
// the indices of the cells compared.
ojson compare_tps(const json& result, const ReferenceTable& ref, const FidelityOptions& opts,
                  std::optional<size_t> repetition, std::vector<size_t>* compared_cells = nullptr) {
  const std::string& rpath = opts.result_path;
  const json& cells = result.at("cells");
  if (!(opts.tie_pct >= 0 && opts.tie_pct < 100))
    bad(absl::StrFormat("compare: --tie-pct %g: expected a percentage in [0, 100)", opts.tie_pct));
  const double tie = opts.tie_pct / 100;
  if (!(opts.win_threshold_pct >= 0 && opts.win_threshold_pct < 100))
    bad(absl::StrFormat("compare: --win-threshold-pct %g: expected a percentage in [0, 100)",
                        opts.win_threshold_pct));
  const double win_threshold = opts.win_threshold_pct / 100;
  const FittedList fitted = collect_fitted(result, opts);

  // --variant renames.
  std::map<std::string, std::string> rename;
  ojson renames_json = ojson::object();
  for (const auto& r : opts.renames) {
    const auto [from, to] = split_assignment(r, "--variant", "RESULT_LABEL=CSV_VARIANT");
    if (!rename.emplace(from, to).second) bad("compare: --variant renames " + in_quotes_text(from) + " twice");
    renames_json[from] = to;
  }

  // The matrix keys of the result, by last path component.
  std::map<std::string, std::set<std::string>> matrix_keys;  // last component -> full keys
  std::map<std::string, std::vector<std::string>> key_values;  // full key -> distinct value texts
  for (size_t i = 0; i < cells.size(); ++i) {
    const json& cell = cells[i];
    if (!cell.contains("matrix") || cell["matrix"].is_null()) continue;
    if (!cell["matrix"].is_object())
      bad(absl::StrFormat("%s: /cells/%d/matrix: expected an object", rpath, i));
    const std::string label = cell["label"].get<std::string>();
    for (const auto& [k, v] : cell["matrix"].items()) {
      if (k == "clients" || k == "strategy" || is_label_value(v, label)) continue;
      matrix_keys[last_component(k)].insert(k);
      auto& vals = key_values[k];
      if (std::find(vals.begin(), vals.end(), value_text(v)) == vals.end()) vals.push_back(value_text(v));
    }
  }
  for (const auto& [last, keys] : matrix_keys)
    if (keys.size() > 1)
      bad(absl::StrFormat("%s: matrix keys %s all end in \"%s\"; a CSV column cannot tell them apart",
                          rpath, absl::StrJoin(keys, " and "), last));
  auto key_names = [&] {
    std::vector<std::string> names;
    for (const auto& [last, keys] : matrix_keys) names.push_back(*keys.begin());
    return names.empty() ? std::string("none besides strategy and clients") : absl::StrJoin(names, ", ");
  };

  // CSV column values (in file order) to name in errors.
  auto csv_values = [&](size_t col, const std::vector<const ReferenceTable::Row*>& rows) {
    std::vector<std::string> vals;
    for (const auto* row : rows)
      if (std::find(vals.begin(), vals.end(), row->values[col]) == vals.end()) vals.push_back(row->values[col]);
    return vals;
  };
  std::vector<const ReferenceTable::Row*> rows;
  for (const auto& row : ref.rows) rows.push_back(&row);
  auto column_index = [&](const std::string& name) -> std::optional<size_t> {
    for (size_t i = 0; i < ref.series_columns.size(); ++i)
      if (ref.series_columns[i] == name) return i;
    return std::nullopt;
  };

  // --fix: slice the CSV and/or the result.
  std::map<std::string, std::string> fixed;           // column or matrix key name -> value
  std::map<std::string, std::string> fixed_spelling;  // CSV column -> the value as the CSV has it
  ojson fixed_json = ojson::object();
  for (const auto& f : opts.fixes) {
    const auto [col, value] = split_assignment(f, "--fix", "COLUMN=VALUE");
    if (col == "variant" || col == "clients" || col == "tps")
      bad("compare: --fix " + f + ": " + col + " is what is compared; fix another column");
    const auto ci = column_index(col);
    if (!ci && !matrix_keys.count(col))
      bad(absl::StrFormat("compare: --fix %s: \"%s\" is neither a column of %s (%s) nor a matrix key "
                          "of %s (%s)",
                          f, col, ref.path,
                          ref.series_columns.empty() ? "only variant, clients, tps"
                                                     : absl::StrJoin(ref.series_columns, ", "),
                          rpath, key_names()));
    if (!fixed.emplace(col, value).second) bad("compare: --fix names " + in_quotes_text(col) + " twice");
    fixed_json[col] = value;
    if (ci) {
      const std::vector<std::string> before = csv_values(*ci, rows);
      std::vector<const ReferenceTable::Row*> kept;
      for (const auto* row : rows)
        if (same_value(row->values[*ci], value)) kept.push_back(row);
      if (kept.empty())
        bad(absl::StrFormat("compare: --fix %s: no row of %s has %s=%s (its values: %s)", f, ref.path,
                            col, value, absl::StrJoin(before, ", ")));
      fixed_spelling[col] = kept.front()->values[*ci];  // "16" for --fix record_size=16.0
      rows = std::move(kept);
    }
  }

  // Every CSV column is a matrix key or fixed; every matrix key is a CSV column or fixed.
  for (size_t i = 0; i < ref.series_columns.size(); ++i) {
    const std::string& col = ref.series_columns[i];
    if (!fixed.count(col) && !matrix_keys.count(col))
      bad(absl::StrFormat("%s: column \"%s\" is not a matrix key of %s (its keys: %s); compare one "
                          "slice with --fix %s=VALUE (values: %s)",
                          ref.path, col, rpath, key_names(), col, absl::StrJoin(csv_values(i, rows), ", ")));
  }
  for (const auto& [last, keys] : matrix_keys) {
    if (column_index(last) || fixed.count(last)) continue;
    const std::string& key = *keys.begin();
    bad(absl::StrFormat("%s: matrix key %s has no column in %s; compare one slice with --fix %s=VALUE "
                        "(values: %s)",
                        rpath, key, ref.path, last, absl::StrJoin(key_values[key], ", ")));
  }

  // Place every result cell.
  std::vector<Point> points;
  size_t left_out_by_fix = 0;
  for (size_t i = 0; i < cells.size(); ++i) {
    const json& cell = cells[i];
    const json matrix = cell.contains("matrix") && cell["matrix"].is_object() ? cell["matrix"] : json::object();
    std::map<std::string, std::pair<std::string, const json*>> by_last;  // last -> (key, value)
    for (const auto& [k, v] : matrix.items()) by_last[last_component(k)] = {k, &v};
    // The texts that a CSV value may equal for this matrix value.
    auto texts_of = [&](const std::string& last) {
      std::vector<std::string> texts{value_text(*by_last[last].second)};
      if (last == "record_size" && cell.contains("workload") && cell["workload"].is_object() &&
          cell["workload"].contains("record_size_label") && cell["workload"]["record_size_label"].is_string())
        texts.push_back(cell["workload"]["record_size_label"].get<std::string>());
      return texts;
    };
    auto value_matches = [&](const std::string& last, const std::string& csv) {
      for (const auto& t : texts_of(last))
        if (same_value(t, csv)) return true;
      return false;
    };

    bool in_slice = true;
    for (const auto& [col, value] : fixed)
      if (matrix_keys.count(col) && (!by_last.count(col) || !value_matches(col, value))) in_slice = false;
    if (!in_slice) {
      ++left_out_by_fix;
      continue;
    }

    Point p;
    p.cell = i;
    p.label = cell["label"].get<std::string>();
    p.variant = rename.count(p.label) ? rename[p.label] : p.label;
    p.clients = cell["clients"].get<uint64_t>();
    for (size_t c = 0; c < ref.series_columns.size(); ++c) {
      const std::string& col = ref.series_columns[c];
      if (fixed.count(col)) {
        p.values.push_back(fixed_spelling[col]);
        continue;
      }
      if (!by_last.count(col)) {
        p.values.push_back("?");
        p.why_not = "its matrix has no " + col;
        continue;
      }
      std::string spelled;
      for (const auto& v : csv_values(c, rows))
        if (value_matches(col, v)) {
          spelled = v;
          break;
        }
      if (spelled.empty()) {
        p.in_reference_series = false;
        spelled = value_text(*by_last[col].second);
      }
      p.values.push_back(spelled);
    }
    p.ok = cell["ok"].get<bool>();
    const json* summary = cell.contains("summary") ? &cell["summary"] : nullptr;
    if (repetition) {
      const json* reps = cell.contains("repetitions") && cell["repetitions"].is_array() ? &cell["repetitions"] : nullptr;
      const json* r = reps && *repetition < reps->size() ? &(*reps)[*repetition] : nullptr;
      if (!p.ok) {
        // the cell failed: not compared in any scoring
      } else if (!r) {
        p.error = absl::StrFormat("no repetition %d", *repetition + 1);
        p.ok = false;
      } else if (r->is_object() && r->value("ok", false) && r->contains("tps") && (*r)["tps"].is_number()) {
        p.tps = (*r)["tps"].get<double>();
      } else {
        p.error = absl::StrFormat("repetition %d failed", *repetition + 1);
        p.ok = false;
      }
    } else if (p.ok && summary && summary->is_object() && summary->contains("tps_median") &&
               (*summary)["tps_median"].is_number()) {
      p.tps = (*summary)["tps_median"].get<double>();
      if (cell.contains("repetitions") && cell["repetitions"].is_array() && cell["repetitions"].size() >= 2) {
        for (const auto& r : cell["repetitions"])
          if (r.is_object() && r.value("ok", false) && r.contains("tps") && r["tps"].is_number())
            p.rep_tps.push_back(r["tps"].get<double>());
        if (p.rep_tps.size() != cell["repetitions"].size()) p.rep_tps.clear();
      }
    } else {
      if (p.ok) p.error = "no summary.tps_median";
      p.ok = false;
    }
    if (!p.ok && p.error.empty())
      p.error = cell.contains("error") && cell["error"].is_string() ? cell["error"].get<std::string>() : "failed";
    points.push_back(std::move(p));
  }

  // Series, variants in CSV order; the reference tps of each point.
  std::vector<std::vector<std::string>> series;
  std::vector<std::string> variants;
  std::map<std::tuple<std::string, std::vector<std::string>, uint64_t>, double> ref_tps;
  std::map<std::pair<std::string, std::vector<std::string>>, std::vector<uint64_t>> ref_clients;
  for (const auto* row : rows) {
    if (std::find(series.begin(), series.end(), row->values) == series.end()) series.push_back(row->values);
    if (std::find(variants.begin(), variants.end(), row->variant) == variants.end()) variants.push_back(row->variant);
    ref_tps[{row->variant, row->values, row->clients}] = row->tps;
    ref_clients[{row->variant, row->values}].push_back(row->clients);
  }
  for (auto& [k, v] : ref_clients) std::sort(v.begin(), v.end());

  // Fitted reference points (over the whole table: an entry may lie outside a --fix slice).
  std::map<std::tuple<std::string, std::vector<std::string>, uint64_t>, std::vector<size_t>> fitted_by;  // -> entries
  std::vector<std::string> warnings = fitted.warnings;
  for (size_t e = 0; e < fitted.entries.size(); ++e) {
    std::string missing_column;
    size_t matched = 0;
    for (const auto& row : ref.rows)
      if (fitted_row(fitted.entries[e], ref, row, &missing_column)) {
        fitted_by[{row.variant, row.values, row.clients}].push_back(e);
        ++matched;
      }
    if (matched == 0)
      warnings.push_back(absl::StrFormat("fitted entry %s (%s) matches no row of %s%s", fitted.entries[e].origin,
                                         fitted_columns_text(fitted.entries[e]), ref.path,
                                         missing_column.empty() ? "" : ": it has no column " + missing_column));
  }

  // Result side: the first ok cell of each (variant, series, clients) counts.
  std::map<std::tuple<std::string, std::vector<std::string>, uint64_t>, const Point*> res;
  std::set<std::tuple<std::string, std::vector<std::string>, uint64_t>> res_any;  // ok or failed
  ojson failed = ojson::array();
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<uint64_t>> result_only;  // (label, series, why)
  std::vector<std::tuple<std::string, std::string, std::string>> result_only_order;
  auto add_result_only = [&](const Point& p, const std::string& why) {
    const auto key = std::make_tuple(p.label, series_name(ref.series_columns, p.values), why);
    if (!result_only.count(key)) result_only_order.push_back(key);
    result_only[key].push_back(p.clients);
  };
  for (const Point& p : points) {
    const auto key = std::make_tuple(p.variant, p.values, p.clients);
    const bool known_variant = std::find(variants.begin(), variants.end(), p.variant) != variants.end();
    if (!p.why_not.empty()) {
      add_result_only(p, p.why_not);
    } else if (!known_variant) {
      add_result_only(p, rename.count(p.label)
                             ? "renamed to " + p.variant + ", not a variant of the reference"
                             : "not a variant of the reference; rename with --variant " + p.label + "=NAME");
    } else if (!p.in_reference_series) {
      add_result_only(p, "no such series in the reference");
    } else if (!p.ok) {
      failed.push_back({{"label", p.label},
                        {"series", series_name(ref.series_columns, p.values)},
                        {"clients", p.clients},
                        {"error", p.error}});
      res_any.insert(key);
    } else if (!ref_tps.count(key)) {
      add_result_only(p, "client count not in the reference");
    } else if (res.count(key)) {
      add_result_only(p, "a second cell for the same point (the first is compared)");
    } else {
      res[key] = &p;
      if (compared_cells) compared_cells->push_back(p.cell);
      res_any.insert(key);
    }
  }

  // Curves.
  struct Curve {
    std::string variant, label;
    std::vector<uint64_t> grid;
    std::vector<double> ref, res;
    std::vector<std::vector<double>> res_reps;  // each repetition's tps (empty: one repetition)
    std::vector<bool> fitted;  // per grid point: the reference row is fitted
  };
  std::vector<std::vector<Curve>> curves(series.size());
  std::set<std::string> compared_variants;
  ojson reference_only = ojson::array();
  size_t overlapping = 0;
  for (size_t s = 0; s < series.size(); ++s) {
    for (const auto& v : variants) {
      const auto it = ref_clients.find({v, series[s]});
      if (it == ref_clients.end()) continue;
      Curve c;
      c.variant = v;
      std::vector<uint64_t> missing;
      for (uint64_t n : it->second) {
        const auto key = std::make_tuple(v, series[s], n);
        if (res.count(key)) {
          c.grid.push_back(n);
          c.ref.push_back(ref_tps[key]);
          c.res.push_back(res[key]->tps);
          c.res_reps.push_back(res[key]->rep_tps);
          c.fitted.push_back(fitted_by.count(key) > 0);
          if (c.label.empty()) c.label = res[key]->label;
        } else if (!res_any.count(key)) {
          missing.push_back(n);
        }
      }
      if (!missing.empty())
        reference_only.push_back({{"variant", v},
                                  {"series", series_name(ref.series_columns, series[s])},
                                  {"clients", missing}});
      if (c.grid.empty()) continue;
      overlapping += c.grid.size();
      compared_variants.insert(v);
      curves[s].push_back(std::move(c));
    }
  }
  if (overlapping == 0) {
    std::set<std::string> labels;
    for (const Point& p : points) labels.insert(p.variant);
    bad(absl::StrFormat("compare: no cell of %s matches a row of %s (reference variants: %s; result "
                        "variants: %s%s); check --variant and --fix",
                        rpath, ref.path, absl::StrJoin(variants, ", "),
                        labels.empty() ? "none" : absl::StrJoin(labels, ", "),
                        left_out_by_fix ? absl::StrFormat(", %d cells outside the --fix slice", left_out_by_fix) : ""));
  }

  // The ratio denominator.
  std::string baseline;
  std::string no_ratio_reason;
  std::vector<std::string> compared;  // CSV order
  for (const auto& v : variants)
    if (compared_variants.count(v)) compared.push_back(v);
  if (!opts.baseline.empty()) {
    baseline = rename.count(opts.baseline) ? rename[opts.baseline] : opts.baseline;
    if (!compared_variants.count(baseline))
      bad(absl::StrFormat("compare: --baseline %s: not a compared variant (compared: %s)", opts.baseline,
                          absl::StrJoin(compared, ", ")));
  } else if (compared.size() == 2) {
    baseline = compared[0];
  } else if (compared.size() == 1) {
    no_ratio_reason = "one variant";
  } else {
    no_ratio_reason = absl::StrFormat("%d variants; pick the denominator with --baseline", compared.size());
  }

  // Build the JSON.
  ojson out = ojson::object();
  out["fidelity_version"] = kFidelityVersion;
  out["result"] = rpath;
  out["reference"] = ref.path;
  {
    std::string setup;
    for (const Point& p : points)
      if (p.ok) {
        setup = setup_line(cells[p.cell], json::object());
        break;
      }
    out["result_setup"] = setup;
  }
  out["metric"] = repetition ? absl::StrFormat("repetitions[%d].tps", *repetition) : "summary.tps_median";
  out["tie_pct"] = opts.tie_pct;
  out["win_threshold_pct"] = opts.win_threshold_pct;
  out["renames"] = renames_json;
  out["fixed"] = fixed_json;
  out["columns"] = ref.series_columns;
  out["variants"] = compared;
  out["baseline"] = baseline.empty() ? ojson(nullptr) : ojson(baseline);
  if (!no_ratio_reason.empty()) out["no_ratios"] = no_ratio_reason;

  std::vector<size_t> entry_points(fitted.entries.size(), 0);  // compared points each entry covers
  size_t fitted_points = 0, curves_total = 0;
  size_t winners_agree = 0, winners_scored = 0, published_ties = 0, published_ties_result_tie = 0;
  std::vector<double> all_errors, all_distances;
  std::vector<double> spreads;  // per compared point with 2+ repetitions: max / min - 1
  std::vector<std::string> mismatches;
  ojson series_json = ojson::array();
  for (size_t s = 0; s < series.size(); ++s) {
    if (curves[s].empty()) continue;
    const std::string name = series_name(ref.series_columns, series[s]);
    ojson sj = ojson::object();
    sj["name"] = name;
    ojson values = ojson::object();
    for (size_t c = 0; c < ref.series_columns.size(); ++c) values[ref.series_columns[c]] = series[s][c];
    sj["values"] = values;
    std::vector<double> series_distances, series_errors;
    size_t series_agree = 0, series_scored = 0, series_ties = 0, series_ties_result_tie = 0;
    ojson curves_json = ojson::array();
    for (const Curve& c : curves[s]) {
      ++curves_total;
      ojson cj = ojson::object();
      cj["variant"] = c.variant;
      cj["result_label"] = c.label;
      cj["clients"] = c.grid;
      cj["base_clients"] = c.grid[0];
      ojson pts = ojson::array();
      std::vector<size_t> unfitted;  // indices into the grid
      for (size_t k = 0; k < c.grid.size(); ++k) {
        ojson pj = ojson::object();
        pj["clients"] = c.grid[k];
        pj["reference_tps"] = c.ref[k];
        pj["result_tps"] = c.res[k];
        const std::vector<double>& reps = c.res_reps[k];
        if (reps.empty()) {
          pj["result_tps_range"] = nullptr;
          pj["result_tps_repetitions"] = nullptr;
        } else {
          const auto [lo, hi] = std::minmax_element(reps.begin(), reps.end());
          pj["result_tps_range"] = ojson::array({*lo, *hi});
          pj["result_tps_repetitions"] = reps;
          if (*lo > 0) spreads.push_back(*hi / *lo - 1);
        }
        pj["reference_shape"] = c.ref[0] > 0 ? ojson(c.ref[k] / c.ref[0]) : ojson(nullptr);
        pj["result_shape"] = c.res[0] > 0 ? ojson(c.res[k] / c.res[0]) : ojson(nullptr);
        pj["fitted"] = static_cast<bool>(c.fitted[k]);
        pts.push_back(pj);
        if (c.fitted[k]) {
          ++fitted_points;
          for (size_t e : fitted_by[{c.variant, series[s], c.grid[k]}]) ++entry_points[e];
        } else {
          unfitted.push_back(k);
        }
      }
      cj["points"] = pts;
      // Peaks among the unfitted common points, and over every client count of each side.
      ojson peak = ojson::object();
      std::vector<uint64_t> peak_grid;
      std::vector<double> uref, ures;
      for (size_t k : unfitted) {
        peak_grid.push_back(c.grid[k]);
        uref.push_back(c.ref[k]);
        ures.push_back(c.res[k]);
      }
      peak["clients"] = peak_grid;
      if (peak_grid.size() >= 3) {
        const size_t pr = argmax(uref), ps = argmax(ures);
        const uint64_t a = peak_grid[pr], b = peak_grid[ps];
        const double distance = static_cast<double>(std::max(a, b)) / static_cast<double>(std::min(a, b));
        peak["reference"] = a;
        peak["result"] = b;
        peak["distance"] = distance;
        peak["steps"] = pr > ps ? pr - ps : ps - pr;
        series_distances.push_back(distance);
        if (distance > 2)
          mismatches.push_back(absl::StrFormat("peak %s %s: reference at %d clients, result at %d (%.1fx apart)", name,
                                               c.variant, a, b, distance));
      } else {
        peak["reference"] = nullptr;
        peak["result"] = nullptr;
        peak["distance"] = nullptr;
        peak["steps"] = nullptr;
      }
      {
        const auto& all = ref_clients[{c.variant, series[s]}];
        std::vector<double> tps;
        for (uint64_t n : all) tps.push_back(ref_tps[{c.variant, series[s], n}]);
        peak["reference_all"] = all[argmax(tps)];
        std::vector<uint64_t> rc;
        std::vector<double> rt;
        for (const Point& p : points)
          if (p.ok && p.why_not.empty() && p.in_reference_series && p.variant == c.variant && p.values == series[s] &&
              std::find(rc.begin(), rc.end(), p.clients) == rc.end()) {
            rc.push_back(p.clients);
            rt.push_back(p.tps);
          }
        peak["result_all"] = rc[argmax(rt)];
      }
      cj["peak"] = peak;
      curves_json.push_back(cj);
    }
    sj["curves"] = curves_json;

    ojson ratios = ojson::array();
    const Curve* base = nullptr;
    for (const Curve& c : curves[s])
      if (c.variant == baseline) base = &c;
    if (base) {
      for (const Curve& c : curves[s]) {
        if (&c == base) continue;
        ojson rj = ojson::object();
        rj["variant"] = c.variant;
        rj["baseline"] = baseline;
        ojson pts = ojson::array();
        std::vector<double> errors;
        for (size_t k = 0; k < c.grid.size(); ++k) {
          const auto bk = std::find(base->grid.begin(), base->grid.end(), c.grid[k]);
          if (bk == base->grid.end()) continue;
          const size_t b = static_cast<size_t>(bk - base->grid.begin());
          if (!(base->ref[b] > 0) || !(base->res[b] > 0)) continue;
          const double rr = c.ref[k] / base->ref[b], sr = c.res[k] / base->res[b];
          const bool is_fitted = c.fitted[k] || base->fitted[b];
          const std::string sw = winner_of(sr, tie, c.variant, baseline);
          ojson pj = ojson::object();
          pj["clients"] = c.grid[k];
          pj["reference"] = rr;
          pj["result"] = sr;
          pj["kind"] = "fitted";  // the keys in their documented order; set below
          pj["error"] = nullptr;
          pj["reference_winner"] = nullptr;
          pj["result_winner"] = sw;
          pj["agree"] = nullptr;
          if (!is_fitted) {
            const double error = rr > 0 ? std::abs(sr / rr - 1) : std::numeric_limits<double>::infinity();
            pj["error"] = std::isfinite(error) ? ojson(error) : ojson(nullptr);
            if (std::isfinite(error)) errors.push_back(error);
            if (std::abs(rr - 1) > win_threshold) {
              const std::string rw = rr > 1 ? c.variant : baseline;
              const bool agree = rw == sw;
              pj["kind"] = "scored";
              pj["reference_winner"] = rw;
              pj["agree"] = agree;
              ++series_scored;
              if (agree) {
                ++series_agree;
              } else {
                mismatches.push_back(absl::StrFormat(
                    "winner %s at %d client%s (%s / %s): reference %s (%.2f), result %s (%.2f)", name, c.grid[k],
                    c.grid[k] == 1 ? "" : "s", c.variant, baseline, rw, rr, sw, sr));
              }
            } else {
              pj["kind"] = "published_tie";
              pj["reference_winner"] = "tie";
              pj["agree"] = nullptr;
              ++series_ties;
              if (sw == "tie") ++series_ties_result_tie;
            }
          }
          pts.push_back(pj);
        }
        rj["points"] = pts;
        rj["ratio_errors"] = error_stats(errors);
        series_errors.insert(series_errors.end(), errors.begin(), errors.end());
        if (!pts.empty()) ratios.push_back(rj);
      }
    }
    sj["ratios"] = ratios;
    ojson score = ojson::object();
    score["peak_distances"] = series_distances;
    score["winners_agree"] = series_agree;
    score["winners_scored"] = series_scored;
    score["published_ties"] = series_ties;
    score["published_ties_result_tie"] = series_ties_result_tie;
    score["ratio_errors"] = error_stats(series_errors);
    sj["score"] = score;
    series_json.push_back(sj);
    all_errors.insert(all_errors.end(), series_errors.begin(), series_errors.end());
    all_distances.insert(all_distances.end(), series_distances.begin(), series_distances.end());
    winners_agree += series_agree;
    winners_scored += series_scored;
    published_ties += series_ties;
    published_ties_result_tie += series_ties_result_tie;
  }

  ojson fitted_json = ojson::object();
  fitted_json["source"] = fitted.source.empty() ? ojson(nullptr) : ojson(fitted.source);
  ojson entries = ojson::array();
  for (size_t e = 0; e < fitted.entries.size(); ++e) {
    ojson cols = ojson::object();
    for (const auto& [col, value] : fitted.entries[e].columns) cols[col] = value;
    entries.push_back({{"columns", cols},
                       {"reason", fitted.entries[e].reason},
                       {"origin", fitted.entries[e].origin},
                       {"compared_points", entry_points[e]}});
  }
  fitted_json["entries"] = entries;
  out["fitted"] = fitted_json;
  out["warnings"] = warnings;
  out["series"] = series_json;

  ojson summary = ojson::object();
  summary["fitted_points"] = fitted_points;
  summary["peaks"] = peak_stats(all_distances, curves_total);
  summary["winners"] = {{"agree", winners_agree}, {"scored", winners_scored}};
  summary["published_ties"] = {{"points", published_ties}, {"result_tie", published_ties_result_tie}};
  summary["ratio_errors"] = error_stats(all_errors);
  summary["targets"] = target_scores(all_distances, winners_agree, winners_scored, all_errors);
  summary["repetition_spread"] = spread_stats(spreads);
  summary["mismatches"] = mismatches;
  out["summary"] = summary;
  out["reference_only"] = reference_only;
  ojson ro = ojson::array();
  for (const auto& key : result_only_order) {
    auto clients = result_only[key];
    std::sort(clients.begin(), clients.end());
    ro.push_back({{"label", std::get<0>(key)}, {"series", std::get<1>(key)}, {"clients", clients},
                  {"why", std::get<2>(key)}});
  }
  out["result_only"] = ro;
  out["failed"] = failed;
  out["left_out_by_fix"] = left_out_by_fix;
  return out;
}

ojson fidelity_compare(const json& result, const ReferenceTable& ref, const FidelityOptions& opts) {
  std::vector<size_t> compared;
  ojson out = compare_tps(result, ref, opts, std::nullopt, &compared);
  const json& cells = result.at("cells");
  // Over the compared cells: the most repetitions one has, and whether they all ran on the
  // simulator (where a repetition is a seed; on real threads or a server it is another run).
  size_t repetitions = 0;
  bool simulated = !compared.empty();
  for (size_t i : compared) {
    const json& cell = cells[i];
    if (cell.contains("repetitions") && cell["repetitions"].is_array())
      repetitions = std::max(repetitions, cell["repetitions"].size());
    const bool sim = cell.contains("platform") && cell["platform"].is_object() &&
                     cell["platform"].value("kind", std::string()) == "sim";
    simulated = simulated && sim;
  }
  out["repetitions_are_seeds"] = simulated;
  ojson per = ojson::array();
  for (size_t r = 0; repetitions >= 2 && r < repetitions; ++r) {
    const ojson one = compare_tps(result, ref, opts, r);
    std::set<uint64_t> seeds;
    for (size_t i : compared) {
      const json& cell = cells[i];
      if (cell.contains("repetitions") && cell["repetitions"].is_array() && r < cell["repetitions"].size() &&
          cell["repetitions"][r].is_object() && cell["repetitions"][r].contains("seed") &&
          cell["repetitions"][r]["seed"].is_number_unsigned())
        seeds.insert(cell["repetitions"][r]["seed"].get<uint64_t>());
    }
    const ojson& sm = one["summary"];
    per.push_back({{"repetition", r + 1},
                   {"seeds", seeds},
                   {"targets", sm["targets"]},
                   {"peaks", sm["peaks"]},
                   {"winners", sm["winners"]},
                   {"published_ties", sm["published_ties"]},
                   {"ratio_errors", sm["ratio_errors"]},
                   {"mismatches", sm["mismatches"].size()},
                   {"failed", one["failed"].size()}});
  }
  out["per_repetition"] = per;
  return out;
}

std::string render_fidelity(const ojson& cmp) {
  std::ostringstream o;
  o << "compare: RESULT " << cmp["result"].get<std::string>() << " vs REFERENCE "
    << cmp["reference"].get<std::string>() << '\n';
  if (!cmp["result_setup"].get<std::string>().empty())
    o << "result: " << cmp["result_setup"].get<std::string>() << '\n';
  const double tie_pct = cmp["tie_pct"].get<double>();
  const double threshold_pct = cmp["win_threshold_pct"].get<double>();
  o << absl::StrFormat(
      "scored: how far each curve's peak is from the published one (a ratio of client counts), the "
      "ratio error |result ratio / published ratio - 1| at every point, and the winner where the "
      "published ratio is off 1 by more than %g%% (the result must pick it by more than %g%%); tps and "
      "shapes are shown, not scored\n",
      threshold_pct, tie_pct);
  const ojson& fitted = cmp["fitted"];
  if (fitted["source"].is_null())
    o << "fitted: none (no fitted list in the result's config)\n";
  else
    o << absl::StrFormat("fitted: %d compared points marked (fitted), shown and not scored (list from %s)\n",
                         cmp["summary"]["fitted_points"].get<size_t>(), fitted["source"].get<std::string>());
  if (!cmp["renames"].empty()) {
    std::vector<std::string> parts;
    for (const auto& [k, v] : cmp["renames"].items()) parts.push_back(k + " as " + v.get<std::string>());
    o << "variants: " << absl::StrJoin(parts, ", ") << '\n';
  }
  if (!cmp["fixed"].empty()) {
    std::vector<std::string> parts;
    for (const auto& [k, v] : cmp["fixed"].items()) parts.push_back(k + "=" + v.get<std::string>());
    o << "slice: " << absl::StrJoin(parts, ", ");
    if (cmp["left_out_by_fix"].get<size_t>() > 0)
      o << absl::StrFormat(" (%d result cells outside it left out)", cmp["left_out_by_fix"].get<size_t>());
    o << '\n';
  }
  auto fitted_mark = [](const ojson& p) { return p["fitted"].get<bool>() ? std::string(" (fitted)") : std::string(); };

  for (const auto& s : cmp["series"]) {
    o << '\n' << s["name"].get<std::string>() << '\n';
    // Shapes.
    std::vector<std::vector<std::string>> rows;
    std::set<uint64_t> bases;
    bool ranges = false;
    for (const auto& c : s["curves"])
      for (const auto& p : c["points"]) ranges = ranges || !p["result_tps_range"].is_null();
    for (const auto& c : s["curves"]) {
      bases.insert(c["base_clients"].get<uint64_t>());
      for (const auto& p : c["points"]) {
        rows.push_back({absl::StrFormat("%s_%d_clients", c["variant"].get<std::string>(), p["clients"].get<uint64_t>()) +
                            fitted_mark(p),
                        fmt_tps(p["reference_tps"].get<double>()), fmt_tps(p["result_tps"].get<double>()),
                        fmt_ratio(p["reference_shape"]), fmt_ratio(p["result_shape"])});
        if (ranges) {
          const ojson& range = p["result_tps_range"];
          rows.back().insert(rows.back().begin() + 3, range.is_null() ? "-"
                                                                       : fmt_tps(range[0].get<double>()) + "-" +
                                                                             fmt_tps(range[1].get<double>()));
        }
      }
    }
    if (ranges)
      o << render_table({"", "reference tps", "result tps", "result range", "reference shape", "result shape"}, rows);
    else
      o << render_table({"", "reference tps", "result tps", "reference shape", "result shape"}, rows);
    if (bases.size() == 1) {
      const uint64_t b = *bases.begin();
      o << absl::StrFormat("shape: tps / tps of the same variant at %d client%s\n", b, b == 1 ? "" : "s");
    } else {
      std::vector<std::string> parts;
      for (const auto& c : s["curves"])
        parts.push_back(absl::StrFormat("%s at %d", c["variant"].get<std::string>(), c["base_clients"].get<uint64_t>()));
      o << "shape: tps / tps of the same variant at its smallest common client count (" << absl::StrJoin(parts, ", ")
        << ")\n";
    }

    // Peaks.
    rows.clear();
    std::set<std::vector<uint64_t>> grids;
    for (const auto& c : s["curves"]) {
      const auto& pk = c["peak"];
      grids.insert(pk["clients"].get<std::vector<uint64_t>>());
      const bool scored = !pk["distance"].is_null();
      rows.push_back({c["variant"].get<std::string>(),
                      scored ? std::to_string(pk["reference"].get<uint64_t>()) : "-",
                      scored ? std::to_string(pk["result"].get<uint64_t>()) : "-",
                      scored ? absl::StrFormat("%.2fx", pk["distance"].get<double>()) : "n/a",
                      scored ? std::to_string(pk["steps"].get<uint64_t>()) : "-",
                      std::to_string(pk["reference_all"].get<uint64_t>()),
                      std::to_string(pk["result_all"].get<uint64_t>())});
    }
    o << '\n'
      << render_table({"peak clients", "reference", "result", "distance", "steps", "reference (all)", "result (all)"},
                      rows);
    if (grids.size() == 1) {
      o << "unfitted client counts both have: " << clients_list(*grids.begin()) << '\n';
    } else {
      std::vector<std::string> parts;
      for (const auto& c : s["curves"])
        parts.push_back(c["variant"].get<std::string>() + " " +
                        clients_list(c["peak"]["clients"].get<std::vector<uint64_t>>()));
      o << "unfitted client counts both have: " << absl::StrJoin(parts, "; ") << '\n';
    }
    o << "distance: the larger peak client count over the smaller; steps: positions apart on those client "
         "counts; (all): the peak over every client count of that side alone; n/a: fewer than 3 unfitted "
         "common client counts\n";

    // Ratios.
    for (const auto& r : s["ratios"]) {
      rows.clear();
      for (const auto& p : r["points"]) {
        const std::string kind = p["kind"].get<std::string>();
        std::string published = kind == "fitted"          ? "fitted"
                                : kind == "published_tie" ? absl::StrFormat("tie (within %g%%)", threshold_pct)
                                                          : p["reference_winner"].get<std::string>();
        rows.push_back({absl::StrFormat("%d_clients", p["clients"].get<uint64_t>()) + (kind == "fitted" ? " (fitted)" : ""),
                        fmt_ratio(p["reference"]), fmt_ratio(p["result"]),
                        p["error"].is_null() ? "-" : fmt_pct(p["error"].get<double>()), published,
                        p["result_winner"].get<std::string>(),
                        p["agree"].is_null() ? "-" : p["agree"].get<bool>() ? "yes" : "no"});
      }
      o << '\n'
        << absl::StrFormat("ratio %s / %s\n", r["variant"].get<std::string>(), r["baseline"].get<std::string>())
        << render_table({"", "reference", "result", "error", "published winner", "result winner", "agree"}, rows)
        << "ratio errors: " << error_stats_text(r["ratio_errors"]) << '\n';
    }
    if (!s["ratios"].empty()) {
      const auto& sc = s["score"];
      o << absl::StrFormat("winners agree: %d/%d; published ties: %d, the result within %g%% at %d\n",
                           sc["winners_agree"].get<size_t>(), sc["winners_scored"].get<size_t>(),
                           sc["published_ties"].get<size_t>(), tie_pct, sc["published_ties_result_tie"].get<size_t>());
    }
  }

  // Summary.
  const auto& sm = cmp["summary"];
  o << "\nsummary\n";
  const auto& pk = sm["peaks"];
  const size_t scored_peaks = pk["scored"].get<size_t>();
  if (scored_peaks)
    o << absl::StrFormat("peak distance:  %d of %d curves scored; median %.2fx, max %.2fx; within 2x: %d/%d, "
                         "same client count: %d/%d\n",
                         scored_peaks, pk["curves"].get<size_t>(), pk["median_distance"].get<double>(),
                         pk["max_distance"].get<double>(), pk["within_2x"].get<size_t>(), scored_peaks,
                         pk["same_clients"].get<size_t>(), scored_peaks);
  else
    o << "peak distance:  n/a (no curve has 3 unfitted common client counts)\n";
  const size_t ws = sm["winners"]["scored"].get<size_t>();
  const size_t ties = sm["published_ties"]["points"].get<size_t>();
  const size_t errors = sm["ratio_errors"]["points"].get<size_t>();
  if (cmp["baseline"].is_null()) {
    o << "winners:        n/a (" << cmp["no_ratios"].get<std::string>() << ")\n";
  } else if (ws + ties + errors == 0) {
    o << "winners:        n/a (no unfitted client count where both variants ran)\n";
  } else {
    o << absl::StrFormat("winners agree:  %d/%d (points where the published ratio is off 1 by more than %g%%)\n",
                         sm["winners"]["agree"].get<size_t>(), ws, threshold_pct);
    o << absl::StrFormat("published ties: %d point%s within %g%%; the result within %g%% at %d (not scored)\n", ties,
                         ties == 1 ? "" : "s", threshold_pct, tie_pct, sm["published_ties"]["result_tie"].get<size_t>());
    o << "ratio errors:   " << error_stats_text(sm["ratio_errors"]) << '\n';
  }
  const ojson& targets = sm["targets"];
  o << absl::StrFormat("targets:        peaks within 2x %s; winners agree %s; ratio errors <= 35%% %s\n",
                       target_text(targets["peaks_within_2x"], true), target_text(targets["winners_agree"], true),
                       target_text(targets["ratios_within_35_pct"], true));
  const ojson& per = cmp["per_repetition"];
  if (!per.empty()) {
    const ojson& spread = sm["repetition_spread"];
    if (spread["points"].get<size_t>() > 0)
      o << absl::StrFormat("repetitions:    %d; a point's result tps is their median; their spread (max / min - 1) "
                           "over %d points: median %s, 90th percentile %s, max %s\n",
                           per.size(), spread["points"].get<size_t>(), fmt_pct(spread["median"].get<double>()),
                           fmt_pct(spread["p90"].get<double>()), fmt_pct(spread["max"].get<double>()));
    const bool seeds = cmp["repetitions_are_seeds"].get<bool>();
    o << (seeds ? "each seed scored alone (repetition r runs seed run.seed + r - 1; one seed's curve is noisier "
                  "than the median over all, so a single seed's scores scatter around the median's, either way; "
                  "the median is the verdict):\n"
                : "each repetition scored alone (repetition r is the r-th run of every cell, real runs: "
                  "noisier than the median over all):\n");
    std::vector<std::vector<std::string>> rep_rows;
    std::map<std::string, size_t> met;
    size_t met_all = 0;
    const std::vector<std::string> keys{"peaks_within_2x", "winners_agree", "ratios_within_35_pct"};
    for (const auto& r : per) {
      std::vector<std::string> row{std::to_string(r["repetition"].get<size_t>())};
      if (seeds) {
        std::vector<std::string> list;
        for (const auto& seed : r["seeds"]) list.push_back(std::to_string(seed.get<uint64_t>()));
        row.push_back(list.empty() ? "-" : absl::StrJoin(list, " "));
      }
      bool all = true;
      for (const auto& k : keys) {
        row.push_back(target_text(r["targets"][k], false));
        const bool m = r["targets"][k]["met"].is_boolean() && r["targets"][k]["met"].get<bool>();
        if (m) ++met[k];
        all = all && (m || r["targets"][k]["met"].is_null());
      }
      if (all) ++met_all;
      row.push_back(std::to_string(r["failed"].get<size_t>()));
      rep_rows.push_back(row);
    }
    std::vector<std::string> header{"repetition", "seed", "peaks within 2x", "winners agree", "ratio errors <= 35%",
                                    "failed cells"};
    if (!seeds) header.erase(header.begin() + 1);
    o << render_table(header, rep_rows);
    o << absl::StrFormat("targets met by single %s: peaks %d of %d, winners %d of %d, ratios %d of %d, all three "
                         "%d of %d\n",
                         seeds ? "seeds" : "repetitions", met["peaks_within_2x"], per.size(), met["winners_agree"],
                         per.size(), met["ratios_within_35_pct"], per.size(), met_all, per.size());
  }

  // Per series, one line each.
  std::vector<std::vector<std::string>> rows;
  for (const auto& s : cmp["series"]) {
    const auto& sc = s["score"];
    std::vector<std::string> distances;
    for (const auto& d : sc["peak_distances"]) distances.push_back(absl::StrFormat("%.2fx", d.get<double>()));
    const auto& e = sc["ratio_errors"];
    const bool has_ratios = !s["ratios"].empty();
    const size_t n = e["points"].get<size_t>();
    rows.push_back({s["name"].get<std::string>(), distances.empty() ? "n/a" : absl::StrJoin(distances, " "),
                    has_ratios ? absl::StrFormat("%d/%d", sc["winners_agree"].get<size_t>(),
                                                 sc["winners_scored"].get<size_t>())
                               : "-",
                    has_ratios ? absl::StrFormat("%d (%d)", sc["published_ties"].get<size_t>(),
                                                 sc["published_ties_result_tie"].get<size_t>())
                               : "-",
                    std::to_string(n), n ? fmt_pct(e["median"].get<double>()) : "-",
                    n ? fmt_pct(e["p90"].get<double>()) : "-", n ? fmt_pct(e["max"].get<double>()) : "-",
                    n ? std::to_string(e["under_10_pct"].get<size_t>()) : "-",
                    n ? std::to_string(e["under_25_pct"].get<size_t>()) : "-",
                    n ? std::to_string(e["under_50_pct"].get<size_t>()) : "-"});
  }
  o << '\n'
    << render_table({"by series", "peak distances", "winners agree", "published ties (result tie)", "ratio errors",
                     "median", "p90", "max", "<10%", "<25%", "<50%"},
                    rows)
    << '\n';
  if (!fitted["entries"].empty()) {
    o << absl::StrFormat("fitted entries (%d), their points shown and not scored:\n", fitted["entries"].size());
    for (const auto& e : fitted["entries"]) {
      std::vector<std::string> cols;
      for (const auto& [k, v] : e["columns"].items()) cols.push_back(k + "=" + v.get<std::string>());
      const size_t n = e["compared_points"].get<size_t>();
      o << absl::StrFormat("  %s (%d compared point%s): %s\n", absl::StrJoin(cols, " "), n, n == 1 ? "" : "s",
                           e["reason"].get<std::string>());
    }
  }
  if (!cmp["warnings"].empty()) {
    o << absl::StrFormat("warnings (%d):\n", cmp["warnings"].size());
    for (const auto& w : cmp["warnings"]) o << "  " << w.get<std::string>() << '\n';
  }
  const auto& mm = sm["mismatches"];
  if (mm.empty()) {
    o << "mismatches: none (no winner disagreement, no peak more than 2x away)\n";
  } else {
    o << absl::StrFormat("mismatches (%d): winner disagreements and peaks more than 2x away\n", mm.size());
    for (const auto& m : mm) o << "  " << m.get<std::string>() << '\n';
  }
  auto count_clients = [](const ojson& list) {
    size_t n = 0;
    for (const auto& e : list) n += e["clients"].size();
    return n;
  };
  if (!cmp["reference_only"].empty()) {
    o << absl::StrFormat("reference points without a result cell (%d):\n", count_clients(cmp["reference_only"]));
    for (const auto& e : cmp["reference_only"])
      o << "  " << e["variant"].get<std::string>() << ' ' << e["series"].get<std::string>() << ": clients "
        << clients_list(e["clients"].get<std::vector<uint64_t>>()) << '\n';
  }
  if (!cmp["result_only"].empty()) {
    o << absl::StrFormat("result cells without a reference point (%d):\n", count_clients(cmp["result_only"]));
    for (const auto& e : cmp["result_only"])
      o << "  " << e["label"].get<std::string>() << ' ' << e["series"].get<std::string>() << ": clients "
        << clients_list(e["clients"].get<std::vector<uint64_t>>()) << " (" << e["why"].get<std::string>() << ")\n";
  }
  if (!cmp["failed"].empty()) {
    o << absl::StrFormat("failed result cells, not compared (%d):\n", cmp["failed"].size());
    for (const auto& e : cmp["failed"])
      o << absl::StrFormat("  %s %s, %d clients: %s\n", e["label"].get<std::string>(), e["series"].get<std::string>(),
                           e["clients"].get<uint64_t>(), e["error"].get<std::string>());
  }
  return o.str();
}


// ---------------------------------------------------------------------------------------------
// Wait-event tables (fidelity.h, "Wait-event tables")

namespace {

std::vector<std::string> read_header(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) bad(path + ": cannot read reference table: " + std::strerror(errno));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);
    if (!trim(line).empty()) return split_csv_line(line, path + ":1");
  }
  return {};
}

// The published advantages of the CLOG thread's group update (reference/README.md): clients ->
// group update tps / exclusive tps.
const std::map<uint64_t, double>& clog_thread_advantage() {
  static const std::map<uint64_t, double> m = {{64, 1.11}, {128, 1.64}};
  return m;
}

}  // namespace

bool is_wait_event_csv(const std::string& path) {
  const std::vector<std::string> h = read_header(path);
  return std::find(h.begin(), h.end(), "wait_event") != h.end() &&
         std::find(h.begin(), h.end(), "samples") != h.end();
}

WaitEventTable load_wait_event_csv(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) bad(path + ": cannot read reference table: " + std::strerror(errno));
  WaitEventTable t;
  t.path = path;
  std::string line;
  size_t lineno = 0;
  std::vector<std::string> header;
  size_t i_variant = 0, i_clients = 0, i_event = 0, i_samples = 0;
  std::vector<size_t> i_other;
  std::set<std::tuple<std::string, uint64_t, std::vector<std::string>, std::string>> seen;
  while (std::getline(in, line)) {
    ++lineno;
    if (lineno == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);
    if (trim(line).empty()) continue;
    const std::string where = absl::StrFormat("%s:%d", path, lineno);
    std::vector<std::string> fields = split_csv_line(line, where);
    if (header.empty()) {
      header = fields;
      std::map<std::string, size_t> index = header_index(
          header, where, {"variant", "clients", "wait_event", "samples"},
          "a wait-event table needs variant, clients, wait_event and samples");
      i_variant = index["variant"];
      i_clients = index["clients"];
      i_event = index["wait_event"];
      i_samples = index["samples"];
      for (size_t i = 0; i < header.size(); ++i)
        if (i != i_variant && i != i_clients && i != i_event && i != i_samples) {
          i_other.push_back(i);
          t.other_columns.push_back(header[i]);
        }
      continue;
    }
    if (fields.size() != header.size())
      bad(absl::StrFormat("%s: expected %d fields (%s), found %d", where, header.size(),
                          absl::StrJoin(header, ","), fields.size()));
    WaitEventTable::Row row;
    row.line = lineno;
    row.variant = fields[i_variant];
    if (row.variant.empty()) bad(where + ": column \"variant\" is empty");
    row.clients = parse_clients(fields[i_clients], where);
    row.wait_event = fields[i_event];
    if (row.wait_event.empty()) bad(where + ": column \"wait_event\" is empty");
    const auto n = parse_number(fields[i_samples]);
    if (!n || *n < 0)
      bad(absl::StrFormat("%s: column \"samples\": expected a non-negative number, found \"%s\"",
                          where, fields[i_samples]));
    row.samples = *n;
    for (size_t i : i_other) row.values.push_back(fields[i]);
    if (!seen.emplace(row.variant, row.clients, row.values, row.wait_event).second)
      bad(absl::StrFormat("%s: duplicate row: variant=%s clients=%d wait_event=%s", where,
                          row.variant, row.clients, row.wait_event));
    t.rows.push_back(std::move(row));
  }
  if (header.empty()) bad(path + ": the reference table is empty");
  if (t.rows.empty()) bad(path + ": the reference table has a header but no rows");
  return t;
}

ojson wait_event_compare(const json& result, const WaitEventTable& ref, const FidelityOptions& opts) {
  const double tie = opts.tie_pct / 100;
  std::map<std::string, std::string> rename;
  for (const auto& r : opts.renames) {
    const auto eq = r.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == r.size())
      bad("compare: --variant " + r + ": expected RESULT_LABEL=CSV_VARIANT");
    rename[r.substr(0, eq)] = r.substr(eq + 1);
  }
  std::vector<std::string> variants;  // in CSV order
  for (const auto& row : ref.rows)
    if (std::find(variants.begin(), variants.end(), row.variant) == variants.end())
      variants.push_back(row.variant);
  auto variant_of = [&](const json& cell) -> std::string {
    const std::string label = cell.value("label", std::string());
    const std::string named = rename.count(label) ? rename[label] : label;
    if (std::find(variants.begin(), variants.end(), named) != variants.end()) return named;
    if (cell.contains("matrix") && cell["matrix"].is_object())
      for (const auto& [k, v] : cell["matrix"].items())
        if (v.is_string() && std::find(variants.begin(), variants.end(), v.get<std::string>()) != variants.end())
          return v.get<std::string>();
    return "";
  };
  auto column_value = [&](const json& cell, const std::string& col) -> std::optional<std::string> {
    if (col == "workload" && cell.contains("workload") && cell["workload"].is_object() &&
        cell["workload"].contains("name"))
      return cell["workload"]["name"].get<std::string>();
    if (cell.contains("matrix") && cell["matrix"].is_object())
      for (const auto& [k, v] : cell["matrix"].items())
        if (last_component(k) == col) return v.is_string() ? v.get<std::string>() : v.dump();
    return std::nullopt;
  };
  // Result cells by (variant, clients, other values).
  struct Sim {
    std::map<std::string, double> events;  // summed over repetitions
    double tps = 0;
    bool has_tps = false;
    std::string label;
  };
  using Key = std::tuple<std::string, uint64_t, std::vector<std::string>>;
  std::map<Key, Sim> sims;
  for (const auto& cell : result.at("cells")) {
    const std::string v = variant_of(cell);
    if (v.empty()) continue;
    std::vector<std::string> values;
    bool ok = true;
    for (const auto& col : ref.other_columns) {
      const auto cv = column_value(cell, col);
      if (!cv) { ok = false; break; }
      values.push_back(*cv);
    }
    if (!ok) continue;
    Sim s;
    s.label = cell.value("label", std::string());
    if (cell.contains("repetitions") && cell["repetitions"].is_array())
      for (const auto& rep : cell["repetitions"])
        if (rep.contains("wait_events") && rep["wait_events"].is_object())
          for (const auto& [e, n] : rep["wait_events"].items())
            if (n.is_number()) s.events[e] += n.get<double>();
    if (cell.contains("summary") && cell["summary"].is_object() && cell["summary"].contains("tps_median") &&
        cell["summary"]["tps_median"].is_number()) {
      s.tps = cell["summary"]["tps_median"].get<double>();
      s.has_tps = true;
    }
    sims[Key{v, cell.at("clients").get<uint64_t>(), values}] = std::move(s);
  }
  // The config's fitted list (fidelity.h "Fitted points"): a cell is fitted when it has every
  // value of some entry (variant, clients, or another column); fitted cells are shown, not scored.
  std::vector<json> fitted;
  auto add_fitted = [&](const json& cfg) {
    if (cfg.is_object() && cfg.contains("fitted") && cfg["fitted"].is_array())
      for (const auto& e : cfg["fitted"]) if (e.is_object()) fitted.push_back(e);
  };
  if (!opts.fitted_from.empty()) {
    std::ifstream in(opts.fitted_from);
    if (!in) bad("compare: --fitted-from " + opts.fitted_from + ": cannot read");
    try {
      add_fitted(json::parse(in));
    } catch (const json::exception& e) {
      bad("compare: --fitted-from " + opts.fitted_from + ": " + e.what());
    }
  } else if (result.contains("context") && result["context"].is_object() && result["context"].contains("config")) {
    const json& cfg = result["context"]["config"];
    if (cfg.is_array())
      for (const auto& c : cfg) add_fitted(c);
    else
      add_fitted(cfg);
  }
  auto fitted_reason = [&](const Key& k) -> std::optional<std::string> {
    const auto& [variant, clients, values] = k;
    for (const auto& e : fitted) {
      bool all = true;
      for (const auto& [col, v] : e.items()) {
        if (col == "reason") continue;
        const std::string text = v.is_string() ? v.get<std::string>() : v.dump();
        if (col == "variant") all = all && text == variant;
        else if (col == "clients") all = all && same_value(text, std::to_string(clients));
        else {
          const auto it = std::find(ref.other_columns.begin(), ref.other_columns.end(), col);
          all = all && it != ref.other_columns.end() &&
                same_value(text, values[static_cast<size_t>(it - ref.other_columns.begin())]);
        }
      }
      if (all) return e.value("reason", std::string());
    }
    return std::nullopt;
  };
  // Published cells, in CSV order.
  std::vector<Key> order;
  std::map<Key, std::vector<const WaitEventTable::Row*>> pub;
  for (const auto& row : ref.rows) {
    const Key k{row.variant, row.clients, row.values};
    if (!pub.count(k)) order.push_back(k);
    pub[k].push_back(&row);
  }
  ojson cells = ojson::array();
  std::vector<double> tvds;
  size_t top_agree = 0, compared = 0;
  ojson missing = ojson::array();
  for (const Key& k : order) {
    const auto& [variant, clients, values] = k;
    ojson c;
    c["variant"] = variant;
    c["clients"] = clients;
    ojson other = ojson::object();
    for (size_t i = 0; i < ref.other_columns.size(); ++i) other[ref.other_columns[i]] = values[i];
    c["columns"] = other;
    const auto it = sims.find(k);
    if (it == sims.end()) {
      missing.push_back(c);
      continue;
    }
    const Sim& sim = it->second;
    double pub_total = 0, sim_listed = 0, sim_nonidle = 0;
    for (const auto* r : pub[k]) {
      pub_total += r->samples;
      const auto e = sim.events.find(r->wait_event);
      if (e != sim.events.end()) sim_listed += e->second;
    }
    for (const auto& [e, n] : sim.events)
      if (e != "CPU") sim_nonidle += n;
    ojson events = ojson::array();
    double tvd = 0;
    std::string pub_top, sim_top;
    double pub_top_v = -1, sim_top_v = -1;
    for (const auto* r : pub[k]) {
      const auto e = sim.events.find(r->wait_event);
      const double n = e == sim.events.end() ? 0 : e->second;
      const double ps = pub_total > 0 ? r->samples / pub_total : 0;
      const double ss = sim_listed > 0 ? n / sim_listed : 0;
      tvd += std::abs(ss - ps) / 2;
      if (r->samples > pub_top_v) { pub_top_v = r->samples; pub_top = r->wait_event; }
      if (n > sim_top_v) { sim_top_v = n; sim_top = r->wait_event; }
      events.push_back(ojson{{"wait_event", r->wait_event}, {"published_samples", r->samples},
                             {"result_samples", n}, {"published_share", ps}, {"result_share", ss},
                             {"error", ss - ps}});
    }
    if (sim_listed == 0) sim_top.clear();
    ojson unlisted = ojson::object();
    for (const auto& [e, n] : sim.events) {
      if (e == "CPU" || n == 0) continue;
      bool listed = false;
      for (const auto* r : pub[k]) listed = listed || r->wait_event == e;
      if (!listed) unlisted[e] = sim_nonidle > 0 ? n / sim_nonidle : 0;
    }
    c["label"] = sim.label;
    c["events"] = events;
    c["unlisted_share"] = unlisted;
    c["cpu_samples"] = sim.events.count("CPU") ? sim.events.at("CPU") : 0.0;
    c["tvd"] = tvd;
    c["published_top"] = pub_top;
    c["result_top"] = sim_top;
    c["top_agrees"] = pub_top == sim_top;
    c["tps"] = sim.has_tps ? ojson(sim.tps) : ojson(nullptr);
    const auto why = fitted_reason(k);
    c["fitted"] = why ? ojson(*why) : ojson(nullptr);
    cells.push_back(c);
    if (why) continue;  // shown, not scored
    tvds.push_back(tvd);
    ++compared;
    if (pub_top == sim_top) ++top_agree;
  }
  if (compared == 0)
    bad("compare: no result cell matches a cell of " + ref.path +
        " (variants are matched by label or by a matrix value; rename with --variant LABEL=NAME)");
  // tps claims: two variants, the first is the baseline.
  ojson claims = nullptr;
  if (variants.size() == 2) {
    std::set<uint64_t> common;
    for (const Key& k : order) {
      const auto& [variant, clients, values] = k;
      const Key other{variant == variants[0] ? variants[1] : variants[0], clients, values};
      const auto a = sims.find(k), b = sims.find(other);
      if (a != sims.end() && b != sims.end() && a->second.has_tps && b->second.has_tps) common.insert(clients);
    }
    if (common.size() >= 2) {
      const uint64_t lo = *common.begin(), hi = *common.rbegin();
      auto tps_of = [&](const std::string& v, uint64_t n) {
        for (const auto& [key, s] : sims)
          if (std::get<0>(key) == v && std::get<1>(key) == n) return s.tps;
        return 0.0;
      };
      const double b_lo = tps_of(variants[0], lo), b_hi = tps_of(variants[0], hi);
      const double o_lo = tps_of(variants[1], lo), o_hi = tps_of(variants[1], hi);
      const double r_lo = b_lo > 0 ? o_lo / b_lo : 0, r_hi = b_hi > 0 ? o_hi / b_hi : 0;
      claims = ojson{{"baseline", variants[0]}, {"other", variants[1]}, {"clients_lo", lo},
                     {"clients_hi", hi}, {"baseline_tps", {b_lo, b_hi}}, {"other_tps", {o_lo, o_hi}},
                     {"ratio", {r_lo, r_hi}},
                     // Each claim needs a move beyond the tie band (--tie-pct), as a winner does:
                     // a 0.1% drift is noise, not "falls" or "grows".
                     {"baseline_falls", b_hi < (1 - tie) * b_lo},
                     {"other_holds", o_hi >= (1 - tie) * o_lo},
                     {"advantage_grows", r_hi > (1 + tie) * r_lo}};
      const auto& adv = clog_thread_advantage();
      if (adv.count(lo) && adv.count(hi) && variants[0] == "clog_exclusive")
        claims["published_ratio"] = {adv.at(lo), adv.at(hi)};
    }
  }
  ojson summary;
  summary["cells_compared"] = compared;
  summary["cells_fitted"] = cells.size() - compared;
  summary["cells_missing"] = missing.size();
  double mean = 0, mx = 0;
  for (double t : tvds) {
    mean += t / static_cast<double>(tvds.size());
    mx = std::max(mx, t);
  }
  summary["tvd_mean"] = mean;
  summary["tvd_max"] = mx;
  summary["top_agree"] = top_agree;
  ojson out;
  out["version"] = kFidelityVersion;
  out["mode"] = "wait_events";
  out["result"] = opts.result_path;
  out["reference"] = ref.path;
  out["cells"] = cells;
  out["missing"] = missing;
  out["claims"] = claims;
  out["summary"] = summary;
  return out;
}

std::string render_wait_event_compare(const ojson& cmp) {
  std::ostringstream o;
  o << "Wait-event shares: " << cmp["result"].get<std::string>() << " against "
    << cmp["reference"].get<std::string>() << "\n"
    << "(share = an event's samples / the samples of the events the published cell lists; "
       "TVD = half the summed absolute share errors)\n";
  for (const auto& c : cmp["cells"]) {
    std::string cols;
    for (const auto& [k, v] : c["columns"].items()) cols += " " + k + "=" + v.get<std::string>();
    o << "\n" << c["variant"].get<std::string>() << " clients=" << c["clients"].get<uint64_t>() << cols;
    if (c["tps"].is_number()) o << "  tps " << fmt_tps(c["tps"].get<double>());
    if (c["fitted"].is_string()) o << "  (fitted, not scored: " << c["fitted"].get<std::string>() << ")";
    o << absl::StrFormat("  TVD %.3f  top %s%s\n", c["tvd"].get<double>(),
                         c["published_top"].get<std::string>(),
                         c["top_agrees"].get<bool>() ? " (agrees)"
                                                     : " (result: " + c["result_top"].get<std::string>() + ")");
    o << absl::StrFormat("  %-28s %10s %10s %8s\n", "event", "published", "result", "error");
    for (const auto& e : c["events"])
      o << absl::StrFormat("  %-28s %10s %10s %+7.1f%%\n", e["wait_event"].get<std::string>(),
                           fmt_pct(e["published_share"].get<double>()),
                           fmt_pct(e["result_share"].get<double>()), 100 * e["error"].get<double>());
    std::vector<std::string> un;
    for (const auto& [k, v] : c["unlisted_share"].items())
      if (v.get<double>() >= 0.01) un.push_back(k + " " + fmt_pct(v.get<double>()));
    if (!un.empty()) o << "  not in the published list (share of the result's non-CPU samples): " << absl::StrJoin(un, ", ") << "\n";
  }
  for (const auto& m : cmp["missing"])
    o << "\nno result cell for " << m["variant"].get<std::string>() << " clients=" << m["clients"].get<uint64_t>() << "\n";
  const auto& s = cmp["summary"];
  o << absl::StrFormat("\nSummary: %d cells scored (%d fitted, not scored), %d missing; TVD mean %.3f, max %.3f; top event agrees in %d of %d\n",
                       s["cells_compared"].get<uint64_t>(), s["cells_fitted"].get<uint64_t>(),
                       s["cells_missing"].get<uint64_t>(),
                       s["tvd_mean"].get<double>(), s["tvd_max"].get<double>(),
                       s["top_agree"].get<uint64_t>(), s["cells_compared"].get<uint64_t>());
  const auto& cl = cmp["claims"];
  if (cl.is_object()) {
    const auto lo = cl["clients_lo"].get<uint64_t>(), hi = cl["clients_hi"].get<uint64_t>();
    o << absl::StrFormat("tps %s: %s at %d -> %s at %d clients: %s\n", cl["baseline"].get<std::string>(),
                         fmt_tps(cl["baseline_tps"][0].get<double>()), lo,
                         fmt_tps(cl["baseline_tps"][1].get<double>()), hi,
                         cl["baseline_falls"].get<bool>() ? "falls (as published)" : "does not fall (published: falls)");
    o << absl::StrFormat("tps %s: %s at %d -> %s at %d clients: %s\n", cl["other"].get<std::string>(),
                         fmt_tps(cl["other_tps"][0].get<double>()), lo,
                         fmt_tps(cl["other_tps"][1].get<double>()), hi,
                         cl["other_holds"].get<bool>() ? "holds (as published)" : "falls (published: holds)");
    o << absl::StrFormat("ratio %s / %s: %.2f at %d, %.2f at %d%s: %s\n", cl["other"].get<std::string>(),
                         cl["baseline"].get<std::string>(), cl["ratio"][0].get<double>(), lo,
                         cl["ratio"][1].get<double>(), hi,
                         cl.contains("published_ratio")
                             ? absl::StrFormat(" (published %.2f, %.2f)", cl["published_ratio"][0].get<double>(),
                                               cl["published_ratio"][1].get<double>())
                             : std::string(),
                         cl["advantage_grows"].get<bool>() ? "the advantage grows (as published)"
                                                           : "the advantage does not grow (published: it grows)");
  }
  return o.str();
}

int fidelity_command(const FidelityOptions& opts, std::ostream& out, std::ostream& /*err*/) {
  if (is_wait_event_csv(opts.reference_path)) {
    const json result = load_result_file(opts.result_path);
    const WaitEventTable ref = load_wait_event_csv(opts.reference_path);
    const ojson cmp = wait_event_compare(result, ref, opts);
    if (!opts.json_path.empty()) {
      try {
        write_file_atomically(opts.json_path, cmp.dump(1) + "\n");
      } catch (const std::runtime_error& e) {
        throw UsageError(std::string("compare --json: ") + e.what());
      }
    }
    out << render_wait_event_compare(cmp);
    return 0;
  }
  const json result = load_result_file(opts.result_path);
  const ReferenceTable ref = load_reference_csv(opts.reference_path);
  const ojson cmp = fidelity_compare(result, ref, opts);
  const std::string text = render_fidelity(cmp);
  if (!opts.json_path.empty()) {
    try {
      write_file_atomically(opts.json_path, cmp.dump(1) + "\n");
    } catch (const std::runtime_error& e) {
      throw UsageError(std::string("compare --json: ") + e.what());
    }
  }
  out << text;
  return 0;
}

}  // namespace walbench

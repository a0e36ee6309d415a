// Cell pairing for `walbench compare BASE NEW`; the rules are in pairing.h.
#include "harness/pairing.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "harness/cell_json.h"
#include "harness/config.h"
#include "harness/report.h"

namespace walbench {

namespace {

using json = nlohmann::json;

// Setup blocks of a cell, in the order paths are listed.
constexpr const char* kSetupKeys[] = {"label",    "strategy", "params", "clients", "platform",
                                      "workload", "wal",      "commit", "clog",    "run"};

// Leaf path -> value.
using Setup = std::map<std::string, json>;

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

// `path` is `key` or lies under it.
bool at_or_under(const std::string& path, const std::string& key) {
  return path == key || starts_with(path, key + ".");
}

void flatten(const json& v, const std::string& path, Setup& out, std::vector<std::string>& order) {
  if (path == "workload.record_size_label") return;  // derived from workload.record_size
  // A memory-storage cell writes no file: its wal.path is an unused leftover.
  if (path == "wal" && v.is_object() && v.contains("path") &&
      v.value("storage", std::string("memory")) == "memory") {
    json without = v;
    without.erase("path");
    flatten(without, path, out, order);
    return;
  }
  if (v.is_object() && path != "workload.record_size") {  // an empty object records nothing
    for (const auto& [k, sub] : v.items()) flatten(sub, path + "." + k, out, order);
    return;
  }
  if (out.emplace(path, v).second && std::find(order.begin(), order.end(), path) == order.end())
    order.push_back(path);
}

// Whether a set of leaf paths says anything about `path`: a leaf at it, under it or above it.
bool records(const std::set<std::string>& leaves, const std::string& path) {
  if (leaves.count(path)) return true;
  const auto under = leaves.lower_bound(path + ".");
  if (under != leaves.end() && starts_with(*under, path + ".")) return true;
  for (size_t dot = path.find('.'); dot != std::string::npos; dot = path.find('.', dot + 1))
    if (leaves.count(path.substr(0, dot))) return true;
  return false;
}

// Names of where a simulated machine's values came from: the machine itself is platform.sim.*,
// so two cells with equal values but another preset name or file path are the same machine.
bool is_provenance_label(const std::string& path) {
  return path == "platform.preset" || path == "platform.preset_file";
}

struct FileCells {
  std::string path;
  int schema = 0;
  std::vector<Setup> setups;
  std::set<std::string> leaves;  // every leaf path of every cell
};

// Whether a cell could never build the xid lock table (core/cell/wal_cell.h): a PostgreSQL
// server (it takes its own locks; the key cannot be set there), a non-transactional workload (no
// xid), or `ideal` (private xid counters and CLOGs). There `clog.xid_locks` says nothing about
// what ran, so it is left out of the setup and an old cell without it pairs with a new one.
bool xid_locks_cannot_run(const json& cell) {
  const json* platform = cell.contains("platform") ? &cell["platform"] : nullptr;
  if (platform && platform->is_object() && platform->value("kind", std::string()) == "postgres")
    return true;
  if (cell.contains("workload") && cell["workload"].is_object() &&
      !cell["workload"].value("transactional", true))
    return true;
  return cell.contains("strategy") && cell["strategy"] == "ideal";
}

FileCells setups_of(const json& doc, const std::string& file, std::vector<std::string>& order) {
  FileCells f;
  f.path = file;
  f.schema = doc["context"]["schema_version"].get<int>();
  for (const json& cell : doc["cells"]) {
    Setup s;
    for (const char* key : kSetupKeys)
      if (cell.contains(key)) flatten(cell[key], key, s, order);
    // A schema-2 block without a key newer than the cell records the value the cell ran with
    // (as rerun reads it), so that a file from before a default changed pairs by that value.
    if (f.schema >= 2)
      for (const KeyOlderCellsLack& k : keys_older_cells_lack())
        if (cell.contains(k.block) && cell[k.block].is_object() && !cell[k.block].contains(k.key))
          flatten(k.value, std::string(k.block) + "." + k.key, s, order);
    if (xid_locks_cannot_run(cell)) s.erase("clog.xid_locks");
    // Schema 1: the swept keys stand in for what the blocks did not record yet.
    if (f.schema == 1 && cell.contains("matrix") && cell["matrix"].is_object()) {
      std::set<std::string> have;
      for (const auto& [p, v] : s) have.insert(p);
      for (const auto& [k, v] : cell["matrix"].items()) {
        if (k == "strategy" || k == "clients" || records(have, k)) continue;
        flatten(v, k, s, order);
      }
    }
    for (const auto& [p, v] : s) f.leaves.insert(p);
    f.setups.push_back(std::move(s));
  }
  return f;
}

const json* value_at(const Setup& s, const std::string& path) {
  const auto it = s.find(path);
  return it == s.end() ? nullptr : &it->second;
}

std::string value_text_or_absent(const json* v) { return v ? value_text(*v) : "(absent)"; }
// Equal settings compare equal however a file spelled the number (200 and 200.0).
std::string value_key(const json* v) {
  if (!v) return "\x01";  // absent
  if (v->is_number()) return absl::StrFormat("%.17g", v->get<double>());
  return v->dump();
}

// The shortest prefix of `path` that `other` records nothing about.
std::string unrecorded_prefix(const std::string& path, const std::set<std::string>& other) {
  for (size_t dot = path.find('.'); dot != std::string::npos; dot = path.find('.', dot + 1)) {
    const std::string prefix = path.substr(0, dot);
    if (!records(other, prefix)) return prefix;
  }
  return path;
}

// Every path and every prefix of one, for "did you mean".
std::vector<std::string> key_candidates(const FileCells& a, const FileCells& b) {
  std::set<std::string> all;
  for (const FileCells* f : {&a, &b})
    for (const std::string& p : f->leaves) {
      all.insert(p);
      for (size_t dot = p.find('.'); dot != std::string::npos; dot = p.find('.', dot + 1))
        all.insert(p.substr(0, dot));
    }
  return {all.begin(), all.end()};
}

void check_keys(const std::vector<std::string>& keys, const char* option, const FileCells& a,
                const FileCells& b) {
  for (const std::string& key : keys) {
    if (records(a.leaves, key) || records(b.leaves, key)) continue;
    const std::string hint = closest_match(key, key_candidates(a, b));
    throw UsageError(absl::StrFormat(
        "compare: %s %s: no such setting in %s or %s; expected a dotted path such as "
        "wal.storage, platform.sim or run%s",
        option, key, a.path, b.path, hint.empty() ? "" : " (did you mean \"" + hint + "\"?)"));
  }
}

std::string identity_key(const Setup& s, const std::vector<std::string>& identity) {
  std::string key;
  for (const std::string& p : identity) key += value_key(value_at(s, p)) + '\x1f';
  return key;
}

std::string cell_name(const json& cell) {
  std::string s = absl::StrFormat("%s_%d_clients", cell["label"].get<std::string>(),
                                  cell["clients"].get<uint64_t>());
  if (cell.contains("workload") && cell["workload"].is_object()) {
    const json& w = cell["workload"];
    if (w.contains("record_size_label")) s += " record_size=" + value_text(w["record_size_label"]);
  }
  return s;
}

}  // namespace

Pairing pair_cells(const json& base, const std::string& base_path, const json& next,
                   const std::string& next_path, const CompareOptions& options) {
  std::vector<std::string> order;  // paths in order of first appearance
  const FileCells b = setups_of(base, base_path, order);
  const FileCells n = setups_of(next, next_path, order);
  check_keys(options.ignore, "--ignore", b, n);
  check_keys(options.pair_by, "--pair-by", b, n);
  // Block order first (label, ..., run), then first appearance within a block.
  auto block_rank = [](const std::string& p) {
    const std::string head = p.substr(0, p.find('.'));
    for (size_t i = 0; i < std::size(kSetupKeys); ++i)
      if (head == kSetupKeys[i]) return i;
    return std::size(kSetupKeys);  // schema-1 matrix stand-ins of another block: last
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](const std::string& x, const std::string& y) { return block_rank(x) < block_rank(y); });

  Pairing result;
  auto matches_any = [](const std::string& p, const std::vector<std::string>& keys) {
    return std::any_of(keys.begin(), keys.end(), [&](const std::string& k) { return at_or_under(p, k); });
  };
  // (value key, value text) of each distinct value, in order of first appearance.
  auto values_in = [&](const FileCells& f, const std::string& p) {
    std::vector<std::pair<std::string, std::string>> values;
    for (const Setup& s : f.setups) {
      const json* v = value_at(s, p);
      const std::string key = value_key(v);
      if (std::none_of(values.begin(), values.end(), [&](const auto& kv) { return kv.first == key; }))
        values.emplace_back(key, value_text_or_absent(v));
    }
    return values;
  };
  auto texts = [](const std::vector<std::pair<std::string, std::string>>& values) {
    std::vector<std::string> t;
    for (const auto& [key, text] : values) t.push_back(text);
    return t;
  };

  // Roles of the compared paths; run.* paths are measurement until they prove to be needed.
  std::vector<std::string> compared;
  std::map<std::string, SettingDiff::Role> role_of;
  for (const std::string& p : order) {
    const bool in_base = records(b.leaves, p), in_next = records(n.leaves, p);
    if (!in_base && !in_next) continue;  // left out of every cell's setup (xid_locks_cannot_run)
    if (!in_base || !in_next) {
      std::vector<std::string>& list = in_base ? result.base_only_settings : result.next_only_settings;
      const std::string prefix = unrecorded_prefix(p, in_base ? n.leaves : b.leaves);
      if (std::find(list.begin(), list.end(), prefix) == list.end()) list.push_back(prefix);
      continue;
    }
    SettingDiff::Role role = SettingDiff::Role::kPairs;
    if (matches_any(p, options.ignore))
      role = SettingDiff::Role::kIgnored;
    else if (!options.pair_by.empty() && p != "clients" && !matches_any(p, options.pair_by))
      role = SettingDiff::Role::kNotPairedBy;
    else if (options.pair_by.empty() && (starts_with(p, "run.") || is_provenance_label(p)))
      role = SettingDiff::Role::kMeasurement;
    compared.push_back(p);
    role_of[p] = role;
  }
  auto identity_paths = [&] {
    std::vector<std::string> ids;
    for (const std::string& p : compared)
      if (role_of[p] == SettingDiff::Role::kPairs) ids.push_back(p);
    return ids;
  };
  // A run setting that tells two cells of one file apart was swept (a matrix over
  // run.duration_s): then it pairs like any other setting.
  {
    const std::vector<std::string> without_run = identity_paths();
    for (const FileCells* f : {&b, &n}) {
      std::map<std::string, size_t> first_of;
      for (size_t i = 0; i < f->setups.size(); ++i) {
        const auto [it, fresh] = first_of.emplace(identity_key(f->setups[i], without_run), i);
        if (fresh) continue;
        for (const std::string& p : compared)
          if (role_of[p] == SettingDiff::Role::kMeasurement &&
              value_key(value_at(f->setups[it->second], p)) != value_key(value_at(f->setups[i], p)))
            role_of[p] = SettingDiff::Role::kPairs;
      }
    }
  }
  const std::vector<std::string> identity = identity_paths();
  for (const std::string& p : compared) {
    const auto bv = values_in(b, p), nv = values_in(n, p);
    std::set<std::string> bkeys, nkeys;
    for (const auto& [key, text] : bv) bkeys.insert(key);
    for (const auto& [key, text] : nv) nkeys.insert(key);
    if (bkeys == nkeys) continue;
    result.differences.push_back(SettingDiff{p, role_of[p], texts(bv), texts(nv)});
    if (role_of[p] == SettingDiff::Role::kPairs) result.identity_diff_paths.push_back(p);
  }

  // One cell per identity in each file. Cells that share an identity are an error, except when
  // what tells them apart is a setting only their own file records (a schema-1 file on the other
  // side): then they are ambiguous, and they and their counterpart stay unpaired.
  std::map<std::string, std::string> ambiguous;  // identity key -> why
  auto index_by_identity = [&](const FileCells& f, const json& doc, const FileCells& other,
                               const char* side, const char* other_side) {
    std::map<std::string, std::vector<size_t>> by_key;
    for (size_t i = 0; i < f.setups.size(); ++i) by_key[identity_key(f.setups[i], identity)].push_back(i);
    for (const auto& [key, cells] : by_key) {
      if (cells.size() < 2) continue;
      std::set<std::string> apart;  // settings outside the identity in which they differ
      for (size_t k = 1; k < cells.size(); ++k) {
        const Setup& first = f.setups[cells[0]];
        const Setup& second = f.setups[cells[k]];
        std::set<std::string> paths;
        for (const auto& [p, v] : first) paths.insert(p);
        for (const auto& [p, v] : second) paths.insert(p);
        std::vector<std::string> here;
        for (const std::string& p : paths)
          if (value_key(value_at(first, p)) != value_key(value_at(second, p))) here.push_back(p);
        const bool only_own_records =
            !here.empty() && std::none_of(here.begin(), here.end(),
                                          [&](const std::string& p) { return records(other.leaves, p); });
        if (!only_own_records) {
          const std::string why =
              here.empty() ? "the same setup twice"
                           : "they differ only in " + absl::StrJoin(here, ", ") +
                                 ", which compare does not pair by here";
          throw UsageError(absl::StrFormat(
              "%s: cells %d and %d have the same setup (%s; %s); compare needs each setup once: "
              "remove one, or tell them apart with --pair-by KEY",
              f.path, cells[0], cells[k], cell_name(doc["cells"][cells[k]]), why));
        }
        apart.insert(here.begin(), here.end());
      }
      ambiguous[key] = absl::StrFormat(
          "ambiguous: %s cells %s differ only in %s, which %s does not record", side,
          absl::StrJoin(cells, ", "), absl::StrJoin(apart, ", "), other_side);
    }
    std::map<std::string, size_t> unique;
    for (const auto& [key, cells] : by_key)
      if (cells.size() == 1) unique[key] = cells[0];
    return unique;
  };
  const std::map<std::string, size_t> base_by_key = index_by_identity(b, base, n, "BASE", "NEW");
  index_by_identity(n, next, b, "NEW", "BASE");

  std::vector<bool> base_paired(b.setups.size(), false);
  std::vector<size_t> next_unpaired;
  for (size_t i = 0; i < n.setups.size(); ++i) {
    const std::string key = identity_key(n.setups[i], identity);
    const auto it = base_by_key.find(key);
    if (it == base_by_key.end() || ambiguous.count(key)) {
      next_unpaired.push_back(i);
      continue;
    }
    result.pairs.emplace_back(it->second, i);
    base_paired[it->second] = true;
  }

  // Unpaired cells: the closest cell on the other side and the identity paths they differ in.
  auto explain = [&](size_t cell, const FileCells& own, const FileCells& other, bool own_is_base) {
    UnpairedCell u;
    u.cell = cell;
    const auto amb = ambiguous.find(identity_key(own.setups[cell], identity));
    if (amb != ambiguous.end()) {
      u.note = amb->second;
      return u;
    }
    size_t best_count = std::numeric_limits<size_t>::max();
    for (size_t j = 0; j < other.setups.size(); ++j) {
      size_t count = 0;
      for (const std::string& p : identity)
        if (value_key(value_at(own.setups[cell], p)) != value_key(value_at(other.setups[j], p))) ++count;
      if (count < best_count) {
        best_count = count;
        u.closest = j;
      }
    }
    if (u.closest == UnpairedCell::kNone) return u;
    const Setup& bs = own_is_base ? own.setups[cell] : other.setups[u.closest];
    const Setup& ns = own_is_base ? other.setups[u.closest] : own.setups[cell];
    for (const std::string& p : identity) {
      const json* bv = value_at(bs, p);
      const json* nv = value_at(ns, p);
      if (value_key(bv) != value_key(nv))
        u.differences.push_back(p + ": " + value_text_or_absent(bv) + " -> " + value_text_or_absent(nv));
    }
    return u;
  };
  for (size_t i = 0; i < b.setups.size(); ++i)
    if (!base_paired[i]) result.base_only.push_back(explain(i, b, n, true));
  for (size_t i : next_unpaired) result.next_only.push_back(explain(i, n, b, false));
  return result;
}

}  // namespace walbench

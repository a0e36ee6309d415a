// The plan (every key of a config validated once, at its JSON path) and its expansion into
// cells: the cartesian product of the matrix, each cell resolved and put through the
// cross-field checks and the host-limit checks of simulated cells.
//
// Override variants (matrix "variants") are a dimension of their own, after the strategy
// variants: each cell applies its variant's "set" entries as it applies matrix values. Simulator
// parameters (platform.<name>, from the matrix or a variant) are gathered per cell and the
// machine resolved once with all of them over the base platform's keys.
//
// Errors: by default the first one throws. config_errors() (config.h) instead passes a list:
// every independent part (a top-level key, a section key, a matrix key, each item of a matrix
// list, each variant, each entry of an override variant's "set") is then tried and its error
// recorded, and what failed is left out of the
// plan, so that the errors reported are those of the config, not consequences of an earlier one.
#include "harness/config_internal.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/platform/sim.h"
#include "harness/postgres_config.h"
#include "strategies/strategy.h"

namespace walbench {
namespace config_internal {
namespace {

// ---------------------------------------------------------------------------------------------
// The plan: everything validated, nothing expanded yet

// What a dotted config path (a matrix key, or a key of an override variant's "set") sets.
enum class PathKind {
  kField,  // a section field: "wal.buffer_init" (FieldDef)
  kParam,  // "strategy.params.NAME": a parameter of every strategy variant
  kSim,    // "platform.NAME": a simulated machine parameter (resolved per cell by SimConfig)
};

struct Dim {
  std::string key;              // matrix key: "workload.record_size", "strategy.params.num_locks"
  std::vector<OJson> values;
  Where where;                  // of the matrix entry
  bool is_list = false;         // written as a list (paths then end in the item index)
  const FieldDef* field = nullptr;  // section fields; nullptr for strategy.params.* and sim keys
  PathKind kind = PathKind::kField;
  Where item(size_t i) const { return is_list ? where / i : where; }
};

// One entry of an override variant's "set".
struct SetEntry {
  std::string key;  // dotted path, as in the matrix
  OJson value;
  Where where;      // /matrix/variants/I/set/KEY
  const FieldDef* field = nullptr;
  PathKind kind = PathKind::kField;
};

// matrix "variants": a label and the config paths it sets (harness/config.h).
struct OverrideVariant {
  std::string label;
  Where where;  // of the variant
  std::vector<SetEntry> set;
  nlohmann::json set_json = nlohmann::json::object();  // what the cell records (CellSpec::variant_set)
};

struct Plan {
  std::string file;
  std::string preset_dir;  // relative preset files are looked up here ("" = current directory)
  // Null: the first error throws. Else every error goes here and parsing goes on with the next
  // independent part (a section key, a matrix key or item, a variant); what failed is left out.
  std::vector<ConfigError>* errors = nullptr;
  CellSpec base;
  std::map<std::string, std::string> sources;  // "wal.page_size" -> "/wal/page_size"
  std::vector<Variant> variants;
  bool variants_from_matrix = false;
  std::vector<int64_t> clients = {1};
  std::vector<std::string> clients_at;  // JSON path of each entry of `clients` (matrix only)
  bool clients_from_matrix = false;
  std::vector<Dim> dims;  // other matrix keys, in file order
  std::vector<OverrideVariant> overrides;  // matrix "variants"; empty: none
  // The base platform is simulated; sim_given is its machine as written (without "kind" and
  // the platform fields): simulator parameters from the matrix are merged into it and the
  // machine resolved again per cell, so that a preset from the matrix applies under them.
  bool base_sim = false;
  nlohmann::json sim_given = nlohmann::json::object();
  bool sim_broken = false;  // the base machine failed (reported): simulator parameters unchecked
  bool incomplete = false;  // some part failed (collecting errors): not worth expanding
};

// Runs one independent part of the parse: a ConfigError is thrown on, or recorded when the plan
// collects errors (then false is returned and the caller leaves that part out).
template <class F>
bool attempt(Plan& plan, F&& part) {
  if (plan.errors == nullptr) {
    part();
    return true;
  }
  try {
    part();
    return true;
  } catch (const ConfigError& e) {
    plan.errors->push_back(e);
    plan.incomplete = true;
    return false;
  }
}

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
// machine parameter, checked (with "did you mean") by SimConfig. p.sim becomes the resolved
// form (SimConfig::resolved_json): every parameter, the preset's name and the file it read, so
// that a cell describes its machine by itself.
// `given`, if not null, receives the machine's keys as written.
void parse_sim_platform(PlatformSpec& p, const OJson& v, const Where& w,
                        const std::vector<std::string>& platform_keys,
                        const std::string& preset_dir, nlohmann::json* given = nullptr) {
  nlohmann::json sim = nlohmann::json::object();
  for (auto it = v.begin(); it != v.end(); ++it) {
    const bool platform_field =
        std::find(platform_keys.begin(), platform_keys.end(), it.key()) != platform_keys.end();
    if (platform_field && it.key() != "kind") {
      reject_postgres_key(it.key(), w / it.key(), "sim");
      CellSpec tmp;
      find_field("platform." + it.key())->apply(tmp, it.value(), w / it.key());
      if (it.key() == "atomics") p.atomics = tmp.platform.atomics;
      if (it.key() == "spinlocks") p.spinlocks = tmp.platform.spinlocks;
    } else if (!platform_field) {
      sim[it.key()] = nlohmann::json(it.value());
    }
  }
  if (given != nullptr) *given = sim;
  try {
    nlohmann::json whole = sim;
    whole["kind"] = "sim";
    p.sim = SimConfig::resolved_json(whole, w.path, preset_dir);
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

// ---------------------------------------------------------------------------------------------
// Override variants: matrix "variants"

const char* const kOverrideExpected =
    "an object {\"label\": NAME, \"set\": {PATH: VALUE, ...}} whose PATHs are dotted config "
    "paths such as wal.buffer_init, clog.strategy, platform.cores or strategy.params.num_locks";
const char* const kSetExpected =
    "an object of dotted config paths and their values, such as {\"wal.buffer_init\": "
    "\"lockfree\"} ({} for the config as it is)";

// What an override variant's "set" key names; fails for anything --set would not set, or that a
// variant cannot (the strategy itself, clients, a whole section).
void classify_set_path(SetEntry& e) {
  const std::string& key = e.key;
  if ((e.field = find_field(key)) != nullptr) {
    e.kind = PathKind::kField;
    return;
  }
  if (key.rfind(kParamsPrefix, 0) == 0 && key.size() > kParamsPrefix.size()) {
    e.kind = PathKind::kParam;
    return;
  }
  if (key.rfind(kPlatformPrefix, 0) == 0 && is_sim_param(key.substr(kPlatformPrefix.size()))) {
    e.kind = PathKind::kSim;
    return;
  }
  if (key == "strategy" || key.rfind("strategy.", 0) == 0)
    fail(e.where, "an override variant cannot choose the strategy (\"" + key + "\")",
         "config paths such as wal.buffer_init or strategy.params.<name>; list strategies in "
         "matrix.strategy: the two lists cross, each strategy variant running with each of "
         "these variants");
  if (key == "clients")
    fail(e.where, "clients is not a config setting", "client counts in matrix.clients");
  if (std::find(kSections.begin(), kSections.end(), key) != kSections.end())
    fail(e.where, "\"" + key + "\" is a whole section",
         "one entry per setting, such as " + key + "." + section_keys(key).front());
  fail(e.where, "unknown config path \"" + key + "\"",
       "a dotted path SECTION.KEY such as wal.buffer_init, clog.strategy or workload.name, "
       "platform.<simulator parameter> such as platform.cores (platform \"sim\"), or "
       "strategy.params.<name>",
       closest_match(key, settable_paths()));
}

// One item of matrix "variants". Each bad "set" entry is an error of its own (collecting); the
// variant keeps its label and its good entries.
OverrideVariant parse_override_variant(Plan& plan, const OJson& v, const Where& w) {
  check_object(v, w, kOverrideExpected);
  check_keys(v, w, kOverrideVariantKeys);
  if (!v.contains("label")) fail(w, "the variant has no \"label\"", kOverrideExpected);
  OverrideVariant out;
  out.where = w;
  out.label = want_label(v["label"], w / "label");
  if (!v.contains("set"))
    fail(w, "the variant \"" + out.label + "\" has no \"set\"",
         std::string(kOverrideExpected) + " ({} for the config as it is)");
  const Where ws = w / "set";
  check_object(v["set"], ws, kSetExpected);
  for (auto it = v["set"].begin(); it != v["set"].end(); ++it) {
    attempt(plan, [&] {
      SetEntry e{it.key(), it.value(), ws / it.key()};
      classify_set_path(e);
      if (e.kind == PathKind::kField) {
        CellSpec scratch;
        e.field->apply(scratch, e.value, e.where);
      }
      out.set_json[e.key] = nlohmann::json(e.value);
      out.set.push_back(std::move(e));
    });
  }
  return out;
}

// The rules between override variants and the rest of the matrix: distinct labels, joined
// labels within 64 characters, no path both swept and set, strategy.params.<name> valid for
// every strategy variant. (Simulator parameters are checked on each resolved cell.)
template <class CheckParams>
void check_overrides(Plan& plan, bool given, CheckParams&& check_params_path) {
  if (!given) return;
  auto& ovs = plan.overrides;
  for (size_t i = 0; i < ovs.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (ovs[i].label == ovs[j].label) {
        attempt(plan, [&] {
          fail(ovs[i].where / "label",
               absl::StrFormat("duplicate label \"%s\" (variant %d has it too)", ovs[i].label, j),
               "a distinct \"label\" for each variant");
        });
        break;
      }
  if (plan.variants.size() > 1)
    for (const auto& ov : ovs)
      for (const auto& sv : plan.variants)
        if (sv.label.size() + 1 + ov.label.size() > 64) {
          attempt(plan, [&] {
            fail(ov.where / "label",
                 "the cells' label \"" + sv.label + "+" + ov.label + "\" is longer than 64 characters",
                 "shorter labels: with several strategy variants a cell's label is "
                 "<strategy label>+<variant label>, at most 64 characters");
          });
          break;
        }
  for (auto& ov : ovs) {
    std::vector<SetEntry> kept;
    for (auto& e : ov.set) {
      bool ok = true;
      for (const auto& d : plan.dims)
        if (d.key == e.key)
          ok &= attempt(plan, [&] {
            fail(e.where, "\"" + e.key + "\" is set here and swept by " + d.where.path,
                 "one place for it: sweep it in the matrix, or set it in every variant");
          });
      if (ok && e.kind == PathKind::kParam)
        ok &= check_params_path(e.key, e.where, std::vector<std::pair<OJson, Where>>{{e.value, e.where}});
      if (ok) kept.push_back(std::move(e));
    }
    ov.set = std::move(kept);
  }
}

// Validates every key of a config once, at its JSON path. With `errors`, every independent
// part is tried (Plan::errors); without, the first error throws.
Plan parse_plan(const OJson& config, const std::string& file, const std::string& preset_dir,
                std::vector<ConfigError>* errors) {
  Plan plan;
  plan.file = file;
  plan.preset_dir = preset_dir;
  plan.errors = errors;
  const Where root{file, ""};
  if (!config.is_object())
    fail(root, "the config is " + kind_of(config),
         "a JSON object with keys " + absl::StrJoin(kTopKeys, ", "));
  for (auto it = config.begin(); it != config.end(); ++it)
    attempt(plan, [&] { check_keys(OJson{{it.key(), nullptr}}, root, kTopKeys); });

  if (config.contains("description"))
    attempt(plan, [&] { want_string(config["description"], root / "description"); });
  if (config.contains("fitted"))
    attempt(plan, [&] { check_fitted(config["fitted"], root / "fitted"); });

  // Top-level sections over the spec.h defaults.
  for (const auto& section : kSections) {
    if (!config.contains(section)) continue;
    const Where ws = root / section;
    const OJson& obj = config[section];
    const std::vector<std::string> keys = section_keys(section);
    if (!attempt(plan, [&] {
          check_object(obj, ws, "an object with keys " + absl::StrJoin(keys, ", "));
        }))
      continue;
    if (section == "platform" && obj.contains("kind") && obj["kind"] == "sim") {
      plan.base_sim = true;
      plan.sim_broken = !attempt(plan, [&] {
        parse_sim_platform(plan.base.platform, obj, ws, keys, preset_dir, &plan.sim_given);
      });
      continue;
    }
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      attempt(plan, [&] {
        check_keys(OJson{{it.key(), nullptr}}, ws, keys);
        find_field(section + "." + it.key())->apply(plan.base, it.value(), ws / it.key());
        plan.sources[section + "." + it.key()] = (ws / it.key()).path;
      });
    }
  }

  std::vector<Variant> top_variant;
  bool variant_failed = false;
  bool overrides_given = false;
  if (config.contains("strategy"))
    variant_failed |= !attempt(plan, [&] {
      top_variant.push_back(parse_variant(config["strategy"], root / "strategy"));
    });

  // The matrix, key by key in file order; each item of a list on its own.
  if (config.contains("matrix")) {
    const Where wm = root / "matrix";
    const OJson& m = config["matrix"];
    attempt(plan, [&] {
      check_object(m, wm,
                   "an object whose keys are strategy, clients or dotted parameter paths such as "
                   "workload.record_size");
    });
    for (auto it = m.is_object() ? m.begin() : m.end(); it != m.end(); ++it) {
      const std::string& key = it.key();
      const Where wk = wm / key;
      const bool is_list = it.value().is_array();
      std::vector<OJson> list;
      if (!attempt(plan, [&] { list = as_list(it.value(), wk); })) {
        if (key == "strategy") variant_failed = plan.variants_from_matrix = true;
        continue;
      }
      if (key == "strategy") {
        plan.variants_from_matrix = true;
        for (size_t i = 0; i < list.size(); ++i)
          variant_failed |= !attempt(plan, [&] {
            plan.variants.push_back(parse_variant(list[i], is_list ? wk / i : wk));
          });
      } else if (key == "clients") {
        plan.clients.clear();
        plan.clients_from_matrix = true;
        for (size_t i = 0; i < list.size(); ++i)
          attempt(plan, [&] {
            const Where wi = is_list ? wk / i : wk;
            plan.clients.push_back(want_int(list[i], wi, 1, 65535));
            plan.clients_at.push_back(wi.path);
          });
      } else if (key == kVariantsKey) {
        overrides_given = true;
        for (size_t i = 0; i < list.size(); ++i)
          attempt(plan, [&] {
            plan.overrides.push_back(parse_override_variant(plan, list[i], is_list ? wk / i : wk));
          });
      } else if (const FieldDef* f = find_field(key)) {
        Dim d{key, list, wk, is_list, f};
        bool ok = true;
        CellSpec scratch;
        for (size_t i = 0; i < d.values.size(); ++i)
          ok &= attempt(plan, [&] { f->apply(scratch, d.values[i], d.item(i)); });
        if (ok) plan.dims.push_back(std::move(d));
      } else if (key.rfind(kParamsPrefix, 0) == 0 && key.size() > kParamsPrefix.size()) {
        plan.dims.push_back(Dim{key, list, wk, is_list, nullptr, PathKind::kParam});
      } else if (key.rfind(kPlatformPrefix, 0) == 0 && is_sim_param(key.substr(kPlatformPrefix.size()))) {
        plan.dims.push_back(Dim{key, list, wk, is_list, nullptr, PathKind::kSim});
      } else {
        attempt(plan, [&] {
          fail(wk, "unknown matrix key \"" + key + "\"",
               "strategy, variants, clients, a section field such as workload.record_size or "
               "wal.wal_buffers, platform.<simulator parameter> such as platform.cores, or "
               "strategy.params.<name>",
               closest_match(key, matrix_keys()));
        });
      }
    }
  }

  // One place for the strategy, so that a --set on the other one cannot be silently ignored.
  if (plan.variants_from_matrix && config.contains("strategy"))
    attempt(plan, [&] {
      fail(root / "strategy", "both /strategy and /matrix/strategy are given",
           "one of them: /strategy for a single variant, /matrix/strategy for a list");
    });
  if (!plan.variants_from_matrix) plan.variants = top_variant;
  // (A variant that failed was reported; "no strategy" would only repeat it.)
  // A postgres server's build is its strategy (harness/postgres_config.h).
  if (plan.variants.empty() && !variant_failed && plan.base.platform.kind == "postgres")
    plan.variants.push_back(server_variant(root));
  if (plan.variants.empty() && !variant_failed)
    fail(root, "no strategy given",
         "\"strategy\": {\"name\": ...} or \"matrix\": {\"strategy\": [...]} (strategies: " +
             absl::StrJoin(strategy_names(), ", ") + ")");

  // A postgres server runs its own build: a strategy given with it is an error of its own.
  if (plan.base.platform.kind == "postgres")
    for (const Variant& v : plan.variants)
      if (v.info != &server_strategy_info())
        attempt(plan, [&] {
          fail(v.where, "strategy " + v.info->name + " is a model of the WAL; a PostgreSQL server "
                        "runs its own build",
               "no strategy with platform \"postgres\" (label builds by platform.bindir in matrix "
               "variants)");
        });

  // Labels name report rows: they must tell the variants apart.
  for (size_t i = 0; i < plan.variants.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (plan.variants[i].label == plan.variants[j].label) {
        const Variant& v = plan.variants[i];
        attempt(plan, [&] {
          fail(v.label_given ? v.where / "label" : v.where,
               absl::StrFormat("duplicate label \"%s\" (variant %d has it too)", v.label, j),
               "a distinct \"label\" for each variant");
        });
      }

  // strategy.params.<name>: every variant must have the parameter, and not set it itself.
  // strategy.params.<name> (a matrix key or an override variant's): every strategy variant must
  // have the parameter, and not set it itself. Returns false when a check failed.
  auto check_params_path = [&](const std::string& key, const Where& at,
                               const std::vector<std::pair<OJson, Where>>& values) {
    bool ok = true;
    const std::string name = key.substr(kParamsPrefix.size());
    for (const auto& v : plan.variants) {
      const ParamSpec* p = find_param(*v.info, name);
      if (p == nullptr) {
        std::vector<std::string> names;
        for (const auto& q : v.info->params) names.push_back(q.name);
        const std::string hint = closest_match(name, names);
        ok &= attempt(plan, [&] {
          fail(at,
               "variant \"" + v.label + "\" (strategy " + v.info->name +
                   ") has no parameter \"" + name + "\"",
               "a parameter of every variant: " + param_names(*v.info),
               hint.empty() ? "" : kParamsPrefix + hint);
        });
        continue;
      }
      if (plan.variants_from_matrix && v.given.count(name) != 0)
        ok &= attempt(plan, [&] {
          fail(v.where / "params" / name, "\"" + name + "\" is set here and by " + at.path,
               "one place for it: drop it here or there");
        });
      for (const auto& [value, w] : values) ok &= attempt(plan, [&] { check_param(*p, value, w); });
    }
    return ok;
  };
  for (const auto& d : plan.dims) {
    if (d.kind != PathKind::kParam) continue;
    std::vector<std::pair<OJson, Where>> values;
    for (size_t i = 0; i < d.values.size(); ++i) values.emplace_back(d.values[i], d.item(i));
    check_params_path(d.key, d.where, values);
  }
  check_overrides(plan, overrides_given, check_params_path);
  return plan;
}

size_t override_count(const Plan& plan) { return std::max<size_t>(plan.overrides.size(), 1); }

size_t cell_count(const Plan& plan) {
  size_t n = plan.variants.size() * override_count(plan) * plan.clients.size();
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
  check_postgres_cell(c, src, file);
  if (c.workload.driver_us > 0 && c.platform.kind != "sim")
    fail(blame("workload.driver_us", "platform.kind"),
         "workload.driver_us models the client driver's thread on the simulated machine, and this "
         "cell's platform.kind is \"" + c.platform.kind + "\"" + origin("platform.kind"),
         "no driver_us here (on real threads the round trip is client_overhead_us; with platform "
         "\"postgres\" pgbench is the driver)");
  if (c.workload.driver_us > 0 && c.workload.driver_us < 0.001)
    fail(blame("workload.driver_us", "workload.driver_us"),
         absl::StrFormat("driver_us %g is under 1 ns", c.workload.driver_us),
         "0 (no driver thread) or at least 0.001");
  // The driver's part is fixed and the jitter is the backend's: the shortest statement drawn
  // must still hold the driver's part.
  const double shortest_us =
      c.workload.client_overhead_us * (1.0 - c.workload.client_overhead_jitter);
  if (c.workload.driver_us > shortest_us)
    fail(blame("workload.driver_us", "workload.client_overhead_us"),
         absl::StrFormat("driver_us %g is more than the shortest statement client_overhead_us %g "
                         "x (1 - client_overhead_jitter %g) = %g%s, of which it is a part",
                         c.workload.driver_us, c.workload.client_overhead_us,
                         c.workload.client_overhead_jitter, shortest_us,
                         origin("workload.client_overhead_us")),
         "driver_us <= client_overhead_us x (1 - client_overhead_jitter)");
  if (!c.workload.transactional && c.workload.name != "emit_message")
    fail(blame("workload.transactional", "workload.name"),
         "workload " + c.workload.name + " is always transactional" + origin("workload.name"),
         "\"transactional\": false only with emit_message");
  if (c.workload.unlogged_tables && c.workload.name == "emit_message")
    fail(blame("workload.tables", "workload.name"),
         "workload emit_message touches no table, so \"tables\": \"unlogged\" means nothing "
         "there" + origin("workload.name"),
         "\"tables\" with simple_update, tpcb_like or savepoints (pgbench's tables)");
}

// ---------------------------------------------------------------------------------------------
// What this machine allows a simulated cell

const HostLimits* g_host_limits_override = nullptr;

constexpr uint64_t kSimMappingsPerFiber = 2;  // the stack and its guard page
// The process's own mappings besides fiber stacks: libraries, heap, thread stacks; walbench
// has about 50-100 (/proc/PID/maps), the rest is headroom for -j threads and allocations.
constexpr uint64_t kProcessMappings = 1024;
// Resident memory per simulated client (stack pages touched, fiber and client state): measured
// with /usr/bin/time on short insert_locks runs, 34 MB at 1,000 clients, 100 MB at 8,000, 323 MB
// at 32,000: about 9.5 KiB each; 16 KiB leaves room for longer runs.
constexpr uint64_t kSimResidentBytesPerClient = 16 * 1024;

uint64_t read_proc_number(const char* file) {
  std::ifstream in(file);
  uint64_t x = 0;
  return in >> x ? x : 0;
}

// "MemTotal:  24000000 kB" -> bytes; 0 if absent.
uint64_t read_meminfo_bytes(const std::string& key) {
  std::ifstream in("/proc/meminfo");
  std::string name;
  uint64_t kib = 0;
  std::string unit;
  while (in >> name >> kib) {
    std::getline(in, unit);
    if (name == key + ":") return kib * 1024;
  }
  return 0;
}

HostLimits host_limits() {
  return g_host_limits_override != nullptr ? *g_host_limits_override : HostLimits::of_this_machine();
}

// A simulated cell runs every client, and the WAL writer, as a fiber with its own stack: mmap
// plus a PROT_NONE guard page (boost::context::protected_fixedsize_stack), two memory mappings
// each. Past vm.max_map_count the next mmap fails and the run dies with std::bad_alloc
// (measured: 32,770 stacks under the default 65530; walbench with 33,000 clients fails).
void check_host_limits(const CellSpec& c, const HostLimits& limits,
                       const std::map<std::string, std::string>& src, const std::string& file) {
  if (c.platform.kind != "sim") return;
  auto it = src.find("clients");
  const Where w{file, it == src.end() ? "" : it->second};
  // Clients, the WAL writer and, with workload.driver_us, a driver per client.
  const uint64_t fibers_per_client = c.workload.driver_us > 0 ? 2 : 1;
  const uint64_t fibers = uint64_t{c.clients} * fibers_per_client + 1;
  const uint64_t maps = fibers * kSimMappingsPerFiber + kProcessMappings;
  if (limits.max_map_count != 0 && maps > limits.max_map_count) {
    const uint64_t most = limits.max_map_count > kProcessMappings + kSimMappingsPerFiber
                              ? ((limits.max_map_count - kProcessMappings) / kSimMappingsPerFiber -
                                 1) / fibers_per_client
                              : 0;
    const uint64_t raise_to = (maps + 65535) / 65536 * 65536;
    fail(w,
         absl::StrFormat("%d simulated clients need about %d memory mappings (%d per fiber: a "
                         "stack and its guard page, for %d fibers with the WAL writer%s, plus %d "
                         "for the process), more than this machine's vm.max_map_count of %d",
                         c.clients, maps, kSimMappingsPerFiber, fibers,
                         fibers_per_client > 1 ? " and a driver per client" : "", kProcessMappings,
                         limits.max_map_count),
         absl::StrFormat("at most %d clients per simulated cell here, or a higher limit: sudo "
                         "sysctl -w vm.max_map_count=%d (with run -j N, cells running at once "
                         "share it)",
                         most, raise_to));
  }
  const uint64_t stack_bytes = uint64_t{c.platform.sim.value("stack_kib", 256u)} * 1024;
  const uint64_t per_fiber =
      limits.strict_overcommit ? stack_bytes + 4096 : kSimResidentBytesPerClient;
  if (limits.memory_bytes != 0 && fibers * per_fiber > limits.memory_bytes)
    fail(w,
         absl::StrFormat(
             "%d simulated clients need about %d MiB (%s), more than this machine's %s of %d MiB",
             c.clients, fibers * per_fiber >> 20,
             limits.strict_overcommit ? "their whole fiber stacks: vm.overcommit_memory is 2"
                                      : "16 KiB resident per client; about 10 KiB measured",
             limits.strict_overcommit ? "CommitLimit" : "memory", limits.memory_bytes >> 20),
         limits.strict_overcommit
             ? "fewer clients, a smaller platform.stack_kib, or vm.overcommit_memory 0"
             : "fewer clients per simulated cell");
}

// A cell with simulator parameters from the matrix or an override variant: its machine is the
// base platform's as written, those parameters over it, resolved again (so that a preset from
// the matrix applies under the platform's own keys). An error names where the parameter it
// blames was set (`at`: key without "platform." -> JSON path), else the first of them.
void resolve_sim_cell(CellSpec& c, const Plan& plan, const nlohmann::json& over,
                      const std::vector<std::pair<std::string, std::string>>& at) {
  if (c.platform.kind != "sim")
    fail(Where{plan.file, at.front().second},
         "platform." + at.front().first + " is a parameter of the simulated machine, and this " +
             "cell's platform.kind is \"" + c.platform.kind + "\"",
         "\"platform\": {\"kind\": \"sim\", ...} (configs/README.md, platform)");
  nlohmann::json whole = plan.base_sim ? plan.sim_given : nlohmann::json::object();
  for (const auto& [k, v] : over.items()) whole[k] = v;
  whole["kind"] = "sim";
  try {
    c.platform.sim = SimConfig::resolved_json(whole, "/platform", plan.preset_dir);
  } catch (const std::exception& e) {
    // SimConfig's messages start with the key's pointer: "/platform/cores: must be ...".
    std::string msg = e.what();
    std::string blamed = at.front().second;
    const size_t colon = msg.find(": ");
    if (msg.rfind("/platform/", 0) == 0 && colon != std::string::npos) {
      const std::string key = msg.substr(10, colon - 10);
      for (const auto& [k, path] : at)
        if (k == key || key.rfind(k + "/", 0) == 0) {
          blamed = path;
          msg = msg.substr(colon + 2);
          break;
        }
    }
    fail(Where{plan.file, blamed}, msg,
         "a valid simulated machine (configs/README.md, platform \"sim\"; core/platform/sim.h)");
  }
}

std::vector<CellSpec> expand(const Plan& plan) {
  size_t total = 0;
  try {
    total = cell_count(plan);
  } catch (const ConfigError& e) {
    if (plan.errors == nullptr) throw;
    plan.errors->push_back(e);
    return {};
  }
  std::set<std::string> reported;  // collecting: each cross-field error once, not once per cell
  const HostLimits limits = host_limits();
  // Dimensions: strategy variants, override variants (1 when none), clients, the other keys.
  std::vector<size_t> sizes = {plan.variants.size(), override_count(plan), plan.clients.size()};
  for (const auto& d : plan.dims) sizes.push_back(d.values.size());
  constexpr size_t kFirstDim = 3;

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

    // Simulator parameters of this cell (key without "platform.") and where each was set.
    nlohmann::json sim_over = nlohmann::json::object();
    std::vector<std::pair<std::string, std::string>> sim_at;
    auto set_path = [&](const std::string& key, PathKind kind, const FieldDef* field,
                        const OJson& value, const Where& w) {
      switch (kind) {
        case PathKind::kField:
          field->apply(c, value, w);
          src[key] = w.path;
          break;
        case PathKind::kParam:
          c.strategy_params[key.substr(kParamsPrefix.size())] = nlohmann::json(value);
          break;
        case PathKind::kSim:
          sim_over[key.substr(kPlatformPrefix.size())] = nlohmann::json(value);
          sim_at.emplace_back(key.substr(kPlatformPrefix.size()), w.path);
          src[key] = w.path;
          break;
      }
    };

    if (!plan.overrides.empty()) {
      const OverrideVariant& ov = plan.overrides[at[1]];
      c.label = plan.variants.size() > 1 ? v.label + "+" + ov.label : ov.label;
      c.variant_set = ov.set_json;
      if (sizes[1] > 1) c.matrix_values[kVariantsKey] = ov.label;
      for (const SetEntry& e : ov.set) set_path(e.key, e.kind, e.field, e.value, e.where);
    }

    c.clients = static_cast<uint32_t>(plan.clients[at[2]]);
    if (sizes[2] > 1) c.matrix_values["clients"] = c.clients;
    if (plan.clients_from_matrix) src["clients"] = plan.clients_at[at[2]];

    for (size_t k = 0; k < plan.dims.size(); ++k) {
      const Dim& d = plan.dims[k];
      const size_t i = at[k + kFirstDim];
      set_path(d.key, d.kind, d.field, d.values[i], d.item(i));
      if (d.values.size() > 1) c.matrix_values[d.key] = nlohmann::json(d.values[i]);
    }
    // platform.kind swept to "sim" from a threads base: the default machine, resolved.
    if (c.platform.kind == "sim" && c.platform.sim.empty()) c.platform.sim = SimConfig().to_json();
    // Collecting, each check on its own, and each error once however many cells share it.
    auto check = [&](auto&& run_check) {
      if (plan.errors == nullptr) return run_check();
      try {
        run_check();
      } catch (const ConfigError& e) {
        if (reported.insert(e.what()).second) plan.errors->push_back(e);
      }
    };
    if (!sim_at.empty() && !plan.sim_broken) {
      if (plan.errors == nullptr) {
        resolve_sim_cell(c, plan, sim_over, sim_at);
      } else {
        try {
          resolve_sim_cell(c, plan, sim_over, sim_at);
        } catch (const ConfigError& e) {
          // Collecting: each parameter on its own over the base machine, so that every bad value
          // is named; the combination's error when each alone is fine.
          bool alone = false;
          for (const auto& [key, path] : sim_at) {
            CellSpec scratch = c;
            check([&] {
              try {
                resolve_sim_cell(scratch, plan, nlohmann::json{{key, sim_over[key]}}, {{key, path}});
              } catch (const ConfigError&) {
                alone = true;
                throw;
              }
            });
          }
          if (!alone) check([&] { throw e; });
        }
      }
    }
    check([&] { check_cell(c, src, plan.file); });
    check([&] { check_host_limits(c, limits, src, plan.file); });
    cells.push_back(std::move(c));

    for (size_t k = sizes.size(); k-- > 0;) {
      if (++at[k] < sizes[k]) break;
      at[k] = 0;
    }
  }
  return cells;
}

}  // namespace

std::vector<CellSpec> expand_config(const OJson& config, const std::string& file,
                                    const std::string& preset_dir,
                                    std::vector<ConfigError>* errors, MatrixShape* shape) {
  Plan plan = parse_plan(config, file, preset_dir, errors);
  if (shape != nullptr) {
    shape->dims.clear();
    shape->dims.emplace_back("strategies", plan.variants.size());
    if (!plan.overrides.empty()) shape->dims.emplace_back(kVariantsKey, plan.overrides.size());
    shape->dims.emplace_back("clients", plan.clients.size());
    for (const auto& d : plan.dims) shape->dims.emplace_back(d.key, d.values.size());
    shape->cells = 0;
  }
  std::vector<CellSpec> cells = expand(plan);
  if (shape != nullptr) shape->cells = cells.size();
  return cells;
}

}  // namespace config_internal

using config_internal::OJson;

HostLimits HostLimits::of_this_machine() {
  HostLimits h;
  h.max_map_count = config_internal::read_proc_number("/proc/sys/vm/max_map_count");
  h.strict_overcommit = config_internal::read_proc_number("/proc/sys/vm/overcommit_memory") == 2;
  h.memory_bytes = config_internal::read_meminfo_bytes(h.strict_overcommit ? "CommitLimit" : "MemTotal");
  return h;
}

void set_host_limits_for_testing(const HostLimits* limits) {
  config_internal::g_host_limits_override = limits;
}

std::vector<CellSpec> expand_matrix(const nlohmann::ordered_json& config, const std::string& file,
                                    const std::string& preset_dir) {
  return config_internal::expand_config(config, file, preset_dir, nullptr, nullptr);
}

std::vector<CellSpec> expand_matrix(const nlohmann::json& config, const std::string& file,
                                    const std::string& preset_dir) {
  return expand_matrix(OJson(config), file, preset_dir);
}

std::string MatrixShape::describe() const {
  std::vector<std::string> parts;
  for (const auto& [name, n] : dims) {
    if (name == "strategies" || name == "clients" || name == config_internal::kVariantsKey) {
      const std::string singular = name == "strategies" ? "strategy"
                                   : name == "clients"  ? "client"
                                                        : "variant";
      parts.push_back(absl::StrFormat("%d %s", n, n == 1 ? singular : name));
    } else {
      parts.push_back(absl::StrFormat("%d %s", n, name));
    }
  }
  return absl::StrJoin(parts, " x ");
}

MatrixShape matrix_shape(const nlohmann::ordered_json& config, const std::string& file,
                         const std::string& preset_dir) {
  MatrixShape shape;
  config_internal::expand_config(config, file, preset_dir, nullptr, &shape);
  return shape;
}

}  // namespace walbench

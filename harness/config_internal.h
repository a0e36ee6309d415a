// What the config parser's files share (not part of the API: harness/config.h is).
//
//   config.cc           ConfigError, "did you mean", loading files, load_configs, config_errors
//   config_values.cc    value checks (want_int, want_string, ...) and record sizes
//   config_fields.cc    the schema: section fields, strategy variants and parameters, CLOG
//   config_matrix.cc    the plan (every key validated once), matrix expansion, cross-field and
//                       host-limit checks on each cell
//   config_override.cc  --set PATH=VALUE
//   config_postgres.cc  platform "postgres": its variant and its cross-field checks
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/config.h"
#include "core/cell/spec.h"

namespace walbench {
struct StrategyInfo;
struct ParamSpec;

namespace config_internal {

using OJson = nlohmann::ordered_json;

// ---- values (config_values.cc) ------------------------------------------------------------

std::string escape_pointer(const std::string& key);

// Where a value sits: the file (for messages) and its JSON Pointer.
struct Where {
  std::string file;
  std::string path;
  Where operator/(const std::string& key) const { return {file, path + "/" + escape_pointer(key)}; }
  Where operator/(size_t index) const { return {file, path + "/" + std::to_string(index)}; }
};

[[noreturn]] void fail(const Where& w, std::string problem, std::string expected,
                       std::string suggestion = "");
// A value as it appears in a message: JSON for scalars (strings shortened), a word otherwise.
std::string show(const OJson& v);
std::string kind_of(const OJson& v);  // "an integer", "a list", ...
std::string found(const OJson& v);    // "found an integer 3"
std::string quoted_list(const std::vector<std::string>& xs);
std::string fmt_num(double x);
void check_object(const OJson& v, const Where& w, const std::string& expected);
// Every key of `obj` must be in `allowed`.
void check_keys(const OJson& obj, const Where& w, const std::vector<std::string>& allowed);
int64_t want_int(const OJson& v, const Where& w, int64_t lo, int64_t hi, bool pow2 = false);
uint64_t want_uint64(const OJson& v, const Where& w);
// A number in [lo, hi], or in (lo, hi] when lo is exclusive.
double want_number(const OJson& v, const Where& w, double lo, bool lo_exclusive, double hi);
bool want_bool(const OJson& v, const Where& w);
std::string want_string(const OJson& v, const Where& w, const std::vector<std::string>& choices = {});

constexpr int64_t kMaxMessage = int64_t{1} << 30;  // 1 GiB: message length limit
SizeSpec parse_size(const OJson& v, const Where& w);

// ---- the schema (config_fields.cc) --------------------------------------------------------

using Apply = void (*)(CellSpec&, const OJson&, const Where&);
struct FieldDef {
  const char* section;
  const char* key;
  Apply apply;
};
constexpr int64_t kMaxU31 = std::numeric_limits<int32_t>::max();

inline const std::vector<std::string> kSections = {"platform", "wal",      "commit",
                                                   "workload", "clog",     "run"};
inline const std::vector<std::string> kTopKeys = {"description", "platform", "wal",      "commit",
                                                  "workload",    "clog",     "run",      "strategy",
                                                  "matrix",      "fitted"};
inline const std::vector<std::string> kVariantKeys = {"name", "label", "params"};
inline const std::string kParamsPrefix = "strategy.params.";
// matrix "variants": override variants, each {"label": ..., "set": {PATH: VALUE, ...}}.
inline const std::string kVariantsKey = "variants";
inline const std::vector<std::string> kOverrideVariantKeys = {"label", "set"};
inline const std::string kPlatformPrefix = "platform.";

const std::vector<FieldDef>& field_defs();
std::vector<std::string> section_keys(const std::string& section);
const FieldDef* find_field(const std::string& dotted);  // "wal.page_size"; nullptr if none
std::vector<std::string> strategy_names();
std::vector<std::string> matrix_keys();  // every key a matrix may hold (for "did you mean")
// The simulated machine's parameters as config keys of `platform` (SimConfig::json_keys()
// without "kind", a platform field, and "preset_file", which only resolved cells carry):
// "preset", "cores", "sockets", ...
std::vector<std::string> sim_param_keys();
bool is_sim_param(const std::string& key);  // key without "platform."
// Every dotted path an override variant may set (for "did you mean"): the section fields,
// platform.<simulator parameter> and strategy.params.<name>.
std::vector<std::string> settable_paths();
// A label of a strategy or override variant: 1..64 characters without spaces.
std::string want_label(const OJson& v, const Where& w);

// clog.strategy: a name or {"name": ..., "params": {...}}.
void parse_clog_strategy(ClogSpec& clog, const OJson& v, const Where& w);

// Checks one parameter value against its ParamSpec; returns it as stored in strategy_params.
nlohmann::json check_param(const ParamSpec& p, const OJson& v, const Where& w);
const ParamSpec* find_param(const StrategyInfo& info, const std::string& name);
std::string param_names(const StrategyInfo& info);  // "one of a, b" or "no parameters (...)"

// One strategy variant of a config.
struct Variant {
  const StrategyInfo* info = nullptr;
  std::string label;
  nlohmann::json params;        // defaults filled in, explicit values applied
  std::set<std::string> given;  // parameters the variant sets itself
  Where where;                  // of the variant
  bool label_given = false;
};
Variant parse_variant(const OJson& v, const Where& w);

// ---- platform "postgres" (config_postgres.cc) ---------------------------------------------

// The one strategy variant of a postgres config, which names none: strategy "server".
Variant server_variant(const Where& root);
// A key that only platform "postgres" takes, given to platform `kind`: fails.
void reject_postgres_key(const std::string& key, const Where& w, const std::string& kind);
// Cross-field checks of a postgres cell, and of postgres-only values on other cells; `src`
// maps a dotted field to the JSON path that set it (absent: the default).
void check_postgres_cell(const CellSpec& c, const std::map<std::string, std::string>& src,
                         const std::string& file);

// ---- the plan and the matrix (config_matrix.cc) -------------------------------------------

// Validates `config` and expands its matrix (expand_matrix). With `errors`, every error is
// appended there instead of the first being thrown, and the cells of the parts that passed are
// returned. `shape`, if given, receives the matrix's shape.
std::vector<CellSpec> expand_config(const OJson& config, const std::string& file,
                                    const std::string& preset_dir,
                                    std::vector<ConfigError>* errors, MatrixShape* shape);

}  // namespace config_internal
}  // namespace walbench

// --set PATH=VALUE: checks PATH against the schema (with "did you mean") and writes VALUE into
// the config JSON; the value itself is validated with the rest of the config.
#include "harness/config_internal.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/platform/sim.h"

namespace walbench {

using namespace config_internal;

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
                          "strategy, variants, clients, a section field such as "
                          "workload.record_size, platform.<simulator parameter> such as "
                          "platform.cores, or strategy.params.<name>",
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

}  // namespace walbench

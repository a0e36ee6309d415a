// Config value checks: each takes a JSON value and where it sits, returns it typed or throws a
// ConfigError naming the file, the JSON Pointer, what was found and what was expected.
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
#include "strategies/strategy.h"

namespace walbench::config_internal {

std::string escape_pointer(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

[[noreturn]] void fail(const Where& w, std::string problem, std::string expected,
                       std::string suggestion) {
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

int64_t want_int(const OJson& v, const Where& w, int64_t lo, int64_t hi, bool pow2) {
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

std::string want_string(const OJson& v, const Where& w, const std::vector<std::string>& choices) {
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


}  // namespace walbench::config_internal

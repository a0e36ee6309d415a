// SizeSpec's report label and JSON form. NB: to_json() must stay a value that the config parser
// (harness/config.cc, parse_size) accepts, so a result file's cell parameters can be pasted back
// into a config.
#include "core/cell/spec.h"

#include <cmath>

#include "absl/strings/str_format.h"

namespace walbench {

namespace {
// Default clamps of an exponential size (config.cc fills them in when a config omits them).
constexpr uint32_t kExpDefaultMin = 1;
constexpr uint32_t kExpDefaultMax = 1u << 30;
}  // namespace

std::string SizeSpec::label() const {
  switch (kind) {
    case Kind::kFixed:
      return absl::StrFormat("%u", value);
    case Kind::kUniform:
      return absl::StrFormat("uniform(%u,%u)", min, max);
    case Kind::kExponential:
      if (min == kExpDefaultMin && max == kExpDefaultMax) return absl::StrFormat("exp(%g)", mean);
      return absl::StrFormat("exp(%g,%u..%u)", mean, min, max);
  }
  return "?";
}

nlohmann::json SizeSpec::to_json() const {
  switch (kind) {
    case Kind::kFixed:
      return value;
    case Kind::kUniform:
      return {{"dist", "uniform"}, {"min", min}, {"max", max}};
    case Kind::kExponential:
      return {{"dist", "exponential"}, {"mean", mean}, {"min", min}, {"max", max}};
  }
  return nullptr;
}

}  // namespace walbench

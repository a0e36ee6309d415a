// Expanding a config given as JSON text in a test, and the ConfigError a bad one throws.
#pragma once

#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <vector>

#include "harness/config.h"

namespace walbench::testing {

inline std::vector<CellSpec> expand_config(const std::string& text,
                                           const std::string& file = "test.json") {
  return expand_matrix(nlohmann::ordered_json::parse(text), file);
}

// The ConfigError that expanding `text` throws (fails the test if none).
inline ConfigError error_of(const std::string& text, const std::string& file = "test.json") {
  try {
    expand_config(text, file);
  } catch (const ConfigError& e) {
    return e;
  }
  FAIL("no ConfigError for " << text);
  throw std::logic_error("unreachable");
}

}  // namespace walbench::testing

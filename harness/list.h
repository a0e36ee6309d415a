// `walbench list [strategies|workloads|platforms|all]`: what a config can name, with every
// parameter's type, default, allowed values and one-line doc. The strategy part is generated
// from the registry (strategies/registry.cc), so a new strategy shows up by its registry line.
#pragma once

#include <iosfwd>
#include <string>

namespace walbench {

// Prints the catalogue. `what` is "strategies", "workloads", "platforms" or "all" (also ""),
// singular forms accepted. Throws UsageError (harness/config.h) for anything else.
void print_list(std::ostream& out, const std::string& what);

// "walbench 0.1.0 (git 0123abcd4567, Release build)"
std::string version_string();

}  // namespace walbench

// Planted violations in a strategy .cc (parameter parsing, instantiations). Never compiled.
#include "strategies/planted/planted.h"

namespace walbench {
namespace {

uint64_t g_calls;  // expect-lint: namespace-scope variable
std::vector<int> g_history = {1, 2};  // expect-lint: namespace-scope variable
static Planted<int> g_instance(3);  // expect-lint: static
const char* const kName = "planted";

uint64_t counted() {
  static uint64_t n;  // expect-lint: static
  return ++n;
}

}  // namespace

int planted_params_from_json(int x);
template class Planted<int>;

int exempted() {
  static int cache;  // shared-state-lint: allow  // expect-lint: static, exemption
  static int warmed;  // shared-state-lint: allow owner-only, written before the run starts
  return cache + warmed;  // shared-state-lint: allow stale  // expect-lint: exemption
}

}  // namespace walbench

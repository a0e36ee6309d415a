// The line-name registry (line_names.h).
#include "core/platform/line_names.h"

#include <atomic>
#include <map>
#include <mutex>
#include <vector>

namespace walbench::line_names {
namespace {

struct Entry {
  size_t bytes;
  const char* name;
};

std::atomic<bool> g_enabled{false};
std::mutex g_mutex;
// Start address -> entry. Never destroyed: a lock destroyed after static destruction began (a
// cell thread still running at exit) must still find it.
std::map<uintptr_t, Entry>& registry() {
  static auto* m = new std::map<uintptr_t, Entry>;
  return *m;
}

}  // namespace

void enable() { g_enabled.store(true, std::memory_order_relaxed); }
bool enabled() { return g_enabled.load(std::memory_order_relaxed); }

void add(const void* p, size_t bytes, const char* name) {
  if (!enabled() || bytes == 0) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  registry()[reinterpret_cast<uintptr_t>(p)] = {bytes, name};
}

void remove(const void* p) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  registry().erase(reinterpret_cast<uintptr_t>(p));
}

std::string describe(uintptr_t line_address) {
  constexpr uintptr_t kLine = 64;
  constexpr size_t kLongestObject = 4096;  // no registered object spans more (locks: < 64 B)
  std::lock_guard<std::mutex> lock(g_mutex);
  const auto& m = registry();
  std::vector<const char*> names;
  const uintptr_t from = line_address > kLongestObject ? line_address - kLongestObject : 0;
  for (auto it = m.lower_bound(from); it != m.end() && it->first < line_address + kLine; ++it) {
    if (it->first + it->second.bytes <= line_address) continue;  // ends before the line
    bool seen = false;
    for (const char* n : names) seen = seen || std::string(n) == it->second.name;
    if (!seen) names.push_back(it->second.name);
  }
  std::string out;
  for (const char* n : names) out += (out.empty() ? "" : " + ") + std::string(n);
  return out;
}

}  // namespace walbench::line_names

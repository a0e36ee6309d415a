// Provenance of a result file; see provenance.h.
#include "harness/provenance.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/str_format.h"
#include "harness/runner.h"

namespace walbench {

namespace {

std::string& command_line_storage() {
  static std::string s;
  return s;
}

std::string read_cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  std::string fallback;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.pop_back();
    std::string value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.erase(value.begin());
    if (key == "model name" && !value.empty()) return value;
    if ((key == "Hardware" || key == "cpu model" || key == "uarch") && fallback.empty())
      fallback = value;
  }
  return fallback.empty() ? "unknown" : fallback;
}

// The current time formatted by strftime, in UTC or in the local time zone.
std::string format_now(const char* format, bool utc) {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  if (utc)
    gmtime_r(&t, &tm);
  else
    localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

// Runs a command and returns its standard output ("" when it fails).
std::string capture(const std::string& cmd, bool* ok) {
  *ok = false;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return "";
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  *ok = ::pclose(p) == 0;
  return out;
}

}  // namespace

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789-_./=:,+@%") == std::string::npos)
    return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string local_date() { return format_now("%Y-%m-%d", /*utc=*/false); }

std::string version_line() {
  const BuildInfo& b = build_info();
  return absl::StrFormat("walbench %s (git %s%s, %s build)", kWalbenchVersion,
                         b.git_sha.substr(0, 12), b.git_dirty ? "+dirty" : "", b.build_type);
}

nlohmann::json source_tree_now() {
  const BuildInfo& b = build_info();
  std::error_code ec;
  const std::filesystem::path script = std::filesystem::path(b.source_dir) / "cmake" / "build_info.cmake";
  if (b.source_dir.empty() || b.cmake_command.empty() || !std::filesystem::exists(script, ec))
    return nullptr;
  bool ok = false;
  const std::string out = capture(shell_quote(b.cmake_command) + " -DSRC=" +
                                      shell_quote(b.source_dir) + " -DBASE=" +
                                      shell_quote(b.git_sha) + " -DFORMAT=json -P " +
                                      shell_quote(script.string()) + " 2>/dev/null",
                                  &ok);
  if (!ok) return nullptr;
  const nlohmann::json j = nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("git_sha") || j["git_sha"] == "unknown") return nullptr;
  return j;
}

// The same sources: their difference from the build's commit hashes as the build's did (both
// empty when clean); commits that touch no source since do not count.
static bool same_tree(const nlohmann::json& now, const BuildInfo& b) {
  return now["git_diff_hash"] == b.git_diff_hash;
}

std::string stale_binary_warning() {
  const BuildInfo& b = build_info();
  const nlohmann::json now = source_tree_now();
  if (now.is_null() || same_tree(now, b)) return "";
  auto name = [](const std::string& sha, const std::string& diff_hash) {
    return sha.substr(0, 12) + (diff_hash.empty() ? "" : "+dirty(" + diff_hash.substr(0, 8) + ")");
  };
  return "walbench: warning: this binary was built from " + name(b.git_sha, b.git_diff_hash) +
         " but the sources now differ from that (HEAD " +
         now["git_sha"].get<std::string>().substr(0, 12) + ", difference " +
         now["git_diff_hash"].get<std::string>().substr(0, 8) +
         "); results record the build's state (rebuild to run the sources as they are)\n";
}

void set_command_line(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) s += (i ? " " : "") + shell_quote(argv[i]);
  command_line_storage() = s;
}

const std::string& command_line() { return command_line_storage(); }

nlohmann::ordered_json run_context() {
  nlohmann::ordered_json c;
  c["schema_version"] = kResultSchemaVersion;
  c["walbench_version"] = kWalbenchVersion;
  c["date"] = format_now("%Y-%m-%dT%H:%M:%SZ", /*utc=*/true);
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "unknown");
  c["host"] = std::string(host);
  c["cpu_model"] = read_cpu_model();
  c["logical_cores"] = std::thread::hardware_concurrency();
  struct utsname u {};
  if (uname(&u) == 0)
    c["kernel"] = absl::StrFormat("%s %s %s %s", u.sysname, u.release, u.version, u.machine);
  else
    c["kernel"] = "unknown";
  const BuildInfo& b = build_info();
  c["git_sha"] = b.git_sha;
  c["git_dirty"] = b.git_dirty;
  c["git_diff_hash"] = b.git_diff_hash.empty() ? nlohmann::ordered_json(nullptr)
                                               : nlohmann::ordered_json(b.git_diff_hash);
  const nlohmann::json now = source_tree_now();
  if (!now.is_null() && !same_tree(now, b)) c["source_tree_now"] = nlohmann::ordered_json(now);
  c["build"] = {{"type", b.build_type}, {"compiler", b.compiler}, {"flags", b.flags}};
  c["command_line"] = command_line();
  return c;
}

nlohmann::json machine_context() { return nlohmann::json(run_context()); }

}  // namespace walbench

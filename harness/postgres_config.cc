// platform "postgres": defaults, the server settings of a cell. See postgres_config.h.
#include "harness/postgres_config.h"

#include <libpq-fe.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>

#include "absl/strings/str_format.h"
#include "strategies/strategy.h"

namespace walbench {

const StrategyInfo& server_strategy_info() {
  static const StrategyInfo info = {
      kServerStrategy, "the PostgreSQL server's own build (platform \"postgres\")",
      "whatever WAL locking the server was built with; label builds by platform.bindir", {},
      nullptr};
  return info;
}

const std::vector<std::string>& postgres_platform_keys() {
  static const std::vector<std::string> keys = {"bindir", "dsn", "max_connections",
                                                "shared_buffers", "wal_dir"};
  return keys;
}

namespace {

std::string pg_config_bindir() {
  FILE* p = ::popen("pg_config --bindir 2>/dev/null", "r");
  if (p == nullptr) return "";
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  const int status = ::pclose(p);
  while (!out.empty() && std::isspace(static_cast<unsigned char>(out.back()))) out.pop_back();
  return status == 0 ? out : "";
}

}  // namespace

std::string default_bindir() {
  static std::once_flag once;
  static std::string bindir;
  std::call_once(once, [] {
    bindir = pg_config_bindir();
    if (bindir.empty()) bindir = kDebianBindir;
  });
  return bindir;
}

std::string resolve_bindir(const PostgresSpec& spec) {
  return spec.bindir.empty() ? default_bindir() : spec.bindir;
}

bool is_memory_setting(const std::string& value) {
  size_t i = 0;
  while (i < value.size() && std::isdigit(static_cast<unsigned char>(value[i]))) ++i;
  if (i == 0 || i > 12) return false;
  const std::string unit = value.substr(i);
  return unit.empty() || unit == "kB" || unit == "MB" || unit == "GB" || unit == "TB";
}

uint64_t wal_segsize_mb(const CellSpec& cell) { return cell.wal.segment_size >> 20; }

std::vector<std::pair<std::string, std::string>> server_settings(const CellSpec& cell) {
  auto on_off = [](bool b) { return std::string(b ? "on" : "off"); };
  std::vector<std::pair<std::string, std::string>> s = {
      {"max_connections", std::to_string(cell.platform.postgres.max_connections)},
      {"wal_buffers", std::to_string(cell.wal.wal_buffers)},
      {"fsync", on_off(cell.wal.fsync)},
      {"synchronous_commit", on_off(cell.commit.synchronous_commit)},
      {"wal_writer_delay",
       absl::StrFormat("%dms", static_cast<int64_t>(std::llround(cell.commit.wal_writer_delay_ms)))},
      {"wal_writer_flush_after", std::to_string(cell.commit.wal_writer_flush_after)},
      // The model's pgbench workloads write full-page images only when asked (off by default).
      {"full_page_writes", on_off(cell.workload.full_page_writes)},
  };
  if (!cell.platform.postgres.shared_buffers.empty())
    s.emplace_back("shared_buffers", cell.platform.postgres.shared_buffers);
  return s;
}

std::optional<std::string> rebuilt_conninfo(
    const std::string& dsn, const std::vector<std::pair<std::string, std::string>>& set,
    bool keep_password) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(dsn.c_str(), &error);
  if (error != nullptr) PQfreemem(error);
  if (options == nullptr) return std::nullopt;
  auto quoted = [](const std::string& v) {
    std::string q = "'";
    for (char c : v) {
      if (c == '\'' || c == '\\') q += '\\';
      q += c;
    }
    return q + "'";
  };
  std::string out;
  auto add = [&](const std::string& key, const std::string& value) {
    out += (out.empty() ? "" : " ") + key + "=" + quoted(value);
  };
  for (const PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
    if (o->val == nullptr || (!keep_password && std::strcmp(o->keyword, "password") == 0)) continue;
    if (std::any_of(set.begin(), set.end(), [&](const auto& kv) { return kv.first == o->keyword; }))
      continue;
    add(o->keyword, o->val);
  }
  PQconninfoFree(options);
  for (const auto& [key, value] : set) add(key, value);
  return out;
}

nlohmann::json config_without_passwords(nlohmann::json config) {
  if (config.is_object()) {
    for (auto& [key, value] : config.items()) {
      if (key == "dsn" && value.is_string())
        value = dsn_without_password(value.get<std::string>());
      else
        value = config_without_passwords(std::move(value));
    }
  } else if (config.is_array()) {
    for (auto& value : config) value = config_without_passwords(std::move(value));
  }
  return config;
}

std::vector<std::string> overrides_without_passwords(std::vector<std::string> overrides) {
  const std::string key = "platform.dsn=";
  for (std::string& o : overrides) {
    if (o.rfind(key, 0) != 0) continue;
    std::string value = o.substr(key.size());
    const auto parsed = nlohmann::json::parse(value, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_string()) value = parsed.get<std::string>();
    o = key + dsn_without_password(value);
  }
  return overrides;
}

std::string dsn_without_password(const std::string& dsn) {
  if (dsn.empty()) return dsn;
  return rebuilt_conninfo(dsn, {}, /*keep_password=*/false)
      .value_or("(a dsn libpq cannot parse)");
}

}  // namespace walbench

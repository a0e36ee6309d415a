// platform "postgres" in the config parser: the variant of a config that names no strategy,
// and the rules between the platform and the model's sections (harness/postgres_config.h says
// which section fields become server settings and which the server's build fixes).
#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "absl/strings/str_format.h"
#include "harness/config_internal.h"
#include "harness/postgres_config.h"
#include "strategies/strategy.h"

namespace walbench::config_internal {

Variant server_variant(const Where& root) {
  Variant v;
  v.info = &server_strategy_info();
  v.label = "postgres";
  v.params = nlohmann::json::object();
  v.where = root;
  return v;
}

void reject_postgres_key(const std::string& key, const Where& w, const std::string& kind) {
  const auto& keys = postgres_platform_keys();
  if (std::find(keys.begin(), keys.end(), key) == keys.end()) return;
  fail(w, "platform." + key + " is a setting of platform \"postgres\", and this platform is \"" +
              kind + "\"",
       "\"platform\": {\"kind\": \"postgres\", \"" + key + "\": ...}, or no " + key);
}

namespace {

// Section fields of the model that a PostgreSQL server has no setting for: its build, or
// pgbench's scripts, fix them.
const char* const kModelOnlyFields[] = {
    "platform.atomics",     "platform.spinlocks",       "wal.storage",
    "wal.path",             "wal.memory_mb",            "wal.buffer_init",
    "clog.strategy",        "clog.clog_buffers",        "clog.page_size",
    "clog.hint_bit_miss",   "clog.procarray",           "clog.snapshot",
    "clog.snapshots_per_statement", "clog.lookup_xids", "clog.xid_history", "clog.xid_locks",
    "workload.client_overhead_us", "workload.client_overhead_jitter",
    "workload.payload_ns_per_byte", "workload.driver_us",
};

// Model fields that become server settings of a throwaway cluster (postgres_config.h).
const char* const kServerSettingFields[] = {
    "wal.wal_buffers", "wal.fsync", "wal.segment_size", "commit.synchronous_commit",
    "commit.wal_writer_delay_ms", "commit.wal_writer_flush_after",
    "platform.max_connections", "platform.shared_buffers", "platform.wal_dir",
};

}  // namespace

void check_postgres_cell(const CellSpec& c, const std::map<std::string, std::string>& src,
                         const std::string& file) {
  auto from = [&](const std::string& field) {
    auto it = src.find(field);
    return it == src.end() ? std::string() : it->second;
  };
  if (c.platform.kind != "postgres") {
    for (const std::string& key : postgres_platform_keys())
      if (!from("platform." + key).empty())
        reject_postgres_key(key, Where{file, from("platform." + key)}, c.platform.kind);
    if (c.strategy == kServerStrategy)
      fail(Where{file, from("platform.kind")},
           "this cell's platform is \"" + c.platform.kind + "\" and the config names no strategy",
           "a strategy (\"strategy\" or matrix.strategy) for the model's platforms");
    return;
  }
  // (A strategy given with a postgres base platform is the plan's error, reported once.)
  if (c.strategy != kServerStrategy && from("platform.kind") != "/platform/kind")
    fail(Where{file, from("platform.kind")},
         "strategy " + c.strategy + " is a model of the WAL; a PostgreSQL server runs its own build",
         "no strategy with platform \"postgres\" (label builds by platform.bindir in matrix "
         "variants)");
  for (const char* field : kModelOnlyFields)
    if (!from(field).empty())
      fail(Where{file, from(field)},
           std::string(field) + " is a setting of the model; a PostgreSQL server's build or "
                                "pgbench's scripts fix it",
           "no " + std::string(field) + " with platform \"postgres\" (harness/postgres_config.h)");
  if (!c.platform.postgres.dsn.empty()) {
    for (const char* field : kServerSettingFields)
      if (!from(field).empty())
        fail(Where{file, from(field)},
             std::string(field) +
                 " sets up a throwaway cluster, and platform.dsn names an existing server, whose "
                 "own settings hold",
             "no " + std::string(field) + " with platform.dsn (set it on that server), or no dsn");
    return;
  }
  const double delay = c.commit.wal_writer_delay_ms;
  if (delay < 1 || delay != std::floor(delay))
    fail(Where{file, from("commit.wal_writer_delay_ms")},
         absl::StrFormat("wal_writer_delay_ms %g is not a whole number of milliseconds >= 1",
                         delay),
         "an integer in 1..10000 (PostgreSQL's wal_writer_delay)");
  if (c.wal.segment_size < (uint64_t{1} << 20))
    fail(Where{file, from("wal.segment_size")},
         absl::StrFormat("segment_size %d is below 1 MiB", c.wal.segment_size),
         "a power of two from 1 MiB to 1 GiB (initdb --wal-segsize)");
  // pgbench's clients and walbench's observer connection, as superuser (the reserved slots
  // count).
  const uint64_t needed = uint64_t{c.clients} + 2;
  if (needed > c.platform.postgres.max_connections) {
    const std::string at = !from("platform.max_connections").empty()
                               ? from("platform.max_connections")
                               : from("clients");
    fail(Where{file, at},
         absl::StrFormat("%d clients and walbench's 2 connections exceed max_connections %d",
                         c.clients, c.platform.postgres.max_connections),
         absl::StrFormat("platform.max_connections >= %d", needed));
  }
}

}  // namespace walbench::config_internal

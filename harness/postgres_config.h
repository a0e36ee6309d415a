// platform {"kind": "postgres"}: the config side of running a matrix against a real PostgreSQL
// server (configs/README.md, platform "postgres"; the server itself: harness/postgres_server.h).
//
// One key per concept: the server settings the model also has come from the model's sections,
// so that one config describes the model and the server alike and `compare` pairs their cells:
//   wal.wal_buffers -> wal_buffers (pages of XLOG_BLCKSZ)   wal.fsync -> fsync
//   wal.segment_size -> initdb --wal-segsize                commit.synchronous_commit
//   commit.wal_writer_delay_ms -> wal_writer_delay          commit.wal_writer_flush_after
//   workload.full_page_writes -> full_page_writes (off by default, as the model's)
// The platform block holds only what the model has not: bindir, dsn, max_connections,
// shared_buffers, wal_dir. What the server's build fixes (the WAL locking strategy, atomics,
// spinlocks, the CLOG strategy) cannot be configured: a postgres config names no strategy and
// its cells carry the strategy "server".
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/cell/spec.h"

namespace walbench {

struct StrategyInfo;

// The strategy of every postgres cell: the server's build decides it.
inline constexpr const char* kServerStrategy = "server";
// Its registry-like entry (no parameters, no model), for the config parser.
const StrategyInfo& server_strategy_info();

// The keys of `platform` that only kind "postgres" takes.
const std::vector<std::string>& postgres_platform_keys();

// Where PostgreSQL's programs are, when platform.bindir is not given: `pg_config --bindir` (the
// first pg_config on PATH), else Debian's /usr/lib/postgresql/15/bin.
inline constexpr const char* kDebianBindir = "/usr/lib/postgresql/15/bin";
std::string default_bindir();
std::string resolve_bindir(const PostgresSpec& spec);

// A PostgreSQL memory setting as postgresql.conf takes it: digits, optionally followed by one
// of kB, MB, GB, TB ("128MB", "16384" = pages).
bool is_memory_setting(const std::string& value);

// The settings a throwaway cluster gets for a cell, in the order written to postgresql.conf
// (name, value as postgresql.conf takes it). Does not include port and socket settings.
std::vector<std::pair<std::string, std::string>> server_settings(const CellSpec& cell);

// `dsn` (key=value or URI) as walbench records and prints it: without its password, rebuilt as
// key=value pairs by PQconninfoParse (libpq's own parser). A dsn libpq cannot parse comes back
// as "(a dsn libpq cannot parse)", never verbatim: it may hold a password. "" stays "". A server
// that needs a password should get it from ~/.pgpass or PGPASSWORD.
std::string dsn_without_password(const std::string& dsn);
// A config (JSON) as walbench records it in a result's context: every "dsn" string
// dsn_without_password(); and --set overrides likewise ("platform.dsn=VALUE", VALUE raw or a
// JSON string).
nlohmann::json config_without_passwords(nlohmann::json config);
std::vector<std::string> overrides_without_passwords(std::vector<std::string> overrides);

// `dsn` rebuilt as key=value pairs with the keys of `set` replaced (or added), the password kept
// only when `keep_password`; nullopt when libpq cannot parse it.
std::optional<std::string> rebuilt_conninfo(
    const std::string& dsn, const std::vector<std::pair<std::string, std::string>>& set,
    bool keep_password);

// initdb's --wal-segsize for a cell: wal.segment_size in MiB.
uint64_t wal_segsize_mb(const CellSpec& cell);

}  // namespace walbench

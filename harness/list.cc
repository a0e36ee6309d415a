// The catalogue behind `walbench list`. Strategies come from the registry; workloads and
// platforms are described here. NB: the workload and platform entries must match what
// harness/config.cc accepts and configs/README.md documents.
#include "harness/list.h"

#include "core/platform/sim.h"

#include <algorithm>
#include <ostream>
#include <sstream>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "harness/config.h"
#include "harness/provenance.h"
#include "harness/runner.h"  // kWalbenchVersion
#include "core/cell/spec.h"
#include "harness/postgres_config.h"
#include "strategies/strategy.h"


namespace walbench {

namespace {

constexpr size_t kWidth = 100;  // wrap column

// One documented parameter, already rendered to text.
struct Row {
  std::string name, type, def, allowed, doc;
};

// One catalogue entry: a strategy, a workload or a platform.
struct Entry {
  std::string name, origin, summary;
  std::vector<Row> rows;
};

std::string fmt_num(double x) {
  if (x == static_cast<double>(static_cast<int64_t>(x))) return absl::StrFormat("%d", static_cast<int64_t>(x));
  return absl::StrFormat("%g", x);
}

Row row_of(const ParamSpec& p) {
  using T = ParamSpec::Type;
  Row r;
  r.name = p.name;
  r.def = p.default_value.dump();
  r.doc = p.doc;
  const bool ranged = !(p.min == 0 && p.max == 0);
  switch (p.type) {
    case T::kInt:
      r.type = "int";
      r.allowed = ranged ? fmt_num(p.min) + ".." + fmt_num(p.max) : "any integer";
      if (p.power_of_two) r.allowed += ", power of two";
      break;
    case T::kDouble:
      r.type = "number";
      r.allowed = ranged ? fmt_num(p.min) + ".." + fmt_num(p.max) : "any number";
      break;
    case T::kBool:
      r.type = "bool";
      r.allowed = "true | false";
      break;
    case T::kString:
      r.type = "string";
      r.allowed = p.choices.empty() ? "any string" : absl::StrJoin(p.choices, " | ");
      break;
  }
  return r;
}

// Greedy word wrap of `text` into lines of at most `width` characters.
std::vector<std::string> wrap(const std::string& text, size_t width) {
  std::vector<std::string> lines;
  std::string line;
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      lines.push_back(line);
      line.clear();
    }
    if (!line.empty()) line += ' ';
    line.append(word.data(), word.size());
  }
  if (!line.empty() || lines.empty()) lines.push_back(line);
  return lines;
}

void print_wrapped(std::ostream& out, const std::string& first_prefix, const std::string& text) {
  const std::string indent(first_prefix.size(), ' ');
  const size_t width = kWidth > first_prefix.size() + 20 ? kWidth - first_prefix.size() : 20;
  const auto lines = wrap(text, width);
  for (size_t i = 0; i < lines.size(); ++i) out << (i == 0 ? first_prefix : indent) << lines[i] << '\n';
}

void print_section(std::ostream& out, const std::string& title, const std::string& how,
                   const std::vector<Entry>& entries) {
  out << title << '\n';
  print_wrapped(out, "  ", how);
  // Parameter columns are aligned across the whole section.
  size_t wn = 4, wt = 4, wd = 7;
  for (const auto& e : entries)
    for (const auto& r : e.rows) {
      wn = std::max(wn, r.name.size());
      wt = std::max(wt, r.type.size());
      wd = std::max(wd, r.def.size());
    }
  for (const auto& e : entries) {
    out << '\n' << "  " << e.name << '\n';
    print_wrapped(out, "    origin   ", e.origin);
    print_wrapped(out, "    summary  ", e.summary);
    if (e.rows.empty()) {
      out << "    params   none\n";
      continue;
    }
    const std::string pre = "    params   ";
    out << pre
        << absl::StrFormat("%-*s  %-*s  %-*s  %s", wn, "name", wt, "type", wd, "default", "allowed")
        << '\n';
    for (const auto& r : e.rows) {
      out << std::string(pre.size(), ' ')
          << absl::StrFormat("%-*s  %-*s  %-*s  %s", wn, r.name, wt, r.type, wd, r.def, r.allowed)
          << '\n';
      print_wrapped(out, std::string(pre.size() + wn + 2, ' '), r.doc);
    }
  }
}

std::vector<Entry> strategy_entries() {
  std::vector<Entry> out;
  for (const auto& s : strategies()) {
    Entry e{s.name, s.origin, s.summary, {}};
    for (const auto& p : s.params) e.rows.push_back(row_of(p));
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<Entry> clog_entries() {
  std::vector<Entry> out;
  for (const auto& s : clog_strategies()) {
    Entry e{s.name, s.origin, s.summary, {}};
    for (const auto& p : s.params) e.rows.push_back(row_of(p));
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<Entry> workload_entries() {
  const WorkloadSpec d;
  const auto b = [](bool x) { return std::string(x ? "true" : "false"); };
  const Row jitter_row{
      "client_overhead_jitter", "number", fmt_num(d.client_overhead_jitter), "0..1",
      "each statement's work is drawn uniformly from client_overhead_us x [1-j, 1+j] "
      "(per-client seeded: deterministic); 0: every statement takes exactly the mean, which on "
      "the simulated platform lets clients march in lockstep"};
  const Row driver_row{
      "driver_us", "number", fmt_num(d.driver_us),
      "0, or 0.001..client_overhead_us x (1 - client_overhead_jitter)",
      "simulated platform only: the client driver's (pgbench's thread's) CPU per statement, in "
      "us, part of client_overhead_us, on a thread of its own per client: the backend hands it "
      "each result and blocks (ClientRead) until it sends the next statement, so every "
      "statement costs two wake-ups and the drivers compete for CPUs (core/cell/wal_cell.h "
      "\"THE CLIENT DRIVER\"); 0: no driver thread, the round trip is backend work"};
  const std::vector<Row> overhead_rows = {
      {"client_overhead_us", "number", fmt_num(d.client_overhead_us), "0..10000000",
       "per-statement work outside any lock"},
      jitter_row, driver_row};
  // pgbench workloads: full-page images after checkpoints (core/cell/full_page_images.h).
  std::vector<Row> pgbench_rows = overhead_rows;
  pgbench_rows.push_back(
      {"full_page_writes", "bool", b(d.full_page_writes), "true | false",
       "PostgreSQL's full_page_writes: the first modification of a page after a checkpoint "
       "carries the page (8 KiB minus its hole); probability from table size, rate and "
       "checkpoint_timeout_s, averaged over the checkpoint cycle; off by default (PostgreSQL's "
       "is on): checkpoints requested by WAL volume are not modelled"});
  pgbench_rows.push_back({"checkpoint_timeout_s", "number", fmt_num(d.checkpoint_timeout_s),
                          "0..86400 (exclusive 0)",
                          "seconds between checkpoints (PostgreSQL's checkpoint_timeout)"});
  pgbench_rows.push_back({"scale", "integer", std::to_string(d.scale), "1..100000",
                          "pgbench's scale factor: 100000 accounts rows, 10 tellers and 1 "
                          "branch per unit (the tables whose pages are imaged); tpcb_like and "
                          "savepoints lock a teller and a branch drawn from them, so at a scale "
                          "below the clients transactions queue on rows (at 1, on the one branch)"});
  pgbench_rows.push_back(
      {"tables", "string", d.unlogged_tables ? "\"unlogged\"" : "\"permanent\"",
       "permanent | unlogged",
       "unlogged: pgbench's tables created UNLOGGED (pgbench -i --unlogged-tables): no heap, "
       "prune, btree or lock record and no page image, only the COMMIT, not flushed at commit "
       "(a transaction that wrote no WAL before its commit record takes the asynchronous path "
       "whatever commit.synchronous_commit says: the WAL writer writes and flushes it); xids, "
       "CLOG and snapshots as with permanent "
       "tables. A matrix key workload.tables matches a reference table's `tables` column"});
  return {
      {"emit_message",
       "PostgreSQL's SELECT pg_logical_emit_message(true, 'test', repeat('0', N)), one statement "
       "per transaction (the benchmark of the 2023 WAL insertion lock thread)",
       "one LogicalMessage record of 55+N bytes (N <= 226) or 58+N bytes (N below 10 counts as "
       "10: the message carries walbench's tag), then, when transactional, a 44-byte commit record (PG 15's 34 + "
       "the tag), a flush (if commit.synchronous_commit) and the CLOG update",
       {
           {"record_size", "size", d.record_size.label(),
            "1..1073741824, or a distribution object",
            "message length N in bytes: a number, {\"dist\": \"uniform\", \"min\": a, \"max\": "
            "b} or {\"dist\": \"exponential\", \"mean\": m, \"min\": a, \"max\": b}, drawn per "
            "transaction"},
           {"transactional", "bool", b(d.transactional), "true | false",
            "assign an xid and end with a commit record, a flush (when synchronous) and the "
            "CLOG update; false: the message record only, no xid, no CLOG"},
           {"client_overhead_us", "number", fmt_num(d.client_overhead_us), "0..10000000",
            "per-statement work outside any lock, in microseconds (parse, execute, network "
            "round trip): sets how much of a transaction contends; emit_message has one "
            "statement per transaction"},
           jitter_row,
           driver_row,
           {"payload_ns_per_byte", "number", fmt_num(d.payload_ns_per_byte), "0..1000000",
            "work per message byte outside any lock, in ns (the backend building the payload: "
            "repeat(), datum copies), on top of client_overhead_us"},
       }},
      {"simple_update",
       "pgbench -N (simple-update) in WAL terms, PostgreSQL 15 record sizes (PROTOCOLS.md "
       "section 7): 5 statements, mean 278 B/txn in PG 15 (measured 277), 288 here "
       "(the commit's tag), 298 MAXALIGNed as results count it",
       "BEGIN; UPDATE pgbench_accounts: Heap2/PRUNE 68 B (p 0.6), then Heap/HOT_UPDATE 72 B or "
       "(p 0.3) Heap/UPDATE 180 B + Btree/INSERT_LEAF 64 B; SELECT; INSERT INTO pgbench_history: "
       "Heap/INSERT 80 B; END: COMMIT 34 B + 10 B tag, flush (synchronous_commit; not on unlogged "
       "tables), CLOG update",
       pgbench_rows},
      {"tpcb_like",
       "pgbench's default TPC-B-like script in WAL terms, PostgreSQL 15 record sizes "
       "(PROTOCOLS.md section 7): 7 statements, mean 434 B/txn in PG 15 (measured 434), 432 here "
       "without row-lock waits, 440 MAXALIGNed as results count it; + 59 B (64) per wait",
       "BEGIN; UPDATE pgbench_accounts (as simple_update); SELECT; UPDATE pgbench_tellers and "
       "UPDATE pgbench_branches: Heap/HOT_UPDATE 72 B each, of a row drawn as pgbench does, under "
       "its page's content lock; a row whose updater is still in progress is waited for "
       "(Lock:transactionid) and locked again, Heap/LOCK 59 B, first (core/cell/row_locks.h); "
       "INSERT INTO pgbench_history: Heap/INSERT 80 B; END: COMMIT 34 B + 10 B tag, flush "
       "(synchronous_commit; not on unlogged tables), "
       "CLOG",
       pgbench_rows},
      {"savepoints",
       "the SELECT ... FOR UPDATE script with three savepoints (subtransactions in CLOG; "
       "thread \"Speed up Clog Access by increasing CLOG buffers\", Kapila 2015-17)",
       "BEGIN; SELECT ... FOR UPDATE: top-level xid, Heap/LOCK 59 B; 3 x (SAVEPOINT; SELECT ... "
       "FOR UPDATE: a subtransaction xid, Heap/LOCK 59 B; the teller and the branch wait for a "
       "holder in progress, core/cell/row_locks.h); END: COMMIT 54 B (3 subxacts) + 10 B "
       "tag, flush (synchronous_commit; not on unlogged tables), the tree's status set with the "
       "parent's (<= 5 subxids: group path); 290 "
       "B/txn in PG 15, 300 here, 320 MAXALIGNed",
       pgbench_rows},
  };
}

// The simulated machine: every SimConfig key with the default preset's value (sources of each
// default: the table at the top of core/platform/sim.h).
Entry sim_entry() {
  Entry e{"sim", "walbench simulator (core/platform/sim.h), deterministic virtual time",
          "one fiber per client on a simulated many-core machine: cache-line transfers, RMW "
          "serialisation, run queue and time slices, semaphore wake latency, copy/CRC/storage "
          "bandwidth; same config and seed give identical results on any machine",
          {}};
  e.rows.push_back({"preset", "string", "\"icelake_2s\"",
                    absl::StrJoin(SimConfig::preset_names(), " | ") + " | FILE.json",
                    "base machine; the keys below override it. FILE.json: a preset file "
                    "(presets/README.md), absolute or relative to the config's directory (to "
                    "the current directory with --set), then in the repository's presets/; "
                    "`walbench calibrate` writes one for this machine. A result cell records "
                    "every key below, the preset and the absolute preset_file read"});
  // Every numeric parameter from SimConfig's own table (the one validate() enforces): unit and
  // range in the "allowed" column, the one-line doc below; defaults and their sources are at the
  // top of core/platform/sim.h.
  const nlohmann::json d = SimConfig{}.to_json();
  e.rows.push_back({"placement", "string", d.at("placement").dump(), "spread | compact",
                    "where runnable threads go when several hardware threads are free: spread "
                    "= round-robin over sockets, physical cores before SMT siblings (Linux-like); "
                    "compact = fill socket 0 first"});
  for (const SimConfig::ParamInfo& p : SimConfig::param_info()) {
    const nlohmann::json& v = d.at(p.name);
    const std::string type = v.is_number_integer() || v.is_number_unsigned() ? "int" : "number";
    e.rows.push_back({p.name, type, v.dump(), p.range + " " + p.unit, p.doc});
  }
  return e;
}

// platform "postgres" (harness/postgres_config.h, harness/postgres_server.h).
Entry postgres_entry() {
  const PostgresSpec d;
  return {"postgres", "a PostgreSQL server",
          "a real server: a throwaway cluster (initdb in a temporary directory, "
          "pg_ctl start on a Unix socket only, stopped and removed at the end, also on error and "
          "SIGINT), or an existing one (dsn). As root the cluster runs as the OS user "
          "\"walbench\" when it exists, else \"nobody\" (PostgreSQL refuses root). Server "
          "settings come from wal.wal_buffers, wal.fsync, wal.segment_size, commit.* and "
          "workload.full_page_writes; the server's build is the strategy (a postgres config "
          "names none). pgbench drives each cell (emit_message as a custom script, "
          "simple_update -N, tpcb_like); the window, latency and progress come from its "
          "per-transaction log, WAL bytes from pg_current_wal_insert_lsn(), per-transaction "
          "WAL figures from pg_stat_wal, wait events from pg_stat_activity every 10 ms "
          "(harness/RESULTS.md \"platform postgres\")",
          {
              {"bindir", "string", "\"\" (pg_config --bindir, else " + std::string(kDebianBindir) + ")",
               "a directory", "PostgreSQL's programs (initdb, pg_ctl, postgres, pgbench): any "
               "build, a patched one included; label builds by bindir in matrix variants"},
              {"dsn", "string", "\"\" (a throwaway cluster)", "libpq conninfo",
               "an existing server instead; its own settings hold"},
              {"max_connections", "int", std::to_string(d.max_connections), "1..262143",
               "throwaway cluster; at least clients + 2"},
              {"shared_buffers", "string", "\"\" (initdb's)", "\"128MB\", \"1GB\", pages",
               "throwaway cluster"},
              {"wal_dir", "string", "\"\" (in the data directory)", "an absolute path",
               "throwaway cluster: pg_wal in a fresh directory under it (a tmpfs), removed at "
               "the end"},
          }};
}

std::vector<Entry> platform_entries() {
  const PlatformSpec d;
  return {
      {"threads", "this machine",
       "one OS thread per client (std::thread); spinlocks spin and LWLocks sleep for real; "
       "wall-clock throughput and latency",
       {
           {"atomics", "string", "\"" + d.atomics + "\"", "native | emulated",
            "emulated: PostgreSQL's --disable-atomics (removed in 18, 8138526136): every atomic "
            "write, exchange, CAS and fetch-op takes the spinlock embedded in the atomic (in the "
            "value's cache line); reads stay plain; words PostgreSQL declares plain are not "
            "emulated"},
           {"spinlocks", "string", "\"" + d.spinlocks + "\"", "native | semaphore",
            "semaphore: PostgreSQL's --disable-spinlocks (removed in 18, e25626677f): a spinlock "
            "is one of 128 semaphores assigned round-robin, TAS = trylock, no PAUSE; emulated "
            "atomics then use a separate set of 64 semaphores"},
       }},
      sim_entry(),
      postgres_entry(),
  };
}

}  // namespace

void print_list(std::ostream& out, const std::string& what) {
  std::string w = what;
  if (w == "strategy") w = "strategies";
  if (w == "workload") w = "workloads";
  if (w == "platform") w = "platforms";
  if (w.empty()) w = "all";
  if (w == "clog_strategies") w = "clog";
  const std::vector<std::string> allowed = {"strategies", "clog", "workloads", "platforms", "all"};
  if (std::find(allowed.begin(), allowed.end(), w) == allowed.end()) {
    const std::string hint = closest_match(w, allowed);
    throw UsageError("list: unknown category \"" + what + "\"; expected one of " +
                     absl::StrJoin(allowed, ", ") +
                     (hint.empty() ? "" : " (did you mean \"" + hint + "\"?)"));
  }
  bool first = true;
  auto gap = [&] {
    if (!first) out << '\n';
    first = false;
  };
  if (w == "strategies" || w == "all") {
    gap();
    print_section(out, "STRATEGIES",
                  "in a config: \"strategy\": {\"name\": NAME, \"label\": LABEL, \"params\": "
                  "{...}}, or a list of those under \"matrix\": {\"strategy\": [...]}; sweep one "
                  "parameter with the matrix key \"strategy.params.NAME\"",
                  strategy_entries());
  }
  if (w == "clog" || w == "all") {
    gap();
    const ClogSpec d;
    print_section(out, "CLOG STRATEGIES",
                  "how committers set their transaction's status in the commit log "
                  "(transactional workloads). In a config: \"clog\": {\"strategy\": NAME or "
                  "{\"name\": NAME, \"params\": {...}}, \"clog_buffers\": N (default " +
                      std::to_string(d.clog_buffers) + ", 4..16384), \"page_size\": BYTES "
                      "(default " + std::to_string(d.page_size) +
                      "), \"hint_bit_miss\": P (default 0.5, 0..1: the probability that a row "
                      "a statement visits has unset hint bits, so its xid is looked up under "
                      "CLogControlLock shared, exclusive to read its page in), \"procarray\": \"off\" (default), "
                      "\"exclusive\" (PG <= 9.5: ProcArrayLock per commit) or "
                      "\"group_clear\" (9.6+ ProcArrayGroupClearXid; snapshots under "
                      "ProcArrayLock shared), \"snapshot\": \"pgxact\" (default: PG 9.2-13's "
                      "GetSnapshotData, a scan of the 12-byte PGXACT array) or \"dense\" (PG 14+: "
                      "the dense xids array, and the last snapshot reused while no transaction "
                      "with an xid ended since), \"snapshots_per_statement\": 2 (default: PostgreSQL "
                      "in READ COMMITTED, one snapshot for planning and a new one for execution) "
                      "or 1, \"lookup_xids\": \"run\" (default: a looked-up xid is uniform over "
                      "those handed out since pgbench -i) or \"pgbench_pages\" (the last unhinted "
                      "stamp on the row's heap page, any visit to a page hinting it: its age "
                      "drawn from the table's pages at workload.scale; none older than pgbench "
                      "-i), \"xid_history\": N (default 0, "
                      "0..1e9: xids handed out between pgbench -i and the run, all committed, on "
                      "CLOG pages that a lookup reads in, evicting others, when they are not in a "
                      "buffer), \"xid_locks\": true (default: every assigned xid's heavyweight "
                      "lock in PostgreSQL's shared lock table, 16 LockManager partition LWLocks "
                      "and two partitioned hash tables, taken at assignment and released at the "
                      "end; core/clog/xid_lock_table.h) or false (left out, as result files "
                      "made before 8b3317e, 2026-12-07, ran)}; sweep with the matrix key \"clog.strategy\" or as override "
                      "variants",
                  clog_entries());
  }
  if (w == "workloads" || w == "all") {
    gap();
    print_section(out, "WORKLOADS",
                  "in a config: \"workload\": {\"name\": NAME, ...}; sweep a parameter with the "
                  "matrix key \"workload.NAME\"",
                  workload_entries());
  }
  if (w == "platforms" || w == "all") {
    gap();
    print_section(out, "PLATFORMS",
                  "in a config: \"platform\": {\"kind\": NAME, \"atomics\": ..., "
                  "\"spinlocks\": ...}; sweep a policy with the matrix key \"platform.atomics\" "
                  "or \"platform.spinlocks\"",
                  platform_entries());
  }
  if (w == "all") out << "\nEvery config key, its default and the matrix rules: configs/README.md\n";
}

std::string version_string() { return version_line(); }

}  // namespace walbench

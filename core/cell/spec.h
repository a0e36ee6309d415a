// Fully resolved description of one matrix cell: what the config parser produces and what a
// strategy's cell factory consumes. Every field has its default here; configs/README.md
// documents each key (keep the two in step).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace walbench {

// A record/message size: fixed, or drawn per transaction from a distribution.
struct SizeSpec {
  enum class Kind { kFixed, kUniform, kExponential };
  Kind kind = Kind::kFixed;
  uint32_t value = 16;  // kFixed
  uint32_t min = 0;     // kUniform: [min, max]; kExponential: lower clamp
  uint32_t max = 0;     // kUniform; kExponential: upper clamp
  double mean = 0;      // kExponential
  // Column label in reports: "16", "uniform(16,1024)", "exp(256)".
  std::string label() const;
  nlohmann::json to_json() const;
};

// kind "postgres": a real PostgreSQL server (harness/postgres_config.h). The server settings
// that the model also has come from the model's sections (wal.wal_buffers, wal.fsync,
// wal.segment_size, commit.*); these are the server's own.
struct PostgresSpec {
  std::string bindir;          // a PostgreSQL build's bin directory; "" = `pg_config --bindir`
  std::string dsn;             // an existing server (libpq conninfo); "" = a throwaway cluster
  uint32_t max_connections = 100;
  std::string shared_buffers;  // PostgreSQL memory value ("1GB", "16384"); "" = initdb's
  std::string wal_dir;         // pg_wal goes to a fresh directory under it (a tmpfs); "" = the data directory
};

struct PlatformSpec {
  std::string kind = "threads";     // "threads" | "sim" (simulated many-core machine) | "postgres"
  // kind "sim": the simulated machine's parameters (SimConfig keys: preset, cores, sockets,
  // latencies, ...), validated by SimConfig::from_json; {} = the default preset.
  nlohmann::json sim = nlohmann::json::object();
  std::string atomics = "native";   // "native" | "emulated" (--disable-atomics)
  std::string spinlocks = "native"; // "native" | "semaphore" (--disable-spinlocks)
  PostgresSpec postgres;            // kind "postgres" only
};

struct WalSpec {
  uint32_t page_size = 8192;            // XLOG_BLCKSZ; power of two, 1 KiB .. 64 KiB
  uint64_t segment_size = 16u << 20;    // wal_segment_size; power of two, >= 2 pages
  uint32_t wal_buffers = 2048;          // pages in the ring (PG default for shared_buffers >= 512 MB: 16 MiB)
  std::string storage = "memory";       // "memory" | "file"
  std::string path;                     // directory for "file" storage (created if missing)
  uint32_t memory_mb = 64;              // "memory" storage: the ring each WAL is recycled
                                        // through while the streaming verifier checks it
  bool fsync = true;                    // PG's fsync: off, a flush syncs nothing (no fdatasync
                                        // with "file", no device latency on the sim)
  std::string buffer_init = "mapping_lock";  // "mapping_lock" (WALBufMappingLock) | "lockfree" (bc22dc0e0d)
};

struct CommitSpec {
  bool synchronous_commit = true;       // flush the commit record before the transaction ends
                                        // (if the transaction wrote WAL before it: not so
                                        // on unlogged tables, WorkloadSpec::unlogged_tables)
  double wal_writer_delay_ms = 200;     // WAL writer wake-up interval (async commit)
  uint32_t wal_writer_flush_after = 128;  // pages; WAL writer fsyncs when this many are pending
};

// The commit log (core/clog/clog.h) and who takes its control lock at commit (a CLOG strategy,
// strategies/clog_*). Only transactional workloads touch it.
struct ClogSpec {
  std::string strategy = "clog_exclusive";  // a name in clog_strategies() (strategies/registry.cc)
  nlohmann::json params = nlohmann::json::object();  // the strategy's parameters, defaults filled in
  uint32_t clog_buffers = 128;          // SLRU buffers: Min(128, Max(4, NBuffers/512)) in PG 9.6-16
  uint32_t page_size = 8192;            // BLCKSZ: 4 xids per byte, 32768 per page
  // pgbench workloads: probability that a tuple a statement checks has no hint bit set, so
  // that its visibility check calls TransactionIdGetStatus (core/clog/clog.h, README "CLOG").
  double hint_bit_miss = 0.5;
  // How committers clear their xid from the ProcArray and whether statements take snapshots:
  // "off" | "exclusive" (PG <= 9.5) | "group_clear" (PG 9.6+, 0e141c0fbb); core/clog/proc_array.h.
  std::string procarray = "off";
  // How GetSnapshotData scans (with a ProcArray): "pgxact" (PG 9.2-13, the 12-byte PGXACT
  // array) | "dense" (PG 14+, the dense xids array and xactCompletionCount reuse).
  std::string snapshot = "pgxact";
  // GetSnapshotData calls per statement that reads or writes a table (with a ProcArray):
  // PostgreSQL in READ COMMITTED takes 2, one for parse analysis and planning and a new one for
  // execution (core/cell/wal_cell.h statement()); 1 takes one (the model before 2026-12-04).
  uint32_t snapshots_per_statement = 2;
  // pgbench workloads: which xid a visibility check with an unset hint bit looks up
  // (core/cell/wal_cell.h tuple_check): "run" (uniform over the xids handed out since pgbench -i,
  // the model before 2026-12-05) | "pgbench_pages" (the last unhinted stamp on the row's heap
  // page: its age in xids drawn from the table's pages at workload.scale; a stamp older than
  // pgbench -i was hinted by its VACUUM).
  std::string lookup_xids = "run";
  // Xids handed out between pgbench -i and the run (the run sits this far into a long one):
  // their CLOG pages exist, every xid COMMITTED (core/clog/clog.h C7); the run's first xid is
  // 3 + xid_history.
  uint32_t xid_history = 0;
  // The heavyweight lock every transaction takes on each xid it assigns (XactLockTableInsert) and
  // releases at its end (LockReleaseAll), in PostgreSQL's partitioned shared lock table
  // (core/clog/xid_lock_table.h). On by default since 2026-12-07, as PostgreSQL always takes
  // them; a cell records the key either way, and a rerun reads a cell without it (made before)
  // as false (harness/cell_json.cc config_of_cell).
  bool xid_locks = true;
};

struct WorkloadSpec {
  // "emit_message", or pgbench's scripts in WAL terms: "simple_update", "tpcb_like",
  // "savepoints" (core/cell/wal_cell.h has the records of each).
  std::string name = "emit_message";
  SizeSpec record_size;                 // emit_message: message length N; 55+N / 58+N bytes
  bool transactional = true;            // commit record + flush (when synchronous_commit) + CLOG
  double client_overhead_us = 0;        // per-statement work outside any lock
  double client_overhead_jitter = 0;    // each statement's work: uniform in mean x [1-j, 1+j]
  double payload_ns_per_byte = 0;       // emit_message: work per message byte outside any lock
  // The client driver's (pgbench's thread's) CPU per statement, part of client_overhead_us, on a
  // simulated thread of its own that the backend hands each result to and waits on for the next
  // statement (core/cell/wal_cell.h "THE CLIENT DRIVER"); 0 = no driver thread: the whole round
  // trip is work on the backend's CPU. Simulated platform only.
  double driver_us = 0;
  // pgbench workloads: full-page images after each checkpoint (core/cell/wal_cell.h "FULL-PAGE
  // IMAGES"): full_page_writes as PostgreSQL's GUC, checkpoints every checkpoint_timeout_s,
  // table sizes from pgbench's scale factor (pgbench -s). Off by default, unlike PostgreSQL:
  // checkpoints requested by WAL volume (max_wal_size) are not modelled and the image rate is
  // estimated from the run's own rate, unsettled in short windows (README "Full-page images").
  bool full_page_writes = false;
  double checkpoint_timeout_s = 300;
  uint32_t scale = 1;
  // pgbench workloads: pgbench's tables created UNLOGGED (pgbench -i --unlogged-tables; JSON
  // "tables": "unlogged", default "permanent"): their changes write no WAL and no page images,
  // so a transaction's only record is its commit, which then needs no flush whatever
  // synchronous_commit says (RecordTransactionCommit flushes only when the transaction wrote
  // WAL before its commit record; core/cell/wal_cell.h "UNLOGGED TABLES").
  bool unlogged_tables = false;
};

struct RunSpec {
  double duration_s = 5;
  double warmup_s = 1;
  uint32_t repetitions = 1;
  uint64_t seed = 1;
  double progress_interval_s = 1;       // 0 = no progress lines
  bool verify = true;
  double watchdog_s = 10;               // no progress for this long = failed cell (0 = off)
  // Repetitions round-robin across the cells (rep 1 of every cell, then rep 2, ...), so that
  // drift of the machine shows up as spread between repetitions instead of between cells.
  bool interleave = false;
  // Trust warnings (harness/RESULTS.md "Warnings"): a cell whose clients finished fewer
  // transactions each than this in the window, on average, is flagged.
  uint32_t min_txns_per_client = 10;
  // Simulated platform only: a cell whose clients finished fewer than min_txns_per_client
  // transactions each in its first repetition's window runs it again, warm-up and window
  // lengthened in proportion to the shortfall (x1.25), the window to at most this many virtual
  // seconds, and its later repetitions with that window; 0 = never (the cell is only flagged).
  // harness/RESULTS.md "Windows lengthened".
  double max_window_s = 0;
  // A cell whose first and last progress intervals inside the window differ by more than this
  // (percent of their mean), or whose warm-up ended before the throughput settled within this
  // band around the window's median, is flagged.
  double trend_warn_pct = 10;
};

struct CellSpec {
  // Position in the matrix.
  size_t index = 0;
  size_t total = 1;
  // Row prefix in reports: the strategy variant's label; with matrix "variants" (override
  // variants, harness/config.h), the override variant's label, or "<strategy label>+<variant
  // label>" when the config has several strategy variants.
  std::string label;
  std::string strategy;                 // registry name
  nlohmann::json strategy_params = nlohmann::json::object();  // validated, defaults filled in
  uint32_t clients = 1;
  PlatformSpec platform;
  WalSpec wal;
  CommitSpec commit;
  WorkloadSpec workload;
  ClogSpec clog;
  RunSpec run;
  // The matrix values that vary for this cell ({"clients": 8, "workload.record_size": 16, ...}).
  nlohmann::json matrix_values = nlohmann::json::object();
  // The override variant's "set" (dotted config path -> value as given in the config), {} when
  // the config has no matrix "variants". Its values are already applied to the blocks above;
  // this records which paths the label stands for (reports leave them out of a table's key).
  nlohmann::json variant_set = nlohmann::json::object();
  // `walbench run --top-lines N` (simulated cells): record the N cache lines whose accesses
  // waited longest in each repetition's platform.top_lines (sim.h "LINE STATISTICS"). Not part
  // of the setup: no result file records it in a cell, and it changes no number the cell measures.
  uint32_t top_lines = 0;
};

}  // namespace walbench

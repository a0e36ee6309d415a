// Full-page images of the pgbench workloads (core/cell/full_page_images.h, workload.full_page_writes):
// the cycle-averaged first-touch probability, pgbench's table sizes, and the WAL bytes per
// transaction a simulated tpcb_like cell writes right after a checkpoint (every touch is a
// page's first), in the steady state (each page imaged once per long cycle) and with
// full_page_writes off (PROTOCOLS.md section 7's 434 B/txn; 440 as walbench counts it without row-lock waits).
// Unlogged tables (workload.tables "unlogged", core/cell/wal_cell.h "UNLOGGED TABLES"): only the
// commit record, no image, never a flush at commit.
#include <catch2/catch.hpp>

#include "harness/cell_json.h"
#include "harness/config.h"
#include "core/cell/full_page_images.h"
#include "core/cell/row_locks.h"
#include "core/platform/threads.h"
#include "core/wal/format.h"
#include "tests/conformance.h"

using namespace walbench;
using namespace walbench::conformance;

namespace {

CellSpec tpcb_cell(bool full_page_writes, double checkpoint_s, uint32_t scale) {
  CellSpec spec;
  spec.strategy = "insert_locks";
  spec.strategy_params = {{"insertingat", "waitlist"}};
  spec.clients = 4;
  spec.platform.kind = "sim";
  spec.platform.sim = {{"preset", "cascadelake_2s"}};
  spec.workload.name = "tpcb_like";
  spec.workload.client_overhead_us = 20;
  spec.workload.client_overhead_jitter = 0.3;
  spec.workload.full_page_writes = full_page_writes;
  spec.workload.checkpoint_timeout_s = checkpoint_s;
  spec.workload.scale = scale;
  spec.commit.synchronous_commit = false;
  spec.wal.wal_buffers = 512;
  spec.run.seed = 7;
  return spec;
}

// The cells of a config whose workload block is `workload` (JSON text), read as file `file`.
std::vector<CellSpec> expand_workload(const std::string& workload, const std::string& file) {
  return expand_matrix(nlohmann::ordered_json::parse(
                           R"({"strategy": "insert_locks", "workload": )" + workload + "}"),
                       file);
}

}  // namespace

TEST_CASE("full-page images: first-touch probability and pgbench's tables", "[fpw]") {
  // pgbench_accounts at scale 1 is 1640 pages (61 rows per page); 100 branches share a page.
  CHECK(pgbench_table_pages(PgbenchTable::kAccounts, 1) == 1640);
  CHECK(pgbench_table_pages(PgbenchTable::kAccounts, 100) == 163935);
  CHECK(pgbench_table_pages(PgbenchTable::kBranches, 100) == 1);
  CHECK(pgbench_table_pages(PgbenchTable::kTellers, 100) == 6);
  // Branches rows are 8 bytes narrower than tellers rows on the page (32 against 40 bytes after
  // MAXALIGN, 36 and 44 with the line pointer): 226 to a page against 185, so 226 branches fit
  // one page and 1000 tellers need six.
  CHECK(pgbench_table_pages(PgbenchTable::kBranches, 226) == 1);
  CHECK(pgbench_table_pages(PgbenchTable::kBranches, 227) == 2);
  CHECK(pgbench_table_pages(PgbenchTable::kTellers, 19) == 2);  // 190 rows
  CHECK(pgbench_table_pages(PgbenchTable::kHistory, 100) == 1);
  CHECK(full_page_image_bytes(PgbenchTable::kAccounts) == 5 + 8192 - 116);
  // No rate yet, or a cycle far shorter than the time to touch every page: every touch is first.
  CHECK(first_touch_probability(1000, 0, 300) == 1.0);
  CHECK(first_touch_probability(1e6, 1, 1e-3) == Approx(1.0).epsilon(1e-6));
  // A page touched x = 50 times per cycle is imaged once: p = (1 - e^-50) / 50.
  CHECK(first_touch_probability(100, 50.0 / 300.0 * 100, 300) == Approx(1.0 / 50));
  // x = 1: (1 - 1/e).
  CHECK(first_touch_probability(1000, 1000.0 / 300.0, 300) == Approx(1.0 - std::exp(-1.0)));
}

TEST_CASE("full-page images: WAL bytes per transaction right after a checkpoint vs steady state",
          "[fpw][sim]") {
  auto per_txn = [](const Outcome& o) {
    REQUIRE(o.window.txns > 50);
    return static_cast<double>(o.window.wal_bytes) / static_cast<double>(o.window.txns);
  };
  const Outcome off = run_cell(tpcb_cell(false, 300, 100), 0.05);
  CHECK(off.verify.ok);
  CHECK_FALSE(off.model.contains("full_page_images"));
  // PROTOCOLS.md section 7's 434 B/txn with fpw off, less the Heap/LOCK the model writes only
  // after a row-lock wait (row_locks.h; 4 clients on 100 branches rarely wait), + 10 (the
  // commit's tag), + MAXALIGN padding of each record as reserved: 440 (configs/README.md's
  // workload table: 48 + 0.6 x 72 + 0.7 x 72 + 0.3 x (184 + 64) + 72 + 72 + 80).
  CHECK(per_txn(off) == Approx(440).epsilon(0.01));  // (434 or 453, the old mean, would fail)

  // Right after a checkpoint (a 1 us cycle: no page is touched twice in it): every record that
  // modifies a page carries its image: accounts 1.3 x 8081, pkey 0.3 x 7365, tellers and
  // branches 8197 each, history 4113 on top of the 440 B of records.
  const Outcome fresh = run_cell(tpcb_cell(true, 1e-6, 100), 0.05);
  CHECK(fresh.verify.ok);
  const double images_per_txn = 1.3 * 8081 + 0.3 * 7365 + 8197 + 8197 + 4113;
  CHECK(per_txn(fresh) == Approx(440 + images_per_txn).epsilon(0.05));
  CHECK(fresh.model["full_page_images"].get<double>() / static_cast<double>(fresh.window.txns) ==
        Approx(1.3 + 0.3 + 3).epsilon(0.05));

  // Steady state at scale 1 with the default 5-minute cycle: every page is touched thousands of
  // times per cycle, so images are a small fraction of a transaction's bytes.
  const Outcome steady = run_cell(tpcb_cell(true, 300, 1), 0.05);
  CHECK(steady.verify.ok);
  // Only each client's first touch of each table (no rate yet: p = 1) carries an image.
  const auto images = steady.model["full_page_images"].get<uint64_t>();
  CHECK(images >= 4 * 4);  // accounts, tellers, branches, history; the pkey on a non-HOT update
  CHECK(images <= 4 * 5 + 2);
  // Against the same scale with full_page_writes off (scale 1: the transactions also queue on
  // the one branch row, each wait adding a Heap/LOCK, row_locks.h).
  const Outcome off_scale1 = run_cell(tpcb_cell(false, 300, 1), 0.05);
  CHECK(per_txn(steady) < 1.3 * per_txn(off_scale1));
}

TEST_CASE("full-page images: the workload keys parse, and bad values get one-line errors naming "
          "the key", "[fpw][config]") {
  auto expand = [](const std::string& workload) { return expand_workload(workload, "fpw.json"); };
  const std::vector<CellSpec> cells = expand(
      R"({"name": "tpcb_like", "full_page_writes": false, "checkpoint_timeout_s": 900, "scale": 100})");
  REQUIRE(cells.size() == 1);
  CHECK_FALSE(cells[0].workload.full_page_writes);
  CHECK(cells[0].workload.checkpoint_timeout_s == 900);
  CHECK(cells[0].workload.scale == 100);
  const CellSpec defaults = expand(R"({"name": "simple_update"})").at(0);
  CHECK_FALSE(defaults.workload.full_page_writes);  // off unless asked (spec.h says why)
  CHECK(defaults.workload.checkpoint_timeout_s == 300);
  CHECK(defaults.workload.scale == 1);
  auto error_of = [&](const std::string& workload) -> ConfigError {
    try {
      expand(workload);
    } catch (const ConfigError& e) {
      return e;
    }
    FAIL("no ConfigError for " << workload);
    throw std::logic_error("unreachable");
  };
  struct Bad {
    const char* workload;
    const char* json_path;
  };
  for (const Bad& bad : {Bad{R"({"checkpoint_timeout_s": -5})", "/workload/checkpoint_timeout_s"},
                         Bad{R"({"checkpoint_timeout_s": 0})", "/workload/checkpoint_timeout_s"},
                         Bad{R"({"checkpoint_timeout_s": 1e9})", "/workload/checkpoint_timeout_s"},
                         Bad{R"({"scale": 0})", "/workload/scale"},
                         Bad{R"({"scale": 2.5})", "/workload/scale"},
                         Bad{R"({"full_page_writes": "on"})", "/workload/full_page_writes"}}) {
    INFO(bad.workload);
    const ConfigError e = error_of(bad.workload);
    CHECK(e.file == "fpw.json");
    CHECK(e.json_path == bad.json_path);
    CHECK_FALSE(e.expected.empty());
    CHECK(std::string(e.what()).find('\n') == std::string::npos);
  }
}

TEST_CASE("unlogged tables: each transaction writes its commit record only, no image, and never "
          "flushes at commit, whatever synchronous_commit says", "[fpw][sim]") {
  auto per_txn = [](const Outcome& o, double what) {
    REQUIRE(o.window.txns > 50);
    return what / static_cast<double>(o.window.txns);
  };
  // Right after a checkpoint (every touch a page's first) and with synchronous commits: with
  // permanent tables every transaction carries images and flushes its commit.
  CellSpec logged = tpcb_cell(true, 1e-6, 100);
  logged.commit.synchronous_commit = true;
  const Outcome permanent = run_cell(logged, 0.05);
  CHECK(permanent.verify.ok);
  CHECK(per_txn(permanent, permanent.model["full_page_images"].get<double>()) > 4);
  CHECK(per_txn(permanent, permanent.model["flushes"].get<double>()) > 0.2);

  for (const char* workload : {"tpcb_like", "simple_update", "savepoints"}) {
    INFO(workload);
    CellSpec unlogged = logged;
    unlogged.workload.name = workload;
    unlogged.workload.unlogged_tables = true;
    // A WAL writer that slept its whole delay would not wake during the run: what it writes
    // it writes because the async commits set its latch (XLogSetAsyncXactLSN, here at every
    // completed page: wal_writer_flush_after 1).
    unlogged.commit.wal_writer_delay_ms = 10000;
    unlogged.commit.wal_writer_flush_after = 1;
    const Outcome o = run_cell(unlogged, 0.05);
    CHECK(o.verify.ok);
    // The COMMIT alone, MAXALIGNed as reserved (savepoints: with its three subxact xids).
    const uint32_t commit =
        max_align(commit_record_size(std::string(workload) == "savepoints" ? 3 : 0));
    CHECK(per_txn(o, static_cast<double>(o.window.wal_bytes)) == Approx(commit).epsilon(1e-9));
    CHECK(o.model["full_page_images"].get<uint64_t>() == 0);
    // No backend flushes at commit: the WAL writer, woken by the commits, writes them, about
    // once per completed page (the run fills about 8; finish() adds one write of its own).
    CHECK(o.model["flushes"].get<uint64_t>() == 0);
    CHECK(o.model["wal_buffers_full"].get<uint64_t>() == 0);
    CHECK(o.model["writes"].get<uint64_t>() >= 4);
  }
}

TEST_CASE("unlogged tables: the workload key parses, is echoed only when set, and is refused "
          "where no table is touched", "[fpw][config]") {
  auto expand = [](const std::string& workload) { return expand_workload(workload, "tables.json"); };
  CHECK(expand(R"({"name": "tpcb_like", "tables": "unlogged"})").at(0).workload.unlogged_tables);
  CHECK_FALSE(expand(R"({"name": "tpcb_like", "tables": "permanent"})").at(0).workload.unlogged_tables);
  CHECK_FALSE(expand(R"({"name": "tpcb_like"})").at(0).workload.unlogged_tables);
  WorkloadSpec w;
  w.name = "tpcb_like";
  CHECK_FALSE(to_json(w).contains("tables"));  // files made before the key read as they did
  w.unlogged_tables = true;
  CHECK(to_json(w)["tables"] == "unlogged");
  for (const auto& [workload, expected] :
       std::vector<std::pair<std::string, std::string>>{
           {R"({"name": "tpcb_like", "tables": "temporary"})", "permanent"},
           {R"({"name": "tpcb_like", "tables": true})", "permanent"},
           {R"({"name": "emit_message", "tables": "unlogged"})", "simple_update"}}) {
    INFO(workload);
    try {
      expand(workload);
      FAIL("no ConfigError");
    } catch (const ConfigError& e) {
      CHECK(e.file == "tables.json");
      CHECK(e.json_path == "/workload/tables");
      CHECK(e.expected.find(expected) != std::string::npos);
      CHECK(std::string(e.what()).find('\n') == std::string::npos);
    }
  }
}

// Row locks (core/cell/row_locks.h): pgbench's tellers and branches rows drawn as pgbench draws
// them, waited for while their previous updater is in progress. At scale 1 every tpcb_like
// transaction updates the one branch, so the transactions queue on it from the branches update
// to their commit: two statements (INSERT INTO pgbench_history, END) of at least 14 us each
// (20 us, jitter 0.3) while the branch is held bound the rate to 1e9 / 28,000 = 35.7k tps.
TEST_CASE("pgbench row locks: scale 1 serialises tpcb_like on the branch row, scale 100 hardly waits",
          "[rowlocks][sim]") {
  auto cell = [](uint32_t scale, uint32_t clients) {
    CellSpec spec = tpcb_cell(false, 300, scale);
    spec.clients = clients;
    return spec;
  };
  auto waits_per_txn = [](const Outcome& o) {
    REQUIRE(o.window.txns > 50);
    return static_cast<double>(o.model["row_lock_waits"].get<uint64_t>()) /
           static_cast<double>(o.window.txns);
  };
  auto tps = [](const Outcome& o) { return static_cast<double>(o.window.txns) / 0.05; };
  const Outcome one = run_cell(cell(1, 8), 0.05);
  const Outcome hundred = run_cell(cell(100, 8), 0.05);
  const Outcome alone = run_cell(cell(1, 1), 0.05);
  CHECK(one.verify.ok);
  CHECK(hundred.verify.ok);
  CHECK(alone.verify.ok);
  CHECK(alone.model["row_lock_waits"].get<uint64_t>() == 0);  // nobody to wait for
  // 8 clients on one branch and 10 tellers: most transactions find their branch taken.
  CHECK(waits_per_txn(one) > 0.5);
  CHECK(tps(one) < 1e9 / 28000.0);
  // 100 branches and 1,000 tellers: a few percent of the transactions meet.
  CHECK(waits_per_txn(hundred) < 0.1);
  CHECK(tps(hundred) > 2 * tps(one));
  // Each change that waited writes one Heap/LOCK (64 B reserved) before its update.
  const double bytes_one = static_cast<double>(one.window.wal_bytes) / static_cast<double>(one.window.txns);
  const double bytes_alone = static_cast<double>(alone.window.wal_bytes) / static_cast<double>(alone.window.txns);
  CHECK(bytes_one - bytes_alone == Approx(64 * waits_per_txn(one)).margin(12));
  // savepoints locks its teller and branch FOR UPDATE (subtransactions): the same queue.
  CellSpec sp = cell(1, 8);
  sp.workload.name = "savepoints";
  const Outcome locks = run_cell(sp, 0.05);
  CHECK(locks.verify.ok);
  CHECK(waits_per_txn(locks) > 0.5);
  CHECK(tps(locks) < 1e9 / 28000.0);  // END's statement and the commit hold the branch
}

// PgbenchRowLocks::change_row on its own (one thread, two clients): change(relock) is told to
// re-lock exactly when the row's last updater ended and the caller's visible() says the
// statement's snapshot does not see it; a row never changed, or one whose updater is visible,
// is changed without.
TEST_CASE("row locks: change_row re-locks after an ended updater the snapshot does not see",
          "[rowlocks]") {
  using P = ThreadsPlatform;
  ProcTable<P> procs(2, 1);
  PgbenchRowLocks<P> locks(procs, 2, 1);
  Proc<P>& a = procs[0];
  Proc<P>& b = procs[1];
  const auto unseen = [](Xid) { return false; };
  const auto seen = [](Xid) { return true; };
  std::vector<bool> relocks;
  const auto change = [&](bool relock) { relocks.push_back(relock); };
  auto met = locks.change_row(a, PgbenchTable::kBranches, 0, Xid{100}, change, unseen);
  CHECK(met.waits == 0);
  CHECK_FALSE(met.relocked);  // never updated: nothing to re-lock, whatever the snapshot
  locks.end_transaction(a);
  met = locks.change_row(b, PgbenchTable::kBranches, 0, Xid{101}, change, unseen);
  CHECK(met.waits == 0);
  CHECK(met.relocked);  // updater 100 ended, unseen by b's snapshot: TM_Updated
  locks.end_transaction(b);
  met = locks.change_row(a, PgbenchTable::kBranches, 0, Xid{102}, change, seen);
  CHECK(met.waits == 0);
  CHECK_FALSE(met.relocked);  // updater 101 ended before a's snapshot: TM_Ok
  // The same transaction changing the row again: its own xmax, no re-lock.
  met = locks.change_row(a, PgbenchTable::kBranches, 0, Xid{102}, change, unseen);
  CHECK_FALSE(met.relocked);
  locks.end_transaction(a);
  CHECK(relocks == std::vector<bool>{false, true, false, false});
}

// READ COMMITTED's TM_Updated without a wait (core/cell/row_locks.h): an UPDATE whose row's last
// updater ended after the statement's snapshot re-locks the newest version (Heap/LOCK) before
// updating it. It needs the statement's snapshot, so only a cell with a ProcArray model makes
// such re-locks; each one, like each change that waited, adds one Heap/LOCK.
TEST_CASE("pgbench row locks: an updater that ended after the statement's snapshot is re-locked",
          "[rowlocks][sim]") {
  auto cell = [](const char* procarray, uint32_t clients) {
    CellSpec spec = tpcb_cell(false, 300, 1);
    spec.clients = clients;
    spec.clog.procarray = procarray;
    return spec;
  };
  const Outcome off = run_cell(cell("off", 8), 0.05);
  const Outcome on = run_cell(cell("exclusive", 8), 0.05);
  const Outcome alone = run_cell(cell("exclusive", 1), 0.05);
  REQUIRE(off.verify.ok);
  REQUIRE(on.verify.ok);
  REQUIRE(alone.verify.ok);
  CHECK(off.model["row_relocks"].get<uint64_t>() == 0);  // no snapshot: every ended updater visible
  CHECK(alone.model["row_relocks"].get<uint64_t>() == 0);  // its own earlier transactions are visible
  const uint64_t relocks = on.model["row_relocks"].get<uint64_t>();
  INFO("waits " << on.model["row_lock_waits"] << " relocks " << relocks);
  CHECK(relocks > 0);
  // Both kinds write one Heap/LOCK (64 B reserved) each: counted over the whole run, so compare
  // per transaction of the whole run (the window's bytes per window transaction stand in).
  auto per_txn = [](const Outcome& o, uint64_t n) {
    return static_cast<double>(n) / static_cast<double>(o.txns);
  };
  const double bytes_on = static_cast<double>(on.window.wal_bytes) / static_cast<double>(on.window.txns);
  const double bytes_alone = static_cast<double>(alone.window.wal_bytes) / static_cast<double>(alone.window.txns);
  const double locks_per_txn =
      per_txn(on, on.model["row_lock_waits"].get<uint64_t>() + relocks);
  CHECK(bytes_on - bytes_alone == Approx(64 * locks_per_txn).margin(12));
}

TEST_CASE("pgbench row locks on real threads: tpcb_like and savepoints at scale 1 verify and end",
          "[rowlocks]") {
  for (const char* workload : {"tpcb_like", "savepoints"}) {
    INFO(workload);
    CellSpec spec = tpcb_cell(false, 300, 1);
    spec.workload.name = workload;
    spec.workload.client_overhead_us = 0;
    spec.platform.kind = "threads";
    spec.platform.sim = nlohmann::json::object();
    spec.clients = 6;  // more threads than this machine's cores: holders get preempted
    const Outcome o = run_cell(spec, 0.1, 200);
    CHECK(o.verify.ok);
    CHECK(o.window.txns >= 200);
    // One branch and ten tellers for six threads: over 200 transactions some must have waited.
    CHECK(o.model["row_lock_waits"].get<uint64_t>() > 0);
  }
}

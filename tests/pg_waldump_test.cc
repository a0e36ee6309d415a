// PostgreSQL 15's own pg_waldump as an oracle for the WAL walbench writes (issue 13 item 3,
// core/wal/format.h, README "pg_waldump reads walbench's WAL").
//
// Runs cells with file storage (8 KiB pages, 1 MiB segments: the smallest geometry a stock
// pg_waldump accepts; several clients; records crossing pages and segments) while keeping the
// cell alive, points pg_waldump at its segment files, and requires
//   - `pg_waldump --stats=record` to exit 0, with per-type record counts and sizes (N and
//     "Record size") and its totals equal to what walbench's verifier counted (VerifyResult's
//     record_types, by PostgreSQL's name for each rmid/info),
//   - the plain dump (every record described by its rmgr) to exit 0 with one line per record.
// emit_message (message and commit records) runs with every registered strategy on the
// simulated platform and with one on real threads; the pgbench workloads (Heap, Heap2, Btree,
// commits with subtransactions) with one strategy.
//
// pg_waldump is WALBENCH_PG_WALDUMP, else `pg_config --bindir`/pg_waldump, else the newest
// /usr/lib/postgresql/*/bin/pg_waldump. Without one (or with one that is not PostgreSQL 15's:
// the page magic differs per major version) main() prints why and exits 77, which ctest counts
// as skipped (CMakeLists.txt: SKIP_RETURN_CODE). `scripts/setup.sh --with-postgres` installs it.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/wal/format.h"
#include "core/wal/geometry.h"
#include "core/wal/storage.h"
#include "core/wal/verify_result.h"
#include "core/cell/cell.h"
#include "core/cell/spec.h"
#include "strategies/strategy.h"
#include "tests/conformance.h"
#include "tests/temp_dir.h"

using namespace walbench;

namespace {

std::string g_pg_waldump;  // set by main()

// Runs cmd through the shell with stderr folded into stdout; *status = its exit status.
std::string run_command(const std::string& cmd, int* status) {
  std::string out;
  FILE* f = ::popen((cmd + " 2>&1").c_str(), "r");
  if (f == nullptr) {
    *status = -1;
    return out;
  }
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  const int rc = ::pclose(f);
  *status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return out;
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

bool executable(const std::string& p) { return !p.empty() && ::access(p.c_str(), X_OK) == 0; }

// The pg_waldump to use, or "" with why_not saying what was looked for.
std::string find_pg_waldump(std::string* why_not) {
  if (const char* env = std::getenv("WALBENCH_PG_WALDUMP"); env != nullptr && *env != '\0') {
    if (executable(env)) return env;
    *why_not = std::string("WALBENCH_PG_WALDUMP=") + env + " is not an executable file";
    return "";
  }
  int st = 0;
  std::string bindir = run_command("pg_config --bindir", &st);
  while (!bindir.empty() && (bindir.back() == '\n' || bindir.back() == '\r')) bindir.pop_back();
  if (st == 0 && executable(bindir + "/pg_waldump")) return bindir + "/pg_waldump";
  std::vector<std::filesystem::path> found;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/usr/lib/postgresql", ec))
    if (executable((e.path() / "bin/pg_waldump").string())) found.push_back(e.path());
  // Newest major version first (directory names are the versions: 15, 16, ...).
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    return std::atoi(a.filename().c_str()) > std::atoi(b.filename().c_str());
  });
  for (const auto& d : found)
    if (d.filename() == "15") return (d / "bin/pg_waldump").string();
  if (!found.empty()) return (found.front() / "bin/pg_waldump").string();
  *why_not = "no pg_waldump: WALBENCH_PG_WALDUMP unset, no pg_config on PATH, none in "
             "/usr/lib/postgresql/*/bin";
  return "";
}

// pg_waldump's name of a record type, "Rmgr/IDENTIFY" (rmgrlist.h names, the rmgrs' identify
// functions; XLogRecStoreStats keeps only the opcode bits of a Transaction record's info).
std::string pg_record_name(uint16_t key) {
  const uint8_t rmid = static_cast<uint8_t>(key >> 8);
  const uint8_t info = static_cast<uint8_t>(key & 0xF0);
  switch (rmid) {
    case kRmLogicalMsg:
      if (info == kInfoLogicalMessage) return "LogicalMessage/MESSAGE";
      break;
    case kRmXact:
      if ((info & 0x70) == kInfoXactCommit) return "Transaction/COMMIT";
      break;
    case kRmHeap:
      switch (info) {
        case 0x00: return "Heap/INSERT";
        case 0x20: return "Heap/UPDATE";
        case 0x40: return "Heap/HOT_UPDATE";
        case 0x60: return "Heap/LOCK";
      }
      break;
    case kRmHeap2:
      if (info == 0x10) return "Heap2/PRUNE";
      break;
    case kRmBtree:
      if (info == 0x00) return "Btree/INSERT_LEAF";
      break;
  }
  return "walbench-unnamed/" + std::to_string(rmid) + "/" + std::to_string(info);
}

struct Tallies {
  std::map<std::string, RecordTypeTally> types;
  RecordTypeTally total;
};

Tallies walbench_tallies(const VerifyResult& r) {
  Tallies t;
  for (const auto& [key, tally] : r.record_types) {
    RecordTypeTally& x = t.types[pg_record_name(key)];
    x.count += tally.count;
    x.bytes += tally.bytes;
    t.total.count += tally.count;
    t.total.bytes += tally.bytes;
  }
  return t;
}

// `pg_waldump --stats=record` output: one line per type,
//   "LogicalMessage/MESSAGE    1234 ( 50.00)    567890 ( 99.10)    0 ( 0.00)    567890 ( 99.10)",
// then "Total   N   record-size [...". Adds to *into (several streams add up).
void parse_stats(const std::string& out, Tallies* into) {
  static const std::regex type_line(R"(^(\S+/\S+)\s+(\d+)\s+\([^)]*\)\s+(\d+)\s+\()");
  static const std::regex total_line(R"(^Total\s+(\d+)\s+(\d+)\s)");
  std::istringstream in(out);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, type_line)) {
      RecordTypeTally& x = into->types[m[1].str()];
      x.count += std::stoull(m[2].str());
      x.bytes += std::stoull(m[3].str());
    } else if (std::regex_search(line, m, total_line)) {
      into->total.count += std::stoull(m[1].str());
      into->total.bytes += std::stoull(m[2].str());
    }
  }
}

// One stream's WAL: its directory and the end of its records, or, unknown (kInvalidLsn), the
// end of what its files hold.
struct Stream {
  std::string dir;
  Lsn end;
};

// The shell command running pg_waldump on one stream from its first record to its end (the
// start and end segment files named: pg_waldump wants the end inside them). An end taken from
// the files may lie past the last record, in zeroed bytes: pg_waldump then reports the end of
// WAL there.
std::string waldump_command(const Stream& s, const WalGeometry& g, const std::string& extra) {
  Lsn end = s.end;
  if (end == kInvalidLsn) {
    std::filesystem::path last;
    for (const auto& e : std::filesystem::directory_iterator(s.dir))
      last = std::max(last, e.path());
    uint64_t segno = 0;  // the segment whose file name is the last one's
    while (segno < 4096 && segment_file_name(segno, g) != last.filename().string()) ++segno;
    REQUIRE(segno < 4096);
    end = Lsn{segno * g.segment_size + std::filesystem::file_size(last)};
  }
  return shell_quote(g_pg_waldump) + " --path=" + shell_quote(s.dir) + " --start=0/00000028 " +
         extra + " --end=" + lsn_to_string(end) + " " + segment_file_name(0, g) + " " +
         segment_file_name(g.segment_number(Lsn{end.value - 1}), g);
}

bool only_end_of_wal_error(const std::string& out) {
  // PostgreSQL's end of WAL: the zeroed bytes after the last record.
  static const std::regex end_of_wal(
      R"(pg_waldump: error: error in WAL record at [0-9A-F]+/[0-9A-F]+: invalid record length at [0-9A-F]+/[0-9A-F]+: wanted 24, got 0)");
  std::istringstream in(out);
  std::string line;
  int errors = 0;
  while (std::getline(in, line)) {
    if (line.find("pg_waldump:") == std::string::npos) continue;
    if (!std::regex_search(line, end_of_wal)) return false;
    ++errors;
  }
  return errors == 1;
}

// Checks pg_waldump's reading of every stream against walbench's verifier.
void check_with_pg_waldump(const std::vector<Stream>& streams, const WalGeometry& g,
                           const VerifyResult& verify) {
  Tallies theirs;
  uint64_t described = 0;
  for (const Stream& s : streams) {
    INFO("stream " << s.dir << " end " << lsn_to_string(s.end));
    int st = 0;
    const std::string stats = run_command(waldump_command(s, g, "--stats=record"), &st);
    INFO("pg_waldump --stats=record:\n" << stats);
    if (s.end != kInvalidLsn || st == 0)
      REQUIRE(st == 0);
    else
      REQUIRE(only_end_of_wal_error(stats));
    parse_stats(stats, &theirs);

    // The plain dump describes every record on one "rmgr: " line (a message's with its whole
    // payload in hex): count those lines as they stream by, keep the others (errors, the exit
    // status).
    const std::string dump = run_command(
        "{ " + waldump_command(s, g, "") + " 2>&1; echo \"exit=$?\"; } | awk '/^rmgr: / { n++; next } "
        "{ print } END { print \"described=\" n + 0 }'",
        &st);
    INFO("pg_waldump, all but its rmgr lines:\n" << dump);
    std::smatch m;
    REQUIRE(std::regex_search(dump, m, std::regex(R"(described=(\d+))")));
    described += std::stoull(m[1].str());
    if (s.end != kInvalidLsn || dump.find("exit=0\n") != std::string::npos)
      REQUIRE(dump.find("exit=0\n") != std::string::npos);
    else
      REQUIRE(only_end_of_wal_error(dump));
  }
  const Tallies ours = walbench_tallies(verify);
  REQUIRE(ours.total.count > 0);
  for (const auto& [name, t] : ours.types) {
    INFO(name << ": walbench " << t.count << " records, " << t.bytes << " bytes; pg_waldump "
              << theirs.types[name].count << ", " << theirs.types[name].bytes);
    CHECK(theirs.types[name] == t);
  }
  CHECK(theirs.types.size() == ours.types.size());
  CHECK(theirs.total == ours.total);
  CHECK(theirs.total.count == verify.records);
  CHECK(described == verify.records);
}

CellSpec waldump_spec(const std::string& strategy, const std::string& dir) {
  CellSpec spec;
  spec.strategy = strategy;
  spec.clients = 6;
  spec.wal.page_size = 8192;         // XLOG_BLCKSZ of a stock build: pg_waldump checks it
  spec.wal.segment_size = 1u << 20;  // the smallest wal_segment_size pg_waldump accepts
  spec.wal.wal_buffers = 16;         // a ring of 128 KiB: pages evicted all the time
  spec.wal.storage = "file";
  spec.wal.path = dir;
  spec.wal.fsync = false;
  spec.workload.record_size.kind = SizeSpec::Kind::kUniform;
  spec.workload.record_size.min = 1;       // below 10 bytes the message is the tag's 10
  spec.workload.record_size.max = 40000;   // up to 5 pages
  spec.commit.synchronous_commit = false;
  spec.commit.wal_writer_delay_ms = 0.2;
  spec.platform.kind = "sim";
  spec.platform.sim = {{"cores", 8}};
  spec.run.seed = 13;
  // The xid lock table writes no WAL; without it the short runs below write more of it (the
  // savepoints cell took four xid locks a transaction and wrote 2.4 MB in 0.05 s, under the
  // three segments the check asks for).
  spec.clog.xid_locks = false;
  return spec;
}

// How many segments a checked run's WAL must exceed.
constexpr uint64_t kSegmentsCrossed = 3;

// Runs the cell for `seconds` (virtual on the sim; on real threads at least that long and until
// the WAL exceeds kSegmentsCrossed segments), verifies its WAL, and checks it with pg_waldump
// while the cell (and so its WAL directory) still exists. Returns walbench's counts.
Tallies run_and_check(const CellSpec& spec, double seconds) {
  const StrategyInfo* info = find_strategy(spec.strategy);
  REQUIRE(info != nullptr);
  auto cell = info->make_cell(spec, spec.run.seed);
  RunControl ctl(spec.clients);
  ctl.measuring = true;
  if (cell->drives_itself()) {
    conformance::drive_from_start(*cell, ctl, spec.run, seconds);
  } else {
    std::vector<std::thread> threads;
    for (uint32_t i = 0; i < spec.clients; ++i)
      threads.emplace_back([&, i] { cell->client_main(i, ctl); });
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    // Real threads on a loaded machine may have written less than the segments checked below:
    // run on until they have (the inserted bytes are at most the written ones), up to a minute.
    auto inserted = [&] {
      uint64_t sum = 0;
      for (const ClientCounters& c : ctl.counters) sum += c.wal_bytes.load(std::memory_order_relaxed);
      return sum;
    };
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (inserted() <= kSegmentsCrossed * spec.wal.segment_size &&
           std::chrono::steady_clock::now() < give_up)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ctl.stop = true;
    for (auto& t : threads) t.join();
  }
  cell->finish();
  const VerifyResult v = cell->verify();
  INFO("verify: " << v.error);
  REQUIRE(v.ok);
  // The WAL crossed segments (and so pages) several times.
  REQUIRE(v.bytes > kSegmentsCrossed * spec.wal.segment_size);

  std::vector<Stream> streams;
  for (const auto& e : std::filesystem::directory_iterator(spec.wal.path))
    streams.push_back(Stream{e.path().string(), kInvalidLsn});
  std::sort(streams.begin(), streams.end(),
            [](const Stream& a, const Stream& b) { return a.dir < b.dir; });
  REQUIRE(!streams.empty());
  // One shared WAL: its end is where the verifier's walk ended.
  if (streams.size() == 1) streams[0].end = Lsn{0x28 + v.bytes};
  WalGeometry g;
  g.page_size = spec.wal.page_size;
  g.segment_size = spec.wal.segment_size;
  check_with_pg_waldump(streams, g, v);
  return walbench_tallies(v);
}

}  // namespace

TEST_CASE("pg_waldump reads emit_message WAL of every strategy, counting what walbench counted",
          "[pg_waldump]") {
  for (const StrategyInfo& s : strategies()) {
    for (bool transactional : {true, false}) {
      testing::TempDir dir;
      CellSpec spec = waldump_spec(s.name, dir.path.string());
      spec.workload.transactional = transactional;
      INFO(s.name << " transactional=" << transactional);
      Tallies t = run_and_check(spec, 0.02);  // 20 ms of virtual time
      // One message per transaction, and a commit after each when transactional.
      CHECK(t.types["LogicalMessage/MESSAGE"].count > 0);
      CHECK(t.types["Transaction/COMMIT"].count ==
            (transactional ? t.types["LogicalMessage/MESSAGE"].count : 0));
    }
  }
}

TEST_CASE("pg_waldump reads emit_message WAL written by real threads", "[pg_waldump]") {
  testing::TempDir dir;
  CellSpec spec = waldump_spec("insert_locks", dir.path.string());
  spec.platform.kind = "threads";
  spec.platform.sim = nlohmann::json::object();
  spec.commit.wal_writer_delay_ms = 1;
  run_and_check(spec, 0.3);
}

TEST_CASE("pg_waldump reads the pgbench workloads' WAL", "[pg_waldump]") {
  for (const char* workload : {"simple_update", "tpcb_like", "savepoints"}) {
    testing::TempDir dir;
    CellSpec spec = waldump_spec("insert_locks", dir.path.string());
    spec.workload.name = workload;
    spec.workload.record_size.kind = SizeSpec::Kind::kFixed;
    spec.workload.record_size.value = 16;
    INFO(workload);
    Tallies t = run_and_check(spec, 0.05);
    const uint64_t commits = t.types["Transaction/COMMIT"].count;
    CHECK(commits > 0);
    if (std::string(workload) == "savepoints") {
      CHECK(t.types["Heap/LOCK"].count == 4 * commits);  // the top-level and 3 subtransactions
      CHECK(t.types["Transaction/COMMIT"].bytes == commits * commit_record_size(3));
    } else {
      CHECK(t.types["Heap/INSERT"].count == commits);  // INSERT INTO pgbench_history
      CHECK(t.types["Heap2/PRUNE"].count > 0);
      CHECK(t.types["Btree/INSERT_LEAF"].count == t.types["Heap/UPDATE"].count);
    }
  }
}

int main(int argc, char** argv) {
  std::string why_not;
  g_pg_waldump = find_pg_waldump(&why_not);
  if (g_pg_waldump.empty()) {
    std::cout << "pg_waldump test skipped: " << why_not
              << " (install PostgreSQL 15: scripts/setup.sh --with-postgres)\n";
    return 77;
  }
  int st = 0;
  const std::string version = run_command(shell_quote(g_pg_waldump) + " --version", &st);
  if (st != 0 || version.find("PostgreSQL) 15.") == std::string::npos) {
    std::cout << "pg_waldump test skipped: " << g_pg_waldump << " is not PostgreSQL 15's ("
              << version.substr(0, version.find('\n'))
              << "); walbench writes PG 15's WAL (XLOG_PAGE_MAGIC 0xD110). Set "
                 "WALBENCH_PG_WALDUMP to a PostgreSQL 15 pg_waldump.\n";
    return 77;
  }
  std::cout << "pg_waldump: " << g_pg_waldump << " (" << version.substr(0, version.find('\n'))
            << ")\n";
  return Catch::Session().run(argc, argv);
}

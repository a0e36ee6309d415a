// Conformance for the WAL-wide policies: the same correctness body as conformance_test.cc
// (tests/conformance.h: more clients than cores, records crossing pages and segments and larger
// than a tiny ring, the verifier finds no gap, valid CRCs and prev links, every client's records
// once and in order), run
//   - for every strategy variant with lock-free buffer initialisation (wal.buffer_init
//     "lockfree", core/wal/wal.h), and
//   - for a subset of variants on each primitive emulation (platform.atomics "emulated",
//     platform.spinlocks "semaphore", core/platform/emulated.h), with both buffer inits, on
//     threads and on the simulated platform.
// A new strategy joins by appearing in all_variants(); a new policy by a test case here.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "core/platform/emulated.h"
#include "core/platform/threads.h"
#include "core/cell/wal_cell.h"
#include "strategies/clog_choice.h"
#include "strategies/single_lock/single_lock.h"
#include "tests/conformance.h"

using namespace walbench;
using namespace walbench::conformance;

namespace {

// The emulation combinations other than native/native (which conformance_test.cc covers).
struct Combo {
  const char* atomics;
  const char* spinlocks;
};
constexpr Combo kCombos[] = {
    {"emulated", "native"}, {"native", "semaphore"}, {"emulated", "semaphore"}};

// A few variants per emulation: the designs whose primitives differ most (one LWLock; the
// insertion locks with each insertingAt protocol; the no-shared-state baseline), plus one
// variant of every other registered strategy.
std::vector<Variant> emulation_subset() {
  std::vector<Variant> out;
  for (const Variant& v : all_variants()) {
    const bool first_of_strategy = std::none_of(
        out.begin(), out.end(), [&](const Variant& o) { return o.strategy == v.strategy; });
    if (v.strategy == "insert_locks") {
      if (v.params.value("num_locks", 0) == 8 && v.params.value("lock_choice", "") == "procno")
        out.push_back(v);  // waitlist, atomic, atomic_fastpath
    } else if (first_of_strategy) {
      out.push_back(v);
    }
  }
  return out;
}

bool has_stat(const nlohmann::json& lock_stats, const char* key) {
  return lock_stats.contains(key) && lock_stats.at(key).at("acquisitions").get<uint64_t>() > 0;
}

}  // namespace

TEST_CASE("every strategy passes the verifier with lock-free buffer init", "[conformance]") {
  const auto dir = scratch_dir("walbench-policies-conformance");
  int n = 0;
  for (const Variant& v : all_variants()) {
    // One stress cell per variant; the four commit/storage modes rotate over the variants.
    const int mode = n++ % 4;
    CellSpec spec = stress_spec(v);
    spec.wal.buffer_init = "lockfree";
    spec.commit.synchronous_commit = (mode & 1) == 0;
    spec.workload.transactional = mode != 3;
    if (mode & 2) {
      spec.wal.storage = "file";
      spec.wal.path = dir.string();
      spec.wal.fsync = false;
    }
    INFO(describe(v, spec) << " buffer_init=lockfree");
    const Outcome o = run_cell(spec, 0.15);
    INFO("verify: " << o.verify.error << " model: " << o.model.dump());
    CHECK(o.txns > 0);
    CHECK(o.verify.ok);
    CHECK(o.verify.records > 0);
    CHECK(o.model.at("pages_initialised").get<uint64_t>() > 4);  // the ring was recycled

    // Many clients, small records, an 8-page ring: page advances race.
    CellSpec many;
    many.strategy = v.strategy;
    many.strategy_params = v.params;
    many.clients = 16;
    many.wal.wal_buffers = 8;
    many.wal.memory_mb = kStressMemoryMb;
    many.wal.buffer_init = "lockfree";
    many.workload.record_size.value = 16;
    many.commit.synchronous_commit = false;
    many.commit.wal_writer_delay_ms = 1;
    INFO("16 clients, 8 buffers");
    const Outcome m = run_cell(many, 0.1);
    INFO("verify: " << m.verify.error);
    CHECK(m.txns > 0);
    CHECK(m.verify.ok);
    CHECK(m.verify.records == 2 * m.txns);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("buffer_init selects the design: no WALBufMappingLock when lock-free",
          "[conformance]") {
  Variant v{"insert_locks",
            {{"num_locks", 8}, {"insertingat", "atomic"}, {"lock_choice", "procno"}}};
  for (const char* init : {"mapping_lock", "lockfree"}) {
    CellSpec spec = stress_spec(v);
    spec.wal.buffer_init = init;
    const StrategyInfo* info = find_strategy(spec.strategy);
    REQUIRE(info != nullptr);
    auto cell = info->make_cell(spec, spec.run.seed);
    RunControl ctl(spec.clients);
    ctl.measuring = true;  // lock statistics cover the window: here the whole run
    std::vector<std::thread> threads;
    for (uint32_t i = 0; i < spec.clients; ++i)
      threads.emplace_back([&, i] { cell->client_main(i, ctl); });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ctl.stop = true;
    for (auto& t : threads) t.join();
    cell->finish();
    CHECK(cell->verify().ok);
    const nlohmann::json stats = cell->lock_stats();
    INFO(init << ": " << stats.dump());
    if (std::string(init) == "lockfree") {
      CHECK_FALSE(has_stat(stats, "LWLock:WALBufMapping"));
      CHECK(has_stat(stats, "IPC:WALBufferInit"));  // the condition variable's mutex was taken
    } else {
      CHECK(has_stat(stats, "LWLock:WALBufMapping"));
      CHECK_FALSE(has_stat(stats, "IPC:WALBufferInit"));
    }
  }
}

TEST_CASE("platform policies instantiate the emulated platforms", "[conformance]") {
  // make_wal_cell dispatches platform.atomics x platform.spinlocks to four platforms.
  Variant v{"single_lock", nlohmann::json::object()};
  auto make = [&](const char* a, const char* s) {
    CellSpec spec = stress_spec(v);
    spec.platform.atomics = a;
    spec.platform.spinlocks = s;
    return find_strategy("single_lock")->make_cell(spec, 1);
  };
  using T = ThreadsPlatform;
  using EA = EmulatedPlatform<T, true, false>;
  using ES = EmulatedPlatform<T, false, true>;
  using EB = EmulatedPlatform<T, true, true>;
  CHECK(dynamic_cast<WalCell<T, SingleLock<T>, ClogChoice<T>>*>(make("native", "native").get()) != nullptr);
  CHECK(dynamic_cast<WalCell<EA, SingleLock<EA>, ClogChoice<EA>>*>(make("emulated", "native").get()) != nullptr);
  CHECK(dynamic_cast<WalCell<ES, SingleLock<ES>, ClogChoice<ES>>*>(make("native", "semaphore").get()) != nullptr);
  CHECK(dynamic_cast<WalCell<EB, SingleLock<EB>, ClogChoice<EB>>*>(make("emulated", "semaphore").get()) != nullptr);
  // The same four on the simulated platform (which used to refuse emulation).
  auto make_sim = [&](const char* a, const char* s) {
    CellSpec spec = stress_spec(v);
    spec.platform.kind = "sim";
    spec.platform.atomics = a;
    spec.platform.spinlocks = s;
    return find_strategy("single_lock")->make_cell(spec, 1);
  };
  using S = SimPlatform;
  using SA = EmulatedPlatform<S, true, false>;
  using SS = EmulatedPlatform<S, false, true>;
  using SB = EmulatedPlatform<S, true, true>;
  CHECK(dynamic_cast<WalCell<S, SingleLock<S>, ClogChoice<S>>*>(make_sim("native", "native").get()) != nullptr);
  CHECK(dynamic_cast<WalCell<SA, SingleLock<SA>, ClogChoice<SA>>*>(make_sim("emulated", "native").get()) != nullptr);
  CHECK(dynamic_cast<WalCell<SS, SingleLock<SS>, ClogChoice<SS>>*>(make_sim("native", "semaphore").get()) != nullptr);
  CHECK(dynamic_cast<WalCell<SB, SingleLock<SB>, ClogChoice<SB>>*>(make_sim("emulated", "semaphore").get()) != nullptr);
  CHECK(make_sim("emulated", "semaphore")->drives_itself());
  CHECK_THROWS_WITH(make("fallback", "native"), Catch::Contains("platform.atomics"));
  CHECK_THROWS_WITH(make("native", "sema"), Catch::Contains("platform.spinlocks"));
}

TEST_CASE("strategies pass the verifier on the emulated primitives", "[conformance][emulation]") {
  for (const Combo& c : kCombos) {
    for (const Variant& v : emulation_subset()) {
      for (const char* init : {"mapping_lock", "lockfree"}) {
        CellSpec spec = stress_spec(v);
        spec.platform.atomics = c.atomics;
        spec.platform.spinlocks = c.spinlocks;
        spec.wal.buffer_init = init;
        // Alternate the commit mode so both are covered on every combination.
        spec.commit.synchronous_commit = std::string(init) == "mapping_lock";
        INFO(describe(v, spec) << " atomics=" << c.atomics << " spinlocks=" << c.spinlocks
                               << " buffer_init=" << init);
        const Outcome o = run_cell(spec, 0.1);
        INFO("verify: " << o.verify.error << " model: " << o.model.dump());
        CHECK(o.txns > 0);
        CHECK(o.verify.ok);
        CHECK(o.model.at("pages_initialised").get<uint64_t>() > 4);
      }
    }
  }
}

TEST_CASE("strategies pass the verifier on the emulated primitives on the sim",
          "[conformance][emulation][sim]") {
  for (const Combo& c : kCombos) {
    for (const Variant& v : emulation_subset()) {
      CellSpec spec = stress_spec(v);
      spec.platform.kind = "sim";
      spec.platform.sim = {{"cores", 8}, {"sockets", 2}};
      spec.clients = 24;
      spec.commit.wal_writer_delay_ms = 0.05;
      spec.platform.atomics = c.atomics;
      spec.platform.spinlocks = c.spinlocks;
      INFO(describe(v, spec) << " atomics=" << c.atomics << " spinlocks=" << c.spinlocks);
      const Outcome o = run_cell(spec, 0.002);  // 2 ms of virtual time
      INFO("verify: " << o.verify.error << " model: " << o.model.dump());
      CHECK(o.txns > 0);
      CHECK(o.verify.ok);
      CHECK(o.driven.measured);
    }
  }
}

TEST_CASE("emulated primitives cost virtual time: contended sim cells are slower than native",
          "[emulation][sim]") {
  // insert_locks as in PG 15 (waitlist), 48 clients on 16 simulated cores, small records, no
  // client work: the insertion locks' state words, insertingAt and insertpos_lck are hot. Every
  // emulation pays for it: a spinlock around each atomic RMW, trylocks (a load and a CAS) and
  // PAUSE-less spinning that runs out of its spin budget and sleeps 1 ms.
  auto tps = [](const char* atomics, const char* spinlocks) {
    CellSpec spec;
    spec.strategy = "insert_locks";
    spec.strategy_params = {{"num_locks", 8}, {"insertingat", "waitlist"}, {"lock_choice", "procno"}};
    spec.clients = 48;
    spec.platform.kind = "sim";
    spec.platform.sim = {{"cores", 16}, {"sockets", 2}};
    spec.platform.atomics = atomics;
    spec.platform.spinlocks = spinlocks;
    spec.workload.record_size.value = 64;
    spec.commit.synchronous_commit = false;
    // The insertion locks' words are what this cell is about. With the xid lock table on (the
    // default since 8b3317e), its LockManager partitions and packed freelist spinlocks take
    // over in this 3 ms cell with no client work, and semaphore spinlocks, whose spinners give
    // up their CPU, ran 3% more transactions than native ones (2,239 against 2,174).
    spec.clog.xid_locks = false;
    spec.run.seed = 3;
    const Outcome o = run_cell(spec, 0.003);
    INFO(atomics << "/" << spinlocks << " verify: " << o.verify.error);
    REQUIRE(o.verify.ok);
    REQUIRE(o.txns > 0);
    return static_cast<double>(o.txns);
  };
  const double native = tps("native", "native");
  for (const Combo& c : kCombos) {
    const double t = tps(c.atomics, c.spinlocks);
    INFO(c.atomics << "/" << c.spinlocks << ": " << t << " transactions, native " << native);
    CHECK(t < native);
    CHECK(tps(c.atomics, c.spinlocks) == t);  // deterministic
  }
}

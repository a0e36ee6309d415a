// Tests for the sim platform (core/platform/sim.h): scheduling by virtual clock, the cost model
// (exact virtual times), determinism, the locks of core/locks running unchanged on 64 fibers over
// 8 simulated cores, deadlock reports, time slicing, the stop flag and unwinding, config JSON.
//
// Rules of this file:
// - Everything asserted is a virtual-time fact: exact numbers, never wall-clock timings.
// - Catch2 assertions run outside fibers (after run()); fibers record what they saw.
// - Runs whose results are compared with each other execute on fresh OS threads, and once on two
//   threads at the same time: nothing may hide in thread-local state, and independent simulations
//   must not interfere.
#include "core/platform/sim.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "core/locks/lwlock.h"
#include "core/locks/spinlock.h"
#include "core/platform/line_names.h"
#include "core/proc.h"

namespace walbench {
namespace {

using SP = SimPlatform;
constexpr WaitEvent kT = WaitEvent::kTestLock;

// A config whose numbers are easy to add up by hand.
SimConfig small_machine(uint32_t cores, uint32_t sockets, SimPlacement placement) {
  SimConfig c;
  c.cores = cores;
  c.sockets = sockets;
  c.placement = placement;
  c.wake_jitter = 0;
  return c;
}

// Runs f on a fresh OS thread and returns its result.
template <class F>
auto on_fresh_thread(F f) {
  decltype(f()) out;
  std::thread t([&] { out = f(); });
  t.join();
  return out;
}

// One line per object: the cost-model tests want to know which objects share a line.
template <class T>
struct alignas(64) OwnLine {
  T v;
};

}  // namespace

TEST_CASE("sim: fibers interleave by virtual clock", "[sim]") {
  Simulation sim(small_machine(4, 1, SimPlacement::kCompact), 1);
  struct Entry {
    uint64_t t;
    int who;
  };
  std::vector<Entry> log;
  const uint64_t step[3] = {300, 500, 700};
  for (int i = 0; i < 3; ++i) {
    sim.spawn(
        [&, i] {
          for (int k = 0; k < 10; ++k) {
            SP::work(step[i]);
            log.push_back({SP::now_ns(), i});
          }
        },
        "worker " + std::to_string(i));
  }
  const SimOutcome out = sim.run();
  REQUIRE(out.finished());
  REQUIRE(log.size() == 30);
  const uint64_t cs = sim.config().context_switch_ns;
  // Every fiber starts on its own CPU after one dispatch; its k-th entry is at cs + k * step.
  int seen[3] = {0, 0, 0};
  for (size_t n = 0; n < log.size(); ++n) {
    const Entry& e = log[n];
    ++seen[e.who];
    CHECK(e.t == cs + static_cast<uint64_t>(seen[e.who]) * step[e.who]);
    if (n > 0) CHECK(log[n - 1].t <= e.t);  // the global log is in virtual-time order
  }
  // Interleaved, not one fiber after the other.
  CHECK(log[0].who == 0);
  CHECK(log[1].who == 1);
  CHECK(out.now_ns == cs + 10 * 700);
  for (int i = 0; i < 3; ++i) CHECK(sim.fiber_clock(static_cast<size_t>(i)) == cs + 10 * step[i]);
}

TEST_CASE("sim: ties at the same nanosecond go by sequence number, the running fiber too",
          "[sim]") {
  SECTION("an `at` callback registered earlier runs before a fiber's access at that instant") {
    // The fiber is dispatched at 0 and runs from context_switch_ns = 1200; after 800 ns of work
    // its load happens at 2000, exactly when the callback is due. The callback was queued first,
    // so the load sees its store.
    Simulation sim(small_machine(2, 1, SimPlacement::kCompact), 1);
    OwnLine<SP::Atomic<int>> flag;
    int seen = -1;
    uint64_t loaded_at = 0;
    sim.spawn([&] {
      SP::work(800);
      loaded_at = SP::now_ns();
      seen = flag.v.load();
    }, "reader");
    sim.at(2000, [&] { flag.v.store(1); });
    REQUIRE(sim.run().finished());
    CHECK(loaded_at == 2000);
    CHECK(seen == 1);
  }
  SECTION("a fiber that runs into another fiber's pending instant yields to it") {
    // Both fibers are dispatched at 0 and run from 1200; each works 100 ns, so both reach their
    // access at 1300. The writer was spawned first: its event at 1300 is queued (it yielded to
    // the reader's event at 1200) before the reader arrives at 1300, so the write goes first and
    // the reader, though it could just continue, must see it.
    Simulation sim(small_machine(2, 1, SimPlacement::kCompact), 1);
    OwnLine<SP::Atomic<int>> x;
    int seen = -1;
    uint64_t writer_at = 0, reader_at = 0;
    sim.spawn([&] {
      SP::work(100);
      writer_at = SP::now_ns();
      x.v.store(1);
    }, "writer");
    sim.spawn([&] {
      SP::work(100);
      reader_at = SP::now_ns();
      seen = x.v.load();
    }, "reader");
    REQUIRE(sim.run().finished());
    CHECK(writer_at == 1300);
    CHECK(reader_at == 1300);
    CHECK(seen == 1);
  }
}

TEST_CASE("sim: exact cost of line transfers and RMW serialization", "[sim]") {
  // 4 cores on 2 sockets: compact puts the first two fibers on cores 0 and 1 (socket 0), spread
  // on cores 0 and 2 (sockets 0 and 1).
  for (SimPlacement placement : {SimPlacement::kCompact, SimPlacement::kSpread}) {
    DYNAMIC_SECTION("placement " << (placement == SimPlacement::kCompact ? "compact" : "spread")) {
      const SimConfig cfg = small_machine(4, 2, placement);
      const uint64_t cs = cfg.context_switch_ns;
      const uint64_t transfer = placement == SimPlacement::kCompact ? cfg.same_socket_transfer_ns
                                                                    : cfg.cross_socket_transfer_ns;
      SECTION("write then remote read") {
        auto x = std::make_unique<OwnLine<SP::Atomic<uint64_t>>>();
        uint64_t t_store = 0, t_load = 0, t_reload = 0, seen = 0;
        Simulation sim(cfg, 1);
        sim.spawn([&] {
          x->v.store(7);  // nobody has the line: from memory
          t_store = SP::now_ns();
        }, "writer");
        sim.spawn([&] {
          SP::work(1000);
          seen = x->v.load();  // the writer owns it: one transfer
          t_load = SP::now_ns();
          x->v.load();  // now a hit
          t_reload = SP::now_ns();
        }, "reader");
        REQUIRE(sim.run().finished());
        CHECK(t_store == cs + cfg.memory_ns);
        CHECK(seen == 7);
        CHECK(t_load == cs + 1000 + transfer);
        CHECK(t_reload == t_load + cfg.line_hit_ns);
        CHECK(sim.counters().memory_fetches == 1);
        CHECK(sim.counters().line_hits == 1);
        CHECK(sim.counters().shared_ops == 3);
      }
      SECTION("two RMWs at the same instant serialize on the line") {
        auto x = std::make_unique<OwnLine<SP::Atomic<uint64_t>>>();
        uint64_t t0 = 0, t1 = 0;
        Simulation sim(cfg, 1);
        sim.spawn([&] { x->v.fetch_add(1); t0 = SP::now_ns(); }, "first");
        sim.spawn([&] { x->v.fetch_add(1); t1 = SP::now_ns(); }, "second");
        REQUIRE(sim.run().finished());
        const uint64_t first_done = cs + cfg.memory_ns + cfg.rmw_extra_ns;
        CHECK(t0 == first_done);
        // Both requests reach the line at cs + memory / 2; the second waits there for the first
        // and is then served from the start: the line moves from the first's core.
        CHECK(t1 == first_done + transfer + cfg.rmw_extra_ns);
        CHECK(sim.counters().line_wait_ns == first_done - (cs + cfg.memory_ns / 2));
        // Counted once each, where served: the first from memory, the second from the first.
        CHECK(sim.counters().memory_fetches == 1);
        CHECK(sim.counters().socket_transfers + sim.counters().cross_socket_transfers == 1);
        CHECK((placement == SimPlacement::kCompact ? sim.counters().socket_transfers
                                                   : sim.counters().cross_socket_transfers) == 1);
        CHECK(x->v.load() == 2);
      }
      SECTION("objects on one line share it") {
        struct alignas(64) Pair {
          SP::Atomic<uint32_t> a{0};
          SP::Shared<uint32_t> b{0};
        };
        auto pair = std::make_unique<Pair>();
        uint64_t t_b = 0;
        Simulation sim(cfg, 1);
        sim.spawn([&] { pair->a.store(1); }, "writes a");
        sim.spawn([&] {
          SP::work(1000);
          (void)pair->b.get();  // b's line was just written through a: a transfer
          t_b = SP::now_ns();
        }, "reads b");
        REQUIRE(sim.run().finished());
        CHECK(t_b == cs + 1000 + transfer);
      }
    }
  }
}

TEST_CASE("sim: a read run prices each line once, its other objects as hits", "[sim]") {
  // 40 xids 12 bytes apart (PGXACT's layout), the first 4 bytes into a line: lines by address
  // hold 5, 6, 5, 5, 6, 5, 5 and 3 of them (8 lines; grouping by index, 16 to a line, would make
  // 3). Written by a fiber on core 0, then read on core 1 by a loop of loads or by one
  // P::read_run. Nobody writes meanwhile: both load the same 8 lines (8 misses) and count 32
  // hits. The loop pays the 8 transfers one after another; the run's misses overlap (sim.h
  // "RUNS": each line's first load costs a hit to issue, its data is back a transfer later),
  // so it ends when its last line (first object 37) is back: 37 hits and one transfer. The run
  // yields only at its 8 line loads, the loop at every object too, and at each miss's arrival
  // (a ticker on a third core keeps an event pending at every nanosecond).
  const SimConfig cfg = small_machine(4, 1, SimPlacement::kCompact);
  struct Entry {
    SP::Atomic<uint32_t> xid;
    uint32_t other[2];
  };
  static_assert(sizeof(Entry) == 12);
  struct alignas(64) Xids {
    uint32_t pad;
    Entry e[40];
  };
  struct Seen {
    uint64_t took = 0, events = 0, shared_ops = 0, line_hits = 0;
    std::vector<uint32_t> values;
  };
  const auto scan = [&](bool as_run) {
    return on_fresh_thread([&] {
      auto xids = std::make_unique<Xids>();
      Seen seen;
      seen.values.resize(40);
      Simulation sim(cfg, 1);
      sim.spawn([&] {
        for (uint32_t i = 0; i < 40; ++i) xids->e[i].xid.store(100 + i);
      }, "writer");
      sim.spawn([&] {
        SP::work(10000);
        const uint64_t t0 = SP::now_ns();
        if (as_run) {
          SP::read_run(&xids->e[0].xid, sizeof(Entry), 40,
                       [&](size_t i) { seen.values[i] = xids->e[i].xid.load(); });
        } else {
          for (size_t i = 0; i < 40; ++i) seen.values[i] = xids->e[i].xid.load();
        }
        seen.took = SP::now_ns() - t0;
      }, "reader");
      sim.spawn([&] {
        SP::work(9990);
        for (int i = 0; i < 400; ++i) SP::work(1);
      }, "ticker");
      REQUIRE(sim.run().finished());
      seen.events = sim.counters().events;
      seen.shared_ops = sim.counters().shared_ops;
      seen.line_hits = sim.counters().line_hits;
      return seen;
    });
  };
  const Seen loop = scan(false);
  const Seen run = scan(true);
  for (uint32_t i = 0; i < 40; ++i) {
    CHECK(loop.values[i] == 100 + i);
    CHECK(run.values[i] == 100 + i);
  }
  CHECK(loop.took == 8 * cfg.same_socket_transfer_ns + 32 * cfg.line_hit_ns);
  CHECK(run.took == 37 * cfg.line_hit_ns + cfg.same_socket_transfer_ns);
  CHECK(run.shared_ops == loop.shared_ops);
  CHECK(run.line_hits == loop.line_hits);
  CHECK(run.events + 25 < loop.events);
}

TEST_CASE("sim: a run keeps 24 misses in flight, and what follows it waits for them", "[sim]") {
  // 30 xids, one to a line, written on core 0, read on core 1 as 30 runs of one object each
  // (consecutive runs are one stream, as in the dense snapshot scan). Each line's first load
  // costs a hit to issue and is back a transfer later while the reader goes on; the 25th miss
  // finds 24 in flight and issues when the oldest is back, and so on (a sliding window). Then
  // P::work(20) waits until every miss is back before it starts, and so does the next load (a
  // hit on a line the reader holds).
  const SimConfig cfg = small_machine(4, 1, SimPlacement::kCompact);
  constexpr uint32_t kLines = 30;
  const uint64_t hit = cfg.line_hit_ns;
  const uint64_t x = cfg.same_socket_transfer_ns;
  REQUIRE(x > Simulation::kRangeLineParallelism * hit);  // so that the window fills
  std::vector<uint64_t> back(kLines);
  uint64_t expect = 0, done = 0;
  for (uint32_t k = 0; k < kLines; ++k) {
    if (k >= Simulation::kRangeLineParallelism)
      expect = std::max(expect, back[k - Simulation::kRangeLineParallelism]);
    back[k] = expect + x;
    done = std::max(done, back[k]);
    expect += hit;
  }
  REQUIRE(done > back[Simulation::kRangeLineParallelism - 1] + hit);  // the window did wait
  expect = std::max(expect, done) + 20 + hit;
  auto xids = std::make_unique<std::array<OwnLine<SP::Atomic<uint32_t>>, kLines>>();
  auto own = std::make_unique<OwnLine<SP::Atomic<uint32_t>>>();
  uint64_t took = 0, sum = 0;
  Simulation sim(cfg, 1);
  sim.spawn([&] {
    for (uint32_t i = 0; i < kLines; ++i) (*xids)[i].v.store(i);
  }, "writer");
  sim.spawn([&] {
    own->v.load();
    SP::work(10000);
    const uint64_t t0 = SP::now_ns();
    for (uint32_t l = 0; l < kLines; ++l)
      SP::read_run(&(*xids)[l].v, sizeof((*xids)[0]), 1, [&](size_t) { sum += (*xids)[l].v.load(); });
    SP::work(20);
    own->v.load();
    took = SP::now_ns() - t0;
  }, "reader");
  REQUIRE(sim.run().finished());
  CHECK(sum == (kLines - 1) * kLines / 2);
  CHECK(took == expect);
  CHECK(sim.counters().socket_transfers >= kLines);
}

TEST_CASE("sim: a read miss sees what reached the line before its request did", "[sim]") {
  // spread: the owner on core 0 (socket 0), the reader on core 2 (socket 1). The reader's load
  // is issued at cs + 1000 and reaches the line half a cross-socket transfer later (an odd
  // transfer: the request leg is the smaller half); the owner increments the word 3 ns before
  // that instant (its RMW, a hit plus the locked extra, still holds the line when the request
  // arrives: the request waits for it) or 10 ns after it (the reader never sees it).
  SimConfig cfg = small_machine(4, 2, SimPlacement::kSpread);
  cfg.cross_socket_transfer_ns = 107;
  const uint64_t cs = cfg.context_switch_ns;
  const uint64_t x = cfg.cross_socket_transfer_ns;
  const uint64_t issue = cs + 1000;
  const uint64_t reach = issue + x / 2;
  for (const bool before : {true, false}) {
    DYNAMIC_SECTION((before ? "the RMW lands before the request" : "the RMW lands after it")) {
      auto w = std::make_unique<OwnLine<SP::Atomic<uint64_t>>>();
      const uint64_t rmw_at = before ? reach - 3 : reach + 10;
      uint64_t seen = 0, t_load = 0, t_reload = 0, t_rmw = 0, t_rmw_done = 0;
      Simulation sim(cfg, 1);
      sim.spawn([&] {
        w->v.store(5, std::memory_order_release);  // buffered: the clock moves by a hit
        SP::work(rmw_at - SP::now_ns());
        t_rmw = SP::now_ns();
        w->v.fetch_add(1);
        t_rmw_done = SP::now_ns();
      }, "owner");
      sim.spawn([&] {
        SP::work(1000);
        seen = w->v.load();
        t_load = SP::now_ns();
        if (!before) return;
        (void)w->v.load();  // the reader holds a copy now: a hit
        t_reload = SP::now_ns();
      }, "reader");
      const SimOutcome out = sim.run();
      REQUIRE(out.finished());
      CHECK(t_rmw == rmw_at);
      if (before) {
        CHECK(seen == 6);
        const uint64_t rmw_busy_until = rmw_at + cfg.line_hit_ns + cfg.rmw_extra_ns;
        REQUIRE(rmw_busy_until > reach);  // the case this section pins: the request waits
        CHECK(t_load == rmw_busy_until + x);  // served when the line frees: a whole transfer
        CHECK(out.counters.line_wait_ns == rmw_busy_until - reach);
        CHECK(t_reload == t_load + cfg.line_hit_ns);
      } else {
        CHECK(seen == 5);
        CHECK(t_load == issue + x);  // one transfer, as if nothing else happened
        // The reader's copy is a holder the owner's RMW must invalidate: a cross-socket write.
        CHECK(t_rmw_done == rmw_at + x + cfg.rmw_extra_ns);
      }
    }
  }
}

TEST_CASE("sim: snoop_linger: the holder's access issued before a queued request's snoop lands "
          "comes first", "[sim]") {
  // spread: the holder on core 0 (socket 0), the requester on core 2 (socket 1). The holder's
  // second fetch_add starts at X, a hit that holds the line until X + hold; the requester's
  // fetch_add is issued so that its request reaches the line at X + 3 and finds it busy. The
  // holder issues a third fetch_add the instant its second completes (a failed CAS's retry).
  //   snoop_linger 0: the request is ordered at its arrival, before the third add: it sees 2,
  //     and the third add is a miss, served after it.
  //   snoop_linger 1: it is ordered when its snoop lands at the holder, half a transfer after
  //     the line frees; the third add, issued before that, is a hit and comes first: it sees 3.
  // Either way the requester's data is back a whole transfer after the line freed.
  for (const uint32_t linger : {0u, 1u}) {
    DYNAMIC_SECTION("snoop_linger " << linger) {
      SimConfig cfg = small_machine(4, 2, SimPlacement::kSpread);
      cfg.cross_socket_transfer_ns = 108;
      cfg.snoop_linger = linger;
      const uint64_t x = cfg.cross_socket_transfer_ns;
      const uint64_t hold = cfg.line_hit_ns + cfg.rmw_extra_ns;
      const uint64_t at = cfg.context_switch_ns + 1000;  // X
      auto w = std::make_unique<OwnLine<SP::Atomic<uint64_t>>>();
      uint64_t seen = 0, t_seen = 0, third_start = 0, third_done = 0, third_old = 0;
      Simulation sim(cfg, 1);
      sim.spawn([&] {
        w->v.fetch_add(1);  // takes the line
        SP::work(at - SP::now_ns());
        w->v.fetch_add(1);  // a hit: the line is busy until at + hold
        third_start = SP::now_ns();
        third_old = w->v.fetch_add(1);
        third_done = SP::now_ns();
      }, "holder");
      sim.spawn([&] {
        SP::work(at + 3 - x / 2 - SP::now_ns());
        seen = w->v.fetch_add(1);
        t_seen = SP::now_ns();
      }, "requester");
      REQUIRE(sim.run().finished());
      CHECK(third_start == at + hold);
      CHECK(t_seen == at + hold + x + cfg.rmw_extra_ns);
      if (linger == 0) {
        CHECK(seen == 2);
        CHECK(third_old == 3);
        CHECK(third_done > t_seen);  // queued behind the request
      } else {
        CHECK(seen == 3);
        CHECK(third_old == 2);
        CHECK(third_done == third_start + hold);  // a hit
      }
    }
  }
}

TEST_CASE("sim: snoop_linger: a holder's RMWs come first until the snoop lands, not after",
          "[sim]") {
  // As above, but the holder issues 12 fetch_adds back to back after its second, each a hit of
  // line_hit_ns + rmw_extra_ns while it owns the line. The request reaches the busy line at
  // X + 3; the line frees at X + hold and the snoop lands half a cross-socket transfer later.
  // Exactly the adds issued before that instant come first: the requester sees 2 + that many.
  SimConfig cfg = small_machine(4, 2, SimPlacement::kSpread);
  cfg.cross_socket_transfer_ns = 108;
  cfg.snoop_linger = 1;
  const uint64_t x = cfg.cross_socket_transfer_ns;
  const uint64_t hold = cfg.line_hit_ns + cfg.rmw_extra_ns;
  const uint64_t at = cfg.context_switch_ns + 1000;
  const uint64_t snoop = at + hold + x / 2;
  uint64_t before_snoop = 0;  // adds issued at at + hold + i * hold < snoop
  for (uint64_t t = at + hold; t < snoop; t += hold) ++before_snoop;
  REQUIRE(before_snoop < 12);
  auto w = std::make_unique<OwnLine<SP::Atomic<uint64_t>>>();
  uint64_t seen = 0;
  Simulation sim(cfg, 1);
  sim.spawn([&] {
    w->v.fetch_add(1);
    SP::work(at - SP::now_ns());
    w->v.fetch_add(1);
    for (int i = 0; i < 12; ++i) w->v.fetch_add(1);
  }, "holder");
  sim.spawn([&] {
    SP::work(at + 3 - x / 2 - SP::now_ns());
    seen = w->v.fetch_add(1);
  }, "requester");
  REQUIRE(sim.run().finished());
  CHECK(seen == 2 + before_snoop);
  CHECK(w->v.load() == 15);
}

TEST_CASE("sim: request_at_issue: a request issued while its line is busy waits there, ahead "
          "of the holder's later accesses", "[sim]") {
  // Two cores of one socket add to one word with back-to-back fetch_adds. With 0 a request
  // issued while the line is busy leaves when it frees and reaches it half a transfer later:
  // the holder's adds issued meanwhile are hits and come first (runs of about
  // transfer / 2 / (hit + extra)). With 1 it left at issue and waits at the line: the holder's
  // next add comes after it, so the two alternate, each add costing a whole transfer.
  SimConfig cfg = small_machine(2, 1, SimPlacement::kSpread);
  cfg.same_socket_transfer_ns = 62;
  cfg.line_hit_ns = 1;
  cfg.rmw_extra_ns = 2;
  cfg.wake_jitter = 0;
  cfg.request_at_issue = 0;
  const double when_free = sim_fetch_add_run_length(cfg, 400);
  cfg.request_at_issue = 1;
  const double waits = sim_fetch_add_run_length(cfg, 400);
  INFO("runs: " << when_free << " leaving when free, " << waits << " waiting at the line");
  CHECK(when_free > 8.0);
  CHECK(when_free < 16.0);
  CHECK(waits == Approx(1.0));
  // The same with the holder-first rule on top: the holder gets half a transfer again.
  cfg.snoop_linger = 1;
  CHECK(sim_fetch_add_run_length(cfg, 400) > 8.0);
  // snoop_window_ns: the waiting request is ordered that long after the line frees; the
  // holder's adds issued meanwhile (one per line_hit_ns + rmw_extra_ns) come first.
  cfg.snoop_linger = 0;
  for (const uint64_t window : {3u, 9u, 15u}) {
    cfg.snoop_window_ns = window;
    INFO("window " << window);
    CHECK(sim_fetch_add_run_length(cfg, 400) ==
          Approx(1.0 + static_cast<double>(window / (cfg.line_hit_ns + cfg.rmw_extra_ns)))
              .margin(0.05));
  }
  // A window needs request_at_issue 1 and snoop_linger 0: a config asking otherwise is refused.
  cfg.request_at_issue = 0;
  CHECK_THROWS_WITH(cfg.validate("platform"), Catch::Contains("snoop_window_ns") &&
                                                  Catch::Contains("request_at_issue is 1"));
  cfg.request_at_issue = 1;
  cfg.snoop_linger = 1;
  CHECK_THROWS_WITH(cfg.validate("platform"), Catch::Contains("snoop_linger is 0"));
  cfg.snoop_linger = 0;
  CHECK_NOTHROW(cfg.validate("platform"));
}

TEST_CASE("sim: snoop_linger: CAS tries per success of N cores in a CAS loop", "[sim]") {
  // The micro-benchmark `walbench calibrate` runs on the real machine and on the simulated one
  // (sim_cas_loop_tries_per_success): every core increments one word with a CAS loop. Ordered
  // at arrival (0), a failed CAS's retry queues behind the requests that reached the line
  // during it: the tries per success grow with N. With the holder's retry winning (1) they stay
  // near 1. calibrate sets the parameter by which prediction its measurement is nearer.
  for (const uint32_t n : {8u, 32u}) {
    SimConfig cfg = small_machine(n, 2, SimPlacement::kSpread);
    cfg.snoop_linger = 0;
    const double arrival = sim_cas_loop_tries_per_success(cfg, n, 200);
    cfg.snoop_linger = 1;
    const double snoop = sim_cas_loop_tries_per_success(cfg, n, 200);
    INFO(n << " cores: " << arrival << " tries per success ordered at arrival, " << snoop
           << " with the holder's retry first");
    CHECK(arrival > 0.3 * n);
    CHECK(snoop > 1.0);
    CHECK(snoop < 1.5);
  }
  // Two cores cannot tell them apart (calibrate leaves the parameter at 0 there).
  SimConfig two = small_machine(2, 1, SimPlacement::kSpread);
  const double a2 = sim_cas_loop_tries_per_success(two, 2, 200);
  two.snoop_linger = 1;
  const double s2 = sim_cas_loop_tries_per_success(two, 2, 200);
  CHECK(a2 / s2 < 1.5);
}

TEST_CASE("sim: the herd after a test-and-test-and-set lock's release grows with the spinners",
          "[sim]") {
  // The wait-list-lock loop `walbench calibrate` measures (sim_ttas_failed_rmws_per_acquisition).
  // Loads of one line are served in parallel, so the spinners that re-read the released word
  // see it free and each send a fetch_or: the failed ones per acquisition grow with N. Two
  // cores have at most one other contender.
  const double two = sim_ttas_failed_rmws_per_acquisition(small_machine(2, 1, SimPlacement::kSpread), 2, 200);
  const double eight = sim_ttas_failed_rmws_per_acquisition(small_machine(8, 2, SimPlacement::kSpread), 8, 200);
  const double thirty_two = sim_ttas_failed_rmws_per_acquisition(small_machine(32, 2, SimPlacement::kSpread), 32, 100);
  INFO("failed fetch_or per acquisition: 2 cores " << two << ", 8 cores " << eight
                                                   << ", 32 cores " << thirty_two);
  CHECK(two <= 1.0);
  CHECK(eight > two);
  CHECK(thirty_two > eight);
  // Deterministic: the same machine gives the same figure.
  CHECK(sim_ttas_failed_rmws_per_acquisition(small_machine(8, 2, SimPlacement::kSpread), 8, 200) == eight);
}

TEST_CASE("sim: an RMW is ordered where its request reaches the line, first come, first served",
          "[sim]") {
  // spread on 4 cores, 2 sockets: the owner on core 0 and the incrementer on core 1 (socket 0),
  // the reader on core 2 (socket 1). The reader's load is issued at cs + 1000 and reaches the
  // line half a cross-socket transfer later; the incrementer's fetch_add reaches it half a
  // same-socket transfer after its issue. Issued 30 ns after the load, it arrives 2 ns after it
  // (the load is served first and does not see it, though the RMW was issued first); issued
  // 20 ns after, it arrives 8 ns before (the load waits for it and sees it).
  SimConfig cfg = small_machine(4, 2, SimPlacement::kSpread);
  cfg.cross_socket_transfer_ns = 107;
  cfg.same_socket_transfer_ns = 50;
  const uint64_t cs = cfg.context_switch_ns;
  const uint64_t x = cfg.cross_socket_transfer_ns;
  const uint64_t same = cfg.same_socket_transfer_ns;
  const uint64_t issue = cs + 1000;
  const uint64_t load_reach = issue + x / 2;
  for (const bool rmw_first : {false, true}) {
    DYNAMIC_SECTION((rmw_first ? "the RMW's request arrives first" : "the load's request arrives first")) {
      auto w = std::make_unique<OwnLine<SP::Atomic<uint64_t>>>();
      const uint64_t rmw_at = issue + (rmw_first ? 20 : 30);
      const uint64_t rmw_reach = rmw_at + same / 2;
      REQUIRE((rmw_reach < load_reach) == rmw_first);
      uint64_t seen = 0, t_load = 0, t_rmw_done = 0;
      Simulation sim(cfg, 1);
      sim.spawn([&] { w->v.store(5); }, "owner");
      sim.spawn([&] {
        SP::work(1000);
        seen = w->v.load();
        t_load = SP::now_ns();
      }, "reader");
      sim.spawn([&] {
        SP::work(rmw_at - SP::now_ns());
        w->v.fetch_add(1);
        t_rmw_done = SP::now_ns();
      }, "incrementer");
      const SimOutcome out = sim.run();
      REQUIRE(out.finished());
      if (rmw_first) {
        // Served at once: the owner's copy is the farthest to invalidate (same socket).
        const uint64_t rmw_done = rmw_reach + (same - same / 2) + cfg.rmw_extra_ns;
        CHECK(t_rmw_done == rmw_done);
        CHECK(seen == 6);
        // The load reached the line while the RMW held it: served when it frees, a whole
        // transfer from the incrementer's core.
        CHECK(t_load == rmw_done + x);
        CHECK(out.counters.line_wait_ns == rmw_done - load_reach);
        // The owner's first store (memory), the RMW's invalidation of the owner's copy (same
        // socket) and the load from the incrementer (other socket): each counted once.
        CHECK(out.counters.memory_fetches == 1);
        CHECK(out.counters.socket_transfers == 1);
        CHECK(out.counters.cross_socket_transfers == 1);
      } else {
        CHECK(seen == 5);
        CHECK(t_load == issue + x);  // from the owner, as if nothing else happened
        // Then the reader's copy, on the other socket, is the farthest to invalidate.
        CHECK(t_rmw_done == rmw_reach + (x - x / 2) + cfg.rmw_extra_ns);
        CHECK(out.counters.line_wait_ns == 0);
        CHECK(out.counters.memory_fetches == 1);
        CHECK(out.counters.socket_transfers == 0);
        CHECK(out.counters.cross_socket_transfers == 2);  // the load, then the invalidation
      }
    }
  }
}

TEST_CASE("sim: a plain store goes through the store buffer; a fence drains it", "[sim]") {
  // Compact on 4 cores, 2 sockets: fibers on cores 0 and 1 (socket 0) and 2 (socket 1).
  const SimConfig cfg = small_machine(4, 2, SimPlacement::kCompact);
  const uint64_t cs = cfg.context_switch_ns;
  const uint64_t same = cfg.same_socket_transfer_ns;
  const uint64_t cross = cfg.cross_socket_transfer_ns;
  auto x = std::make_unique<OwnLine<SP::Atomic<uint64_t>>>();
  auto y = std::make_unique<OwnLine<SP::Shared<uint64_t>>>();
  auto z = std::make_unique<OwnLine<SP::Atomic<uint64_t>>>();
  uint64_t t_store = 0, t_store2 = 0, t_fence = 0, t_read = 0, seen = 0;
  // The line of x is owned by core 0 when core 1 stores to it at cs + 1000: the invalidation
  // takes a same-socket transfer; core 2 reads it at cs + 1010. A buffered store takes effect at
  // once and keeps the line busy until it completes: the reader, on the other socket, waits for
  // it, then fetches the line from the storer.
  uint64_t read_done = cs + 1000 + same + cross;
  auto run = [&](auto&& storer_body) {
    Simulation sim(cfg, 1);
    sim.spawn([&] { x->v.store(1); }, "owner");  // seq_cst, from memory: done at cs + memory
    sim.spawn([&] {
      SP::work(1000);
      storer_body();
    }, "storer");
    sim.spawn([&] {
      SP::work(1010);
      seen = x->v.load();
      t_read = SP::now_ns();
    }, "reader");
    REQUIRE(sim.run().finished());
  };
  SECTION("a release store costs the storer a hit; the fence pays the rest") {
    run([&] {
      x->v.store(2, std::memory_order_release);
      t_store = SP::now_ns();
      SP::memory_barrier();
      t_fence = SP::now_ns();
    });
    CHECK(t_store == cs + 1000 + cfg.line_hit_ns);
    CHECK(t_fence == cs + 1000 + same + cfg.fence_ns);
  }
  SECTION("a seq_cst store pays the transfer on the spot; the fence then costs fence_ns") {
    run([&] {
      x->v.store(2);
      t_store = SP::now_ns();
      SP::memory_barrier();
      t_fence = SP::now_ns();
    });
    CHECK(t_store == cs + 1000 + same);
    CHECK(t_fence == t_store + cfg.fence_ns);
    // The seq_cst store is ordered when its request reaches the line (cs + 1000 + same / 2),
    // before the reader's (cs + 1010 + cross / 2), which therefore finds the store done.
    read_done = cs + 1010 + cross;
  }
  SECTION("buffered stores complete in program order; an RMW drains them") {
    run([&] {
      x->v.store(2, std::memory_order_release);  // done at cs + 1000 + same
      y->v.set(3);                                 // a plain store too: from memory
      t_store2 = SP::now_ns();
      z->v.fetch_add(1);  // a fence: waits for both, then its own miss from memory
      t_fence = SP::now_ns();
    });
    CHECK(t_store2 == cs + 1000 + 2 * cfg.line_hit_ns);
    const uint64_t drained = std::max(cs + 1000 + same, cs + 1001 + cfg.memory_ns);
    CHECK(t_fence == drained + cfg.memory_ns + cfg.rmw_extra_ns);
  }
  CHECK(seen == 2);
  CHECK(t_read == read_done);
}

TEST_CASE("sim: S_UNLOCK is a plain store: the releaser does not wait for a spinner's copy",
          "[sim][locks]") {
  const SimConfig cfg = small_machine(4, 1, SimPlacement::kCompact);
  const uint64_t cs = cfg.context_switch_ns;
  struct alignas(64) Line {
    SpinLock<SP> v{kT};
  };
  auto lock = std::make_unique<Line>();
  uint64_t before = 0, after = 0;
  ProcTable<SP> procs(2, 1);
  Simulation sim(cfg, 1);
  sim.spawn([&] {
    lock->v.acquire(procs[0]);
    SP::work(1000);  // meanwhile the other core reads the word: a shared copy
    before = SP::now_ns();
    lock->v.release();
    after = SP::now_ns();
  }, "holder");
  sim.spawn([&] {
    SP::work(500);
    (void)lock->v.is_locked();
  }, "looker");
  REQUIRE(sim.run().finished());
  CHECK(before == cs + cfg.memory_ns + cfg.rmw_extra_ns + 1000);
#ifdef NDEBUG
  constexpr uint64_t kLoads = 0;
#else
  constexpr uint64_t kLoads = 1;  // release()'s S2 debug check loads the word (a hit)
#endif
  // The store costs a hit, not a same_socket_transfer_ns (the invalidation of the looker's copy).
  CHECK(after == before + (kLoads + 1) * cfg.line_hit_ns);
}

TEST_CASE("sim: a cross-socket ping-pong is slower than a same-socket one, exactly", "[sim]") {
  constexpr uint64_t kRounds = 1000;
  auto ping_pong = [](SimPlacement placement) {
    const SimConfig cfg = small_machine(4, 2, placement);
    auto flag = std::make_unique<OwnLine<SP::Atomic<uint64_t>>>();
    Simulation sim(cfg, 1);
    sim.spawn([&] {
      for (uint64_t i = 0; i < kRounds; ++i) {
        flag->v.store(2 * i + 1);
        flag->v.wait_while_eq(2 * i + 1);
      }
    }, "ping");
    sim.spawn([&] {
      SP::work(1000);  // after ping's first store: no request of the two overlaps
      for (uint64_t i = 0; i < kRounds; ++i) {
        while (flag->v.load() != 2 * i + 1) SP::spin_delay();
        flag->v.store(2 * i + 2);
      }
    }, "pong");
    const SimOutcome out = sim.run();
    REQUIRE(out.finished());
    return out;
  };
  const SimOutcome same = ping_pong(SimPlacement::kCompact);
  const SimOutcome cross = ping_pong(SimPlacement::kSpread);
  const SimConfig cfg;
  CHECK(same.counters.cross_socket_transfers == 0);
  CHECK(cross.counters.socket_transfers == 0);
  CHECK(cross.counters.cross_socket_transfers == same.counters.socket_transfers);
  // Each round trip moves the line four times (store, remote load, store, remote load); all else
  // is equal, so the difference is exact.
  CHECK(same.counters.socket_transfers == 4 * kRounds - 1);
  CHECK(cross.now_ns - same.now_ns ==
        (4 * kRounds - 1) * (cfg.cross_socket_transfer_ns - cfg.same_socket_transfer_ns));
  CHECK(cross.now_ns > same.now_ns);
}

TEST_CASE("sim: SpinLock mutual exclusion, 64 fibers on 8 cores", "[sim][locks]") {
  constexpr int kFibers = 64, kIters = 200;
  SimConfig cfg;
  cfg.cores = 8;
  cfg.sockets = 2;
  cfg.time_slice_ns = 200000;  // 0.2 ms: plenty of preemption inside this short run
  ProcTable<SP> procs(kFibers, 3);
  SpinLock<SP> lock(kT);
  auto counter = std::make_unique<OwnLine<SP::Shared<uint64_t>>>();
  int inside = 0, overlaps = 0;
  Simulation sim(cfg, 3);
  for (int i = 0; i < kFibers; ++i) {
    sim.spawn([&, i] {
      Proc<SP>& me = procs[i];
      for (int k = 0; k < kIters; ++k) {
        lock.acquire(me);
        if (++inside != 1) ++overlaps;
        const uint64_t v = counter->v.get();
        SP::work(100);
        counter->v.set(v + 1);
        --inside;
        lock.release();
        SP::work(500 + me.next_random() % 1000);
      }
    }, "client " + std::to_string(i));
  }
  const SimOutcome out = sim.run();
  INFO(out.message());
  REQUIRE(out.finished());
  CHECK(overlaps == 0);
  CHECK(counter->v.get() == uint64_t{kFibers} * kIters);
  const LockStats st = procs.total_stats().locks[static_cast<size_t>(kT)];
  CHECK(st.acquisitions == uint64_t{kFibers} * kIters);
  CHECK(st.contended > 0);
  CHECK(st.spins > 0);
  CHECK(out.counters.preemptions > 0);  // 64 clients on 8 CPUs time-slice
  CHECK(out.counters.spin_parks > 0);   // spinners parked instead of being simulated per spin
}

TEST_CASE("sim: LWLock shared/exclusive exclusion, 64 fibers on 8 cores", "[sim][locks]") {
  constexpr int kFibers = 64, kIters = 100;
  SimConfig cfg;
  cfg.cores = 8;
  cfg.sockets = 2;
  cfg.time_slice_ns = 200000;
  ProcTable<SP> procs(kFibers, 4);
  LWLock<SP> lock(&procs, kT);
  auto counter = std::make_unique<OwnLine<SP::Shared<uint64_t>>>();
  int excl = 0, shared = 0, violations = 0;
  uint64_t shared_acq = 0;
  Simulation sim(cfg, 4);
  for (int i = 0; i < kFibers; ++i) {
    sim.spawn([&, i] {
      Proc<SP>& me = procs[i];
      for (int k = 0; k < kIters; ++k) {
        if ((i + k) % 4 == 0) {
          lock.acquire(me, kLwShared);
          ++shared_acq;
          if (excl != 0) ++violations;
          ++shared;
          (void)counter->v.get();
          SP::work(200);
          if (excl != 0) ++violations;
          --shared;
          lock.release(me);
        } else {
          lock.acquire(me, kLwExclusive);
          if (excl != 0 || shared != 0) ++violations;
          ++excl;
          const uint64_t v = counter->v.get();
          SP::work(100);
          counter->v.set(v + 1);
          --excl;
          lock.release(me);
        }
        SP::work(300 + me.next_random() % 600);
      }
    }, "client " + std::to_string(i));
  }
  const SimOutcome out = sim.run();
  INFO(out.message());
  REQUIRE(out.finished());
  CHECK(violations == 0);
  CHECK(counter->v.get() == uint64_t{kFibers} * kIters - shared_acq);
  const LockStats st = procs.total_stats().locks[static_cast<size_t>(kT)];
  CHECK(st.acquisitions == uint64_t{kFibers} * kIters);
  CHECK(st.sleeps > 0);  // waiters slept on their semaphores
  CHECK(out.counters.semaphore_sleeps > 0);
  CHECK(out.counters.semaphore_wakes > 0);
  CHECK(lock.is_free());
}

TEST_CASE("sim: LWLock variable protocol (wait_for_var / update_var) in all three forms",
          "[sim][locks]") {
  for (VarProtocol form : {VarProtocol::kWaitList, VarProtocol::kAtomic, VarProtocol::kAtomicFastPath}) {
    DYNAMIC_SECTION("form " << var_protocol_name(form)) {
      constexpr int kHolders = 8, kWaiters = 56, kRounds = 40, kUpdates = 10;
      SimConfig cfg;
      cfg.cores = 8;
      cfg.sockets = 2;
      cfg.time_slice_ns = 200000;
      ProcTable<SP> procs(kHolders + kWaiters, 5);
      // One lock per holder pair, like insertion locks; waiters go over all of them.
      constexpr int kLocks = 4;
      std::vector<std::unique_ptr<LWLock<SP>>> locks;
      std::vector<std::unique_ptr<LockVar<SP>>> vars;
      for (int l = 0; l < kLocks; ++l) {
        locks.push_back(std::make_unique<LWLock<SP>>(&procs, kT));
        vars.push_back(std::make_unique<LockVar<SP>>());
      }
      uint64_t next_round = 0;  // plain: fibers never run in parallel
      int holders_left = kHolders;
      int bad_equal = 0, bad_order = 0, bad_final = 0;
      uint64_t advances = 0, frees = 0;
      Simulation sim(cfg, 5);
      for (int h = 0; h < kHolders; ++h) {
        sim.spawn([&, h] {
          Proc<SP>& me = procs[h];
          LWLock<SP>& lock = *locks[static_cast<size_t>(h % kLocks)];
          LockVar<SP>& var = *vars[static_cast<size_t>(h % kLocks)];
          for (int r = 0; r < kRounds; ++r) {
            lock.acquire(me, kLwExclusive);
            const uint64_t base = ++next_round << 20;  // every value larger than all earlier ones
            for (uint64_t s = 1; s <= kUpdates; ++s) {
              lock.update_var(me, form, var, base | s);
              SP::work(500);
            }
            lock.release_clear_var(me, form, var, 0);
            SP::work(1000 + me.next_random() % 2000);
          }
          --holders_left;
        }, "holder " + std::to_string(h));
      }
      for (int w = 0; w < kWaiters; ++w) {
        sim.spawn([&, w] {
          Proc<SP>& me = procs[kHolders + w];
          std::vector<uint64_t> last_nonzero(kLocks, 0);
          while (holders_left > 0) {
            const size_t l = me.next_random() % kLocks;
            uint64_t old = 0;
            for (int step = 0; step < 3 && holders_left > 0; ++step) {
              uint64_t nv = old;
              if (locks[l]->wait_for_var(me, form, *vars[l], old, &nv)) {
                ++frees;
                break;
              }
              if (nv == old) ++bad_equal;  // I13
              if (nv != 0) {
                if (nv < last_nonzero[l]) ++bad_order;
                last_nonzero[l] = nv;
              }
              ++advances;
              old = nv;
            }
            SP::work(200);
          }
          for (size_t l = 0; l < kLocks; ++l) {
            uint64_t nv = 0;
            if (!locks[l]->wait_for_var(me, form, *vars[l], 12345, &nv)) ++bad_final;
          }
        }, "waiter " + std::to_string(w));
      }
      const SimOutcome out = sim.run();
      INFO(out.message());
      REQUIRE(out.finished());
      CHECK(bad_equal == 0);
      CHECK(bad_order == 0);
      CHECK(bad_final == 0);
      CHECK(advances > 1000);
      CHECK(frees > 0);
      CHECK(next_round == uint64_t{kHolders} * kRounds);
      LockStats waiters;
      for (int w = 0; w < kWaiters; ++w) waiters.add(procs[kHolders + w].stats.of(kT));
      CHECK(waiters.sleeps > 0);  // waiters slept in wait_for_var and were woken by update_var
      for (int l = 0; l < kLocks; ++l) {
        CHECK(locks[static_cast<size_t>(l)]->is_free());
        CHECK(vars[static_cast<size_t>(l)]->owner_read(form) == 0);
      }
    }
  }
}

namespace {
// A contended mix (LWLock with semaphore sleeps, a spinlock, preemption) whose outcome depends on
// every scheduling decision. Returns everything a run can be compared on.
struct RunDigest {
  SimCounters counters;
  std::vector<uint64_t> clocks;
  uint64_t end = 0;
  uint64_t total = 0;
  bool operator==(const RunDigest&) const = default;
};

RunDigest contended_run(uint64_t seed) {
  constexpr int kFibers = 32, kIters = 60;
  SimConfig cfg;
  cfg.cores = 8;
  cfg.sockets = 2;
  cfg.time_slice_ns = 100000;
  ProcTable<SP> procs(kFibers, seed);
  // Aligned, so that which objects share a line does not depend on where the caller's stack
  // frame happens to be (sim.h, DETERMINISM RULES): like PostgreSQL's padded LWLocks.
  struct alignas(64) Locks {
    explicit Locks(ProcTable<SP>* p) : lw(p, kT) {}
    alignas(64) LWLock<SP> lw;
    alignas(64) SpinLock<SP> spin{WaitEvent::kInfoSpin};
  };
  auto locks = std::make_unique<Locks>(&procs);
  LWLock<SP>& lw = locks->lw;
  SpinLock<SP>& spin = locks->spin;
  auto counter = std::make_unique<OwnLine<SP::Shared<uint64_t>>>();
  Simulation sim(cfg, seed);
  for (int i = 0; i < kFibers; ++i) {
    sim.spawn([&, i] {
      Proc<SP>& me = procs[i];
      for (int k = 0; k < kIters; ++k) {
        lw.acquire(me, kLwExclusive);
        spin.acquire(me);
        counter->v.set(counter->v.get() + 1);
        spin.release();
        SP::work(300);
        lw.release(me);
        SP::work(200 + me.next_random() % 800);
      }
    }, "client " + std::to_string(i));
  }
  const SimOutcome out = sim.run();
  RunDigest d;
  d.counters = out.counters;
  d.end = out.now_ns;
  d.total = counter->v.get();
  for (size_t i = 0; i < sim.num_fibers(); ++i) d.clocks.push_back(sim.fiber_clock(i));
  return d;
}
}  // namespace

// LINE STATISTICS (sim.h; `walbench run --top-lines`): every wait is charged to its line, the
// lock's line is named by the lock, and keeping the statistics changes no virtual time.
TEST_CASE("sim: line statistics charge each wait to its line and name the lock's line", "[sim]") {
  constexpr int kFibers = 16, kIters = 50;
  line_names::enable();  // process-wide; other tests' locks register too, harmlessly
  struct Run {
    SimOutcome out;
    std::vector<Simulation::LineReport> lines;
    uintptr_t lock_line = 0, counter_line = 0;
    nlohmann::json top;
  };
  auto run = [&](bool keep) {
    return on_fresh_thread([&] {
      Run r;
      SimConfig cfg = small_machine(4, 1, SimPlacement::kSpread);
      ProcTable<SP> procs(kFibers, 4);
      struct alignas(64) LockLine {
        explicit LockLine(ProcTable<SP>* p) : v(p, kT) {}
        LWLock<SP> v;
      };
      auto lock = std::make_unique<LockLine>(&procs);
      auto counter = std::make_unique<OwnLine<SP::Shared<uint64_t>>>();
      r.lock_line = reinterpret_cast<uintptr_t>(&lock->v) & ~uintptr_t{63};
      r.counter_line = reinterpret_cast<uintptr_t>(&counter->v) & ~uintptr_t{63};
      Simulation sim(cfg, 7);
      if (keep) sim.keep_line_stats();
      for (int i = 0; i < kFibers; ++i)
        sim.spawn([&, i] {
          Proc<SP>& me = procs[i];
          for (int k = 0; k < kIters; ++k) {
            lock->v.acquire(me, kLwExclusive);
            counter->v.set(counter->v.get() + 1);
            SP::work(100);
            lock->v.release(me);
            SP::work(200 + me.next_random() % 400);
          }
        }, "client " + std::to_string(i));
      r.out = sim.run();
      r.lines = sim.line_stats();
      r.top = Simulation::top_lines_json({}, r.lines, 1000, kFibers * kIters);
      return r;
    });
  };
  const Run with = run(true);
  const Run without = run(false);
  REQUIRE(with.out.finished());
  REQUIRE(without.out.finished());
  // The same run either way.
  CHECK(with.out.now_ns == without.out.now_ns);
  CHECK(with.out.counters.to_json() == without.out.counters.to_json());
  CHECK(without.lines.empty());
  // Every wait lands on one line: the shares add up to the counter.
  uint64_t waited = 0;
  const Simulation::LineStats* lock_stats = nullptr;
  const Simulation::LineStats* counter_stats = nullptr;
  for (const auto& l : with.lines) {
    waited += l.stats.wait_ns;
    if (l.address == with.lock_line) lock_stats = &l.stats;
    if (l.address == with.counter_line) counter_stats = &l.stats;
  }
  CHECK(waited == with.out.counters.line_wait_ns);
  CHECK(waited > 0);
  REQUIRE(lock_stats != nullptr);
  REQUIRE(counter_stats != nullptr);
  // Each acquisition is at least a CAS and each release a fetch_sub on the lock's line; the
  // counter is read and written once an iteration under the lock, never RMW'd.
  CHECK(lock_stats->rmws >= uint64_t{2} * kFibers * kIters);
  CHECK(counter_stats->rmws == 0);
  CHECK(counter_stats->loads == uint64_t{kFibers} * kIters);
  CHECK(counter_stats->stores == uint64_t{kFibers} * kIters);
  CHECK(counter_stats->load_misses <= counter_stats->loads);
  // The hottest line is the lock's, named by it; its wait per transaction is its wait / 800.
  REQUIRE(with.top.size() == with.lines.size());
  CHECK(with.top[0]["names"] == "LWLock:Test");
  CHECK(with.top[0]["wait_ms"].get<double>() == static_cast<double>(lock_stats->wait_ns) / 1e6);
  CHECK(with.top[0]["wait_us_per_txn"].get<double>() ==
        Approx(static_cast<double>(lock_stats->wait_ns) / 1e3 / (kFibers * kIters)));
  CHECK(with.top[0]["rmws"] == lock_stats->rmws);
  char counter_hex[32];
  std::snprintf(counter_hex, sizeof counter_hex, "0x%lx", static_cast<unsigned long>(with.counter_line));
  const auto counter_entry = std::find_if(with.top.begin(), with.top.end(),
                                          [&](const nlohmann::json& l) { return l["line"] == counter_hex; });
  REQUIRE(counter_entry != with.top.end());
  CHECK((*counter_entry)["names"].is_null());  // nothing registered on the counter's line
  // Two snapshots of one run: the window's counts are their difference.
  CHECK(Simulation::top_lines_json(with.lines, with.lines, 5, 1).empty());
}

TEST_CASE("sim: same seed, same numbers; another seed, other numbers", "[sim]") {
  const RunDigest a = on_fresh_thread([] { return contended_run(42); });
  const RunDigest b = on_fresh_thread([] { return contended_run(42); });
  const RunDigest c = on_fresh_thread([] { return contended_run(43); });
  CHECK(a.total == 32 * 60);
  CHECK(a == b);
  CHECK(a.counters.shared_ops == b.counters.shared_ops);
  CHECK(a.end == b.end);
  CHECK(c.total == 32 * 60);
  CHECK_FALSE(a == c);
  // Independent simulations on concurrent OS threads give the same numbers as alone.
  RunDigest p, q;
  std::thread t1([&] { p = contended_run(42); });
  std::thread t2([&] { q = contended_run(43); });
  t1.join();
  t2.join();
  CHECK(p == a);
  CHECK(q == c);
}

TEST_CASE("sim: parking a spinner changes nothing the lock code can see", "[sim]") {
  // A holder keeps a spinlock for 300 us; the waiter spins, sleeps (s_lock backoff) and spins
  // again. With spinners parked and replayed the waiter must count the same spins and sleeps,
  // at the same virtual times, as with every spin simulated.
  auto run = [](uint32_t park_after) {
    SimConfig cfg = small_machine(4, 1, SimPlacement::kCompact);
    cfg.spin_park_after = park_after;
    ProcTable<SP> procs(2, 9);
    SpinLock<SP> lock(kT, SpinDelayParams{.ns_per_us = 100, .num_delays = kNumDelays});
    uint64_t got_at = 0;
    Simulation sim(cfg, 9);
    sim.spawn([&] {
      lock.acquire(procs[0]);
      SP::work(300000);
      lock.release();
    }, "holder");
    sim.spawn([&] {
      SP::work(1000);
      lock.acquire(procs[1]);
      got_at = SP::now_ns();
      lock.release();
    }, "waiter");
    const SimOutcome out = sim.run();
    REQUIRE(out.finished());
    struct R {
      LockStats st;
      uint64_t got_at;
      SimCounters c;
    };
    return R{procs[1].stats.of(kT), got_at, out.counters};
  };
  const auto simulated = on_fresh_thread([&] { return run(0); });
  const auto parked = on_fresh_thread([&] { return run(2); });
  CHECK(simulated.c.spin_parks == 0);
  CHECK(parked.c.spin_parks > 0);
  CHECK(parked.c.replayed_loads > 0);
  CHECK(simulated.st.sleeps > 0);
  CHECK(parked.st.spins == simulated.st.spins);
  CHECK(parked.st.sleeps == simulated.st.sleeps);
  CHECK(parked.st.wait_ns == simulated.st.wait_ns);
  CHECK(parked.got_at == simulated.got_at);
}

TEST_CASE("sim: deadlock is reported with every blocked fiber's wait", "[sim]") {
  SimConfig cfg = small_machine(4, 1, SimPlacement::kCompact);
  auto sems = std::make_unique<SP::Semaphore[]>(2);
  Simulation sim(cfg, 1);
  sim.spawn([&] { sems[0].wait(); }, "waits on A");
  sim.spawn([&] { sems[1].wait(); }, "waits on B");
  sim.spawn([&] { SP::work(10); }, "finishes");
  sim.set_describe_wait([](size_t fiber) { return "published wait " + std::to_string(fiber); });
  const SimOutcome out = sim.run(1000000000);
  INFO(out.message());
  CHECK(out.status == SimStatus::kDeadlock);
  REQUIRE(out.unfinished.size() == 2);
  CHECK(out.unfinished[0].name == "waits on A");
  CHECK(out.unfinished[1].name == "waits on B");
  CHECK(out.unfinished[0].state.find("blocked on a semaphore") != std::string::npos);
  CHECK(out.unfinished[1].wait == "published wait 1");
  const std::string msg = out.message();
  CHECK(msg.find("deadlock") != std::string::npos);
  CHECK(msg.find("waits on B") != std::string::npos);
  CHECK(msg.find("published wait 0") != std::string::npos);
  // The blocked fibers are unwound when the simulation goes away (checked under ASan/valgrind).
}

TEST_CASE("sim: more clients than cores time-slice", "[sim]") {
  auto run = [](uint32_t clients, uint32_t cores) {
    SimConfig cfg = small_machine(cores, 1, SimPlacement::kCompact);
    cfg.time_slice_ns = 500000;
    std::vector<uint64_t> first_run(clients, 0), finished(clients, 0);
    Simulation sim(cfg, 1);
    for (uint32_t i = 0; i < clients; ++i) {
      sim.spawn([&, i] {
        first_run[i] = SP::now_ns();
        for (int k = 0; k < 20; ++k) SP::work(100000);  // 2 ms of CPU
        finished[i] = SP::now_ns();
      }, "cpu hog " + std::to_string(i));
    }
    const SimOutcome out = sim.run();
    REQUIRE(out.finished());
    struct R {
      SimOutcome out;
      std::vector<uint64_t> first_run, finished;
    };
    return R{out, first_run, finished};
  };
  using V = std::vector<uint64_t>;
  // One client per CPU: dispatched at 0 (context switch 1200 ns), 2 ms of work, never preempted.
  const auto alone = run(2, 2);
  CHECK(alone.out.counters.preemptions == 0);
  CHECK(alone.out.counters.dispatches == 2);
  CHECK(alone.first_run == V{1200, 1200});
  CHECK(alone.finished == V{2001200, 2001200});
  CHECK(alone.out.now_ns == 2001200);
  // Two clients per CPU, 0.5 ms slices: each CPU alternates its two clients, every slice
  // starting with a 1200 ns dispatch: clients 0/1 run [1200, 501200], 2/3 [502400, 1002400],
  // 0/1 [1003600, 1503600], ... Each slice's fifth work(100 us) ends exactly at the slice end, so
  // the client is preempted in that very operation: 8 preemptions per CPU, the last slice of
  // clients 0/1 included (2/3 are waiting), though it was their last work. 2/3's last slice
  // ends at 8 x 501200 = 4009600 and is preempted too (0/1 are waiting to return); 0/1 get a 9th
  // dispatch just to return (4010800), then 2/3 a 10th (4012000).
  const auto shared = run(4, 2);
  CHECK(shared.out.counters.dispatches == 20);
  CHECK(shared.out.counters.preemptions == 16);
  CHECK(shared.first_run == V{1200, 1200, 502400, 502400});
  CHECK(shared.finished == V{4010800, 4010800, 4012000, 4012000});
  CHECK(shared.out.now_ns == 4012000);
}

TEST_CASE("sim: wakeup_preemption: a wake-up with no free CPU preempts the thread on the "
          "wakee's last CPU", "[sim]") {
  // One CPU. W waits on a semaphore; R then runs, posts it after 1 us of work and works 10 more
  // us in 1 us steps. With wakeup_preemption 0 W waits in the run queue until R is done; with 1
  // the wake-up cuts R's slice: R leaves after its current step, W runs, then R finishes.
  auto run = [](uint32_t preempt) {
    SimConfig cfg = small_machine(1, 1, SimPlacement::kCompact);
    cfg.wakeup_preemption = preempt;
    Simulation sim(cfg, 1);
    SP::Semaphore sem;
    uint64_t w_woke = 0, r_posted = 0, r_done = 0;
    sim.spawn([&] {
      sem.wait();
      w_woke = SP::now_ns();
    }, "W");
    sim.spawn([&] {
      SP::work(1000);
      sem.post();
      r_posted = SP::now_ns();
      for (int k = 0; k < 10; ++k) SP::work(1000);
      r_done = SP::now_ns();
    }, "R");
    const SimOutcome out = sim.run();
    REQUIRE(out.finished());
    struct Out {
      SimCounters c;
      uint64_t w_woke, r_posted, r_done;
    };
    return Out{out.counters, w_woke, r_posted, r_done};
  };
  const auto queued = run(0);
  CHECK(queued.c.wakeup_preemptions == 0);
  CHECK(queued.c.preemptions == 0);
  CHECK(queued.w_woke == queued.r_done + small_machine(1, 1, SimPlacement::kCompact).context_switch_ns);
  const auto cut = run(1);
  CHECK(cut.c.wakeup_preemptions == 1);
  CHECK(cut.c.preemptions == 1);
  CHECK(cut.r_posted == queued.r_posted);  // the same run up to the post
  // The wake-up is handled when R next synchronises, at the end of the step it started after
  // the post; R leaves there, W is dispatched, and R comes back after W finished: its 10 us of
  // work end two context switches later than before.
  CHECK(cut.w_woke == cut.r_posted + 1000 + small_machine(1, 1, SimPlacement::kCompact).context_switch_ns);
  CHECK(cut.r_done == queued.r_done + 2 * small_machine(1, 1, SimPlacement::kCompact).context_switch_ns);
}

TEST_CASE("sim: wakeup_preemption 2: a wake-up preempts only when the wakee's vruntime is "
          "behind by more than the granularity", "[sim]") {
  // One CPU. W blocks on a semaphore at once (vruntime ~0). R works r1_us us; with a sleep,
  // it then sleeps (1 us plus the sleep slack, the CPU idle; it leaves the CPU and its
  // vruntime keeps the CPU time so far) and works r2_us more; then it posts W and works 10
  // more us. At the post R's vruntime is ~r1 + r2 us and the fair clock 2-3 us more (it runs
  // at 1/2 per ns while R waits behind W at the start, at 1 per ns while R runs alone, context
  // switches included, not at all while the CPU is idle). Granularity 5 us.
  auto run = [](uint64_t r1_us, bool sleep, uint64_t r2_us, uint64_t credit_ns) {
    SimConfig cfg = small_machine(1, 1, SimPlacement::kCompact);
    cfg.wakeup_preemption = 2;
    cfg.wakeup_granularity_ns = 5000;
    cfg.sleeper_credit_ns = credit_ns;
    Simulation sim(cfg, 1);
    SP::Semaphore sem;
    sim.spawn([&] { sem.wait(); }, "W");
    sim.spawn([&] {
      SP::work(r1_us * 1000);
      if (sleep) SP::sleep_ns(1000);
      SP::work(r2_us * 1000);
      sem.post();
      for (int k = 0; k < 10; ++k) SP::work(1000);
    }, "R");
    const SimOutcome out = sim.run();
    REQUIRE(out.finished());
    return out.counters.wakeup_preemptions;
  };
  // R ran 2 us: ~2 us ahead of W, within the granularity: W waits in the run queue.
  CHECK(run(2, false, 0, 12000000) == 0);
  // R ran 8 us: ahead by more than 5 us: W preempts it (the 12 ms credit leaves W at 0).
  CHECK(run(8, false, 0, 12000000) == 1);
  // The same with a 2 us sleeper credit: W is raised to the fair clock - 2 us, within a
  // fraction of a us of R's vruntime, so W waits (place_entity: a sleep earns at most the
  // credit).
  CHECK(run(8, false, 0, 2000) == 0);
  // CPU time before R left the CPU counts: 3 us, a sleep, 3 us is 6 us ahead (preempts); 3 us,
  // a sleep, 1 us is 4 us (does not). Without release_cpu's accounting R would lead by ~3 us
  // in the first, within the granularity, and it would fail.
  CHECK(run(3, true, 3, 12000000) == 1);
  CHECK(run(3, true, 1, 12000000) == 0);
}

TEST_CASE("sim: a working set the core's caches lost is refilled when its code runs", "[sim]") {
  // Hogs time-sliced on one core (0.5 ms slices, 1 ms of work each in 100 us pieces, each piece
  // starting with touch_working_set, as a statement does). Working sets of 64 KiB = 1024 lines:
  // a refill costs 1024 x 25 ns / 24 = 1066 ns from the L3, 1024 x 90 / 24 = 3840 ns from
  // memory (memory_ns 90, cluster_cache_ns 25, 24 lines in flight).
  struct Out {
    SimCounters counters;
    std::vector<uint64_t> first_run, first_touched;
  };
  auto run = [](uint32_t hogs, uint64_t ws, uint64_t l2, uint64_t l3, bool touch = true) {
    SimConfig cfg = small_machine(1, 1, SimPlacement::kCompact);
    cfg.time_slice_ns = 500000;
    cfg.memory_ns = 90;
    cfg.cluster_cache_ns = 25;
    cfg.working_set_bytes = ws;
    cfg.core_cache_bytes = l2;
    cfg.cluster_cache_bytes = l3;
    Out o;
    o.first_run.assign(hogs, 0);
    o.first_touched.assign(hogs, 0);
    Simulation sim(cfg, 1);
    for (uint32_t i = 0; i < hogs; ++i) {
      sim.spawn([&o, i, touch] {
        o.first_run[i] = SP::now_ns();
        for (int k = 0; k < 10; ++k) {
          if (touch) SP::touch_working_set();
          if (k == 0) o.first_touched[i] = SP::now_ns();
          SP::work(100000);
        }
      }, "hog " + std::to_string(i));
    }
    const SimOutcome out = sim.run();
    REQUIRE(out.finished());
    o.counters = out.counters;
    return o;
  };
  constexpr uint64_t kSet = 64 * 1024;
  // Off (the default): nothing is charged.
  const Out off = run(3, 0, 2 * kSet, 3 * kSet);
  CHECK(off.counters.memory_refills + off.counters.cluster_cache_refills == 0);
  CHECK(off.counters.refill_ns == 0);
  CHECK(off.first_run[0] == 1200);
  CHECK(off.first_touched[0] == 1200);
  // On, but the code never touches its working set (a waiter that only re-checks a lock): no
  // refill is charged, however cold its dispatches.
  const Out untouched = run(3, kSet, kSet, kSet, false);
  CHECK(untouched.counters.memory_refills + untouched.counters.cluster_cache_refills == 0);
  CHECK(untouched.counters.refill_ns == 0);
  // Two hogs, an L2 that holds both: only the first dispatch of each is cold (from memory),
  // charged at the first touch, after the dispatch.
  const Out two = run(2, kSet, 2 * kSet, 3 * kSet);
  CHECK(two.counters.dispatches > 2);
  CHECK(two.counters.memory_refills == 2);
  CHECK(two.counters.cluster_cache_refills == 0);
  CHECK(two.first_run[0] == 1200);
  CHECK(two.first_touched[0] == 1200 + 3840);
  // Three hogs, the L2 holds two: each later dispatch finds its set evicted by the other two
  // and refills it from the L3, which holds all three. 9 dispatches: each hog's first (cold,
  // from memory), a second one (from the L3), and a third that only returns (the second slice
  // ended in its last work, preempted there): that one touches nothing, so its refill stays
  // due and is never charged.
  const Out three = run(3, kSet, 2 * kSet, 3 * kSet);
  CHECK(three.counters.dispatches == 9);
  CHECK(three.counters.memory_refills == 3);
  CHECK(three.counters.cluster_cache_refills == 3);
  CHECK(three.counters.refill_ns == 3 * 3840 + 3 * 1066);
  // The same with an L3 that holds two sets: every charged refill comes from memory.
  const Out cold = run(3, kSet, 2 * kSet, 2 * kSet);
  CHECK(cold.counters.dispatches == 9);
  CHECK(cold.counters.memory_refills == 6);
  CHECK(cold.counters.cluster_cache_refills == 0);
  CHECK(cold.counters.refill_ns == 6 * 3840);
  // An L2 that holds all three: only the first dispatches are cold.
  const Out warm = run(3, kSet, 3 * kSet, 3 * kSet);
  CHECK(warm.counters.memory_refills == 3);
  CHECK(warm.counters.cluster_cache_refills == 0);
}

TEST_CASE("sim: a thread that moves to another core refills from the shared L3", "[sim]") {
  // Two cores of one socket, three threads. A runs on core 0 and sleeps on a semaphore; C, from
  // the run queue, takes core 0 for 1 ms; B (core 1) posts A and finishes, so A wakes onto core
  // 1, where its set is not: the L3 still holds it (1066 ns at A's next touch), where a move
  // within an L2 would cost nothing and a move from memory 3840 ns.
  SimConfig cfg = small_machine(2, 1, SimPlacement::kCompact);
  cfg.memory_ns = 90;
  cfg.cluster_cache_ns = 25;
  cfg.working_set_bytes = 64 * 1024;
  cfg.core_cache_bytes = 2 * 64 * 1024;
  cfg.cluster_cache_bytes = 4 * 64 * 1024;
  auto sem = std::make_unique<SP::Semaphore>();
  uint64_t before = 0, after = 0;
  Simulation sim(cfg, 1);
  sim.spawn([&] {
    SP::touch_working_set();
    SP::work(10000);
    sem->wait();
    before = SP::now_ns();
    SP::touch_working_set();
    after = SP::now_ns();
  }, "A");
  sim.spawn([&] {
    SP::touch_working_set();
    SP::work(20000);
    sem->post();
  }, "B");
  sim.spawn([&] {
    SP::touch_working_set();
    SP::work(1000000);
  }, "C");
  const SimOutcome out = sim.run();
  REQUIRE(out.finished());
  CHECK(out.counters.memory_refills == 3);  // each thread's first dispatch
  CHECK(out.counters.cluster_cache_refills == 1);
  CHECK(after - before == 1066);
}

TEST_CASE("sim: a thread spawned without a working set neither refills nor evicts", "[sim]") {
  // One core whose L2 holds one working set. A touches its set, sleeps on a semaphore while D
  // (spawned with keeps_working_set false) runs and posts it, and touches it again: D's
  // dispatch took no place in the L2, so A's second touch costs nothing; D itself never refills.
  // With D an ordinary thread, D's dispatch evicts A's set and both pay refills.
  auto run = [](bool d_keeps_working_set) {
    SimConfig cfg = small_machine(1, 1, SimPlacement::kCompact);
    cfg.memory_ns = 90;
    cfg.cluster_cache_ns = 25;
    cfg.working_set_bytes = 64 * 1024;
    cfg.core_cache_bytes = 64 * 1024;
    cfg.cluster_cache_bytes = 64 * 1024;
    auto sem = std::make_unique<SP::Semaphore>();
    Simulation sim(cfg, 1);
    sim.spawn([&] {
      SP::touch_working_set();
      SP::work(10000);
      sem->wait();
      SP::touch_working_set();
      SP::work(10000);
    }, "A");
    sim.spawn([&] {
      SP::touch_working_set();
      SP::work(20000);
      sem->post();
    }, "D", d_keeps_working_set);
    const SimOutcome out = sim.run();
    REQUIRE(out.finished());
    return out.counters;
  };
  const SimCounters light = run(false), heavy = run(true);
  CHECK(light.memory_refills + light.cluster_cache_refills == 1);  // A's first dispatch only
  CHECK(heavy.memory_refills + heavy.cluster_cache_refills == 3);  // A twice, D once
  CHECK(light.refill_ns < heavy.refill_ns);
}

TEST_CASE("sim: an SMT sibling's dispatches do not evict the running thread's working set",
          "[sim]") {
  // One core, two hardware threads, an L2 of two working sets. A runs on one hardware thread
  // while B and C take turns on the other (each sleeps between its pieces of work, so each
  // piece is a new dispatch). A stays the most recent at each of their dispatches, so when A
  // sleeps and comes back its set is still there: no refill; B and C evict each other.
  SimConfig cfg = small_machine(1, 1, SimPlacement::kCompact);
  cfg.smt = 2;
  cfg.memory_ns = 90;
  cfg.cluster_cache_ns = 25;
  cfg.working_set_bytes = 64 * 1024;
  cfg.core_cache_bytes = 2 * 64 * 1024;
  cfg.cluster_cache_bytes = 8 * 64 * 1024;
  uint64_t before = 0, after = 0;
  Simulation sim(cfg, 1);
  sim.spawn([&] {
    SP::touch_working_set();
    SP::work(200000);
    SP::sleep_ns(1000);
    before = SP::now_ns();
    SP::touch_working_set();
    after = SP::now_ns();
  }, "A");
  for (const char* name : {"B", "C"}) {
    sim.spawn([] {
      for (int k = 0; k < 4; ++k) {
        SP::touch_working_set();
        SP::work(10000);
        SP::sleep_ns(1000);
      }
    }, name);
  }
  const SimOutcome out = sim.run();
  REQUIRE(out.finished());
  CHECK(after == before);  // A's set survived B's and C's dispatches
  CHECK(out.counters.memory_refills == 3);  // each thread's first dispatch
  CHECK(out.counters.cluster_cache_refills > 0);  // B and C evict each other
}

TEST_CASE("sim: stop flag at a virtual instant, time limit, continue, unwind", "[sim]") {
  SimConfig cfg = small_machine(2, 1, SimPlacement::kCompact);
  int unwound = 0;
  struct Guard {
    int* n;
    ~Guard() { ++*n; }
  };
  {
    bool stop = false;
    uint64_t loops = 0, stopped_at = 0;
    auto sem = std::make_unique<SP::Semaphore>();
    Simulation sim(cfg, 1);
    sim.spawn([&] {
      while (!stop) {
        SP::work(1000);
        ++loops;
      }
      stopped_at = SP::now_ns();
    }, "loop");
    sim.spawn([&] {
      Guard g{&unwound};
      sem->wait();  // nobody posts: left blocked, unwound at the end
    }, "blocked");
    sim.request_stop_at(50000, [&] { stop = true; });
    SimOutcome out = sim.run(20000);
    CHECK(out.status == SimStatus::kTimeLimit);
    CHECK(out.now_ns == 20000);
    CHECK(out.unfinished.size() == 2);
    CHECK(stopped_at == 0);
    out = sim.run();  // continues
    CHECK(out.status == SimStatus::kDeadlock);
    REQUIRE(out.unfinished.size() == 1);
    CHECK(out.unfinished[0].name == "blocked");
    // The loop saw the flag at its first check at or after 50 us: 1200 + k * 1000 >= 50000.
    CHECK(stopped_at == 50200);
    CHECK(loops == 49);
    CHECK(unwound == 0);
  }
  CHECK(unwound == 1);  // the blocked fiber's stack was unwound by ~Simulation
}

TEST_CASE("sim: an exception in a fiber propagates out of run()", "[sim]") {
  Simulation sim(small_machine(2, 1, SimPlacement::kCompact), 1);
  sim.spawn([] {
    SP::work(10);
    throw std::runtime_error("boom in fiber");
  }, "thrower");
  sim.spawn([] {
    for (;;) SP::work(1000);
  }, "endless");
  CHECK_THROWS_WITH(sim.run(), "boom in fiber");
}

TEST_CASE("sim: semaphores hand over in FIFO order with wake latency", "[sim]") {
  SimConfig cfg = small_machine(4, 1, SimPlacement::kCompact);
  auto sem = std::make_unique<SP::Semaphore>();
  std::vector<int> order;
  uint64_t woke_at = 0;
  Simulation sim(cfg, 1);
  for (int i = 0; i < 3; ++i) {
    sim.spawn([&, i] {
      SP::work(static_cast<uint64_t>(i) * 10);  // queue in index order
      sem->wait();
      order.push_back(i);
      if (i == 0) woke_at = SP::now_ns();
    }, "waiter " + std::to_string(i));
  }
  uint64_t posted_at = 0;
  sim.spawn([&] {
    SP::work(100000);
    posted_at = SP::now_ns();
    for (int i = 0; i < 3; ++i) sem->post();
  }, "poster");
  REQUIRE(sim.run().finished());
  CHECK(order == std::vector<int>{0, 1, 2});
  // post (an RMW of the semaphore's line, which waiter 2 touched last), then wake + dispatch.
  CHECK(woke_at == posted_at + cfg.same_socket_transfer_ns + cfg.rmw_extra_ns +
                       cfg.semaphore_wake_ns + cfg.context_switch_ns);
}

TEST_CASE("sim: idle polling: a waiter whose CPU went idle less than idle_poll_ns ago wakes "
          "without semaphore_wake_ns, one idle for longer pays it", "[sim]") {
  // Two CPUs, two fibers: the waiter works 500 us and blocks (its CPU goes idle then), the
  // poster works `post_at` ns on the other CPU and posts. The post is an RMW of the
  // semaphore's line, which the waiter touched last (a transfer in the socket); then the
  // wake-up, if any, and the dispatch. Posting 50 us after the block polls only if the idle
  // time is counted from the block (not from the start, not never).
  auto wake_cost = [](uint64_t post_at, uint64_t idle_poll_ns) {
    SimConfig cfg = small_machine(2, 1, SimPlacement::kCompact);
    cfg.semaphore_wake_ns = 50000;
    cfg.idle_poll_ns = idle_poll_ns;
    auto sem = std::make_unique<SP::Semaphore>();
    uint64_t posted_at = 0, woke_at = 0;
    Simulation sim(cfg, 1);
    sim.spawn([&] {
      SP::work(500000);
      sem->wait();
      woke_at = SP::now_ns();
    }, "waiter");
    sim.spawn([&] {
      SP::work(post_at);
      posted_at = SP::now_ns();
      sem->post();
    }, "poster");
    REQUIRE(sim.run().finished());
    return woke_at - posted_at - cfg.same_socket_transfer_ns - cfg.rmw_extra_ns -
           cfg.context_switch_ns;  // what the wake-up itself cost
  };
  CHECK(wake_cost(550000, 0) == 50000);        // no polling: every idle wake pays
  CHECK(wake_cost(550000, 200000) == 0);       // idle ~50 us of a 200 us poll: polled
  CHECK(wake_cost(900000, 200000) == 50000);   // idle ~400 us: halted, pays
  CHECK(wake_cost(550000, 40000) == 50000);    // idle ~50 us of a 40 us poll: halted, pays
}

TEST_CASE("sim: a post with no idle CPU queues the waiter at once, without the idle wake-up",
          "[sim]") {
  // One CPU: the poster holds it when it posts, so no CPU is idle to be woken (semaphore_wake_ns
  // prices the IPI and the exit from idle). The waiter joins the run queue at the post and runs
  // as soon as the poster gives the CPU up, here by sleeping 100 ns after the post.
  SimConfig cfg = small_machine(1, 1, SimPlacement::kCompact);
  cfg.semaphore_wake_ns = 50000;
  auto sem = std::make_unique<SP::Semaphore>();
  uint64_t posted_at = 0, slept_at = 0, woke_at = 0;
  Simulation sim(cfg, 1);
  sim.spawn([&] {
    sem->wait();
    woke_at = SP::now_ns();
  }, "waiter");
  sim.spawn([&] {
    SP::work(100000);
    posted_at = SP::now_ns();
    sem->post();
    SP::work(100);
    slept_at = SP::now_ns();
    SP::sleep_ns(1000000);
  }, "poster");
  REQUIRE(sim.run().finished());
  CHECK(woke_at < posted_at + cfg.semaphore_wake_ns);
  CHECK(woke_at == slept_at + cfg.context_switch_ns);
}

TEST_CASE("sim: posts in a row while one CPU is idle: one waiter takes the idle wake-up, the "
          "others queue at once and leave that CPU to it", "[sim]") {
  // Two CPUs: the poster holds one, the other is idle. The first post claims the idle CPU and
  // pays semaphore_wake_ns; the next two find it claimed, so they join the run queue at once and
  // run when the poster sleeps, and not on the claimed CPU before the first waiter arrives.
  SimConfig cfg = small_machine(2, 1, SimPlacement::kCompact);
  cfg.semaphore_wake_ns = 50000;
  std::vector<std::unique_ptr<SP::Semaphore>> sems;
  for (int i = 0; i < 3; ++i) sems.push_back(std::make_unique<SP::Semaphore>());
  uint64_t posted_at = 0, slept_at = 0, woke_at[3] = {0, 0, 0};
  Simulation sim(cfg, 1);
  for (int i = 0; i < 3; ++i)
    sim.spawn([&, i] {
      sems[static_cast<size_t>(i)]->wait();
      woke_at[i] = SP::now_ns();
    }, "waiter");
  sim.spawn([&] {
    SP::work(100000);
    posted_at = SP::now_ns();
    for (auto& sem : sems) sem->post();
    SP::work(100);
    slept_at = SP::now_ns();
    SP::sleep_ns(1000000);
  }, "poster");
  REQUIRE(sim.run().finished());
  CHECK(woke_at[0] >= posted_at + cfg.semaphore_wake_ns);
  CHECK(woke_at[1] == slept_at + cfg.context_switch_ns);
  CHECK(woke_at[2] > woke_at[1]);
  CHECK(woke_at[2] < posted_at + cfg.semaphore_wake_ns);
}

TEST_CASE("sim: a sleeper that wakes while the only free CPU is claimed by a posted waiter "
          "queues; the waiter gets that CPU", "[sim]") {
  // Two CPUs. The waiter and the sleeper block at once; the poster runs on one CPU and posts
  // at 100 us, claiming the other for the waiter, who arrives 50 us later. The sleeper's timer
  // ends at 110 us, inside the claim: it queues (Linux: that CPU has a wake-up pending) and runs
  // only when the waiter, done at once, frees the CPU.
  SimConfig cfg = small_machine(2, 1, SimPlacement::kCompact);
  cfg.semaphore_wake_ns = 50000;
  cfg.sleep_slack_ns = 0;
  cfg.wake_jitter = 0;
  SP::Semaphore sem;
  uint64_t posted_at = 0, waiter_at = 0, sleeper_at = 0;
  Simulation sim(cfg, 1);
  sim.spawn([&] {
    sem.wait();
    waiter_at = SP::now_ns();
  }, "waiter");
  sim.spawn([&] {
    SP::sleep_ns(110000);
    sleeper_at = SP::now_ns();
  }, "sleeper");
  sim.spawn([&] {
    SP::work(100000);
    posted_at = SP::now_ns();
    sem.post();
    SP::work(300000);
  }, "poster");
  REQUIRE(sim.run().finished());
  REQUIRE(posted_at >= 100000);
  CHECK(waiter_at >= posted_at + cfg.semaphore_wake_ns);
  CHECK(sleeper_at > waiter_at);
  CHECK(sleeper_at < posted_at + 300000);  // on the waiter's freed CPU, not the poster's
}

TEST_CASE("sim: config JSON round trip, presets, unknown keys", "[sim]") {
  const SimConfig d;
  const SimConfig back = SimConfig::from_json(d.to_json(), "cfg");
  CHECK(back.to_json() == d.to_json());
  const SimConfig m = SimConfig::from_json(nlohmann::json{{"kind", "sim"}, {"preset", "milan_2s"}, {"cores", 48}}, "p");
  CHECK(m.cores == 48);
  CHECK(m.cores_per_cluster == 8);
  CHECK(m.same_cluster_transfer_ns == 23);
  for (const std::string& name : SimConfig::preset_names()) CHECK_NOTHROW(SimConfig::preset(name).validate(name));
  CHECK_THROWS_WITH(SimConfig::from_json(nlohmann::json{{"cros_socket_transfer_ns", 1}}, "f.json: platform"),
                    Catch::Matchers::Contains("f.json: platform.cros_socket_transfer_ns: unknown key") &&
                        Catch::Matchers::Contains("did you mean 'cross_socket_transfer_ns'"));
  CHECK_THROWS_WITH(SimConfig::from_json(nlohmann::json{{"cores", 10}, {"sockets", 3}}, "x"),
                    Catch::Matchers::Contains("x.sockets"));
  CHECK_THROWS_WITH(SimConfig::from_json(nlohmann::json{{"cores", -1}}, "x"),
                    Catch::Matchers::Contains("non-negative integer"));
  CHECK_THROWS_WITH(SimConfig::from_json(nlohmann::json{{"placement", "random"}}, "x"),
                    Catch::Matchers::Contains("x.placement"));
  CHECK_THROWS(SimConfig::preset("epyc"));
  SimConfig s;
  s.set_storage("tmpfs");
  CHECK(s.fsync_ns == 0);
}

TEST_CASE("sim: storage model serializes syncs on one device", "[sim]") {
  SimConfig cfg = small_machine(4, 1, SimPlacement::kCompact);
  std::vector<uint64_t> done(2, 0);
  Simulation sim(cfg, 1);
  for (int i = 0; i < 2; ++i) {
    sim.spawn([&, i] {
      SP::storage_write(20000);  // 10 us on the device at 2 B/ns
      SP::storage_sync();
      done[static_cast<size_t>(i)] = SP::now_ns();
    }, "writer " + std::to_string(i));
  }
  REQUIRE(sim.run().finished());
  std::sort(done.begin(), done.end());
  const uint64_t cs = cfg.context_switch_ns;
  const uint64_t write_cpu = cfg.syscall_ns + static_cast<uint64_t>(20000 / cfg.copy_bytes_per_ns);
  const uint64_t first = cs + write_cpu + cfg.syscall_ns + 2 * 10000 + cfg.fsync_ns;  // both writes pending
  CHECK(done[0] == first + cs);
  CHECK(done[1] == first + cfg.fsync_ns + cs);  // queued behind the first sync
}

// ---------------------------------------------------------------------------------------------
// Speed: simulated shared operations per real second. A printout, not an assertion.
TEST_CASE("sim: speed (simulated shared ops per real second)", "[.bench]") {
  auto bench = [](const char* what, int clients, uint32_t cores, VarProtocol form) {
    SimConfig cfg;
    cfg.cores = cores;
    ProcTable<SP> procs(static_cast<uint32_t>(clients), 1);
    constexpr int kLocks = 8;
    std::vector<std::unique_ptr<LWLock<SP>>> locks;
    std::vector<std::unique_ptr<LockVar<SP>>> vars;
    for (int l = 0; l < kLocks; ++l) {
      locks.push_back(std::make_unique<LWLock<SP>>(&procs, kT));
      vars.push_back(std::make_unique<LockVar<SP>>());
    }
    SpinLock<SP> pos_lock(WaitEvent::kInsertPosSpin);
    auto pos = std::make_unique<OwnLine<SP::Shared<uint64_t>>>();
    bool stop = false;
    Simulation sim(cfg, 1);
    for (int i = 0; i < clients; ++i) {
      sim.spawn([&, i] {
        Proc<SP>& me = procs[i];
        LWLock<SP>& l = *locks[static_cast<size_t>(i % kLocks)];
        LockVar<SP>& v = *vars[static_cast<size_t>(i % kLocks)];
        while (!stop) {  // insert_locks' shape: lock, reserve under a spinlock, copy, release
          l.acquire(me, kLwExclusive);
          pos_lock.acquire(me);
          pos->v.set(pos->v.get() + 100);
          pos_lock.release();
          SP::work(100);
          l.release_clear_var(me, form, v, 0);
          SP::work(1000);
        }
      }, "client");
    }
    sim.request_stop_at(100000000, [&] { stop = true; });  // 100 ms virtual
    // Thread CPU time as well as wall time: on a loaded machine the CPU figure is the stable one.
    auto cpu_now = [] {
      timespec ts;
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
      return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
    };
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = cpu_now();
    const SimOutcome out = sim.run();
    const double cpu = cpu_now() - c0;
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const SimCounters& c = out.counters;
    std::printf("%-34s %4d clients %2u cores: %5.1f M shared ops/s (%5.1f M per CPU s), %4.1f M resumes/s, "
                "%llu ops, %.1f ms virtual in %.3f s, %llu spin parks\n",
                what, clients, cores, static_cast<double>(c.shared_ops) / secs / 1e6,
                static_cast<double>(c.shared_ops) / cpu / 1e6, static_cast<double>(c.resumes) / secs / 1e6,
                static_cast<unsigned long long>(c.shared_ops), static_cast<double>(out.now_ns) / 1e6, secs,
                static_cast<unsigned long long>(c.spin_parks));
  };
  bench("insert-lock shape, uncontended", 1, 64, VarProtocol::kAtomic);
  bench("insert-lock shape", 16, 64, VarProtocol::kAtomic);
  bench("insert-lock shape", 64, 64, VarProtocol::kAtomic);
  bench("insert-lock shape, oversubscribed", 256, 64, VarProtocol::kAtomic);
  bench("insert-lock shape, oversubscribed", 4096, 64, VarProtocol::kAtomic);
}

}  // namespace walbench

// One place that turns (strategy template, cell spec) into a running model for the platform the
// cell asks for. Each strategy's factory calls make_wal_cell<Its>(...); adding a platform or a
// platform policy means adding a branch here, not touching every strategy.
//
// Platform policies (PROTOCOLS.md section 3, core/platform/emulated.h): platform.atomics
// ("native" | "emulated") x platform.spinlocks ("native" | "semaphore") pick one of four
// platforms over ThreadsPlatform or SimPlatform; native/native is the base itself (no cost).
// Each combination instantiates the strategy and WalCell once more per base (compile time).
// Buffer initialisation (wal.buffer_init) is a runtime choice of the Wal: it travels as the
// first of the arguments WalCell forwards to the Wal constructor (core/wal/wal.h).
// The CLOG strategy (clog.strategy) is a runtime choice too: WalCell's CLOG is ClogChoice
// (strategies/clog_choice.h), a switch per commit, so core/cell/ needs no strategy.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>

#include "core/platform/emulated.h"
#include "core/platform/sim.h"
#include "core/platform/threads.h"
#include "core/wal/wal.h"
#include "core/cell/cell.h"
#include "core/cell/spec.h"
#include "core/cell/wal_cell.h"
#include "strategies/clog_choice.h"

namespace walbench {

namespace make_cell_detail {

template <class P, template <class> class Strategy, class... Args>
std::unique_ptr<CellRun> make_on(const CellSpec& spec, uint64_t seed, bool private_streams,
                                 const Args&... strategy_args) {
  return std::make_unique<WalCell<P, Strategy<P>, ClogChoice<P>>>(
      spec, seed, private_streams, parse_buffer_init(spec.wal.buffer_init), strategy_args...);
}

// NB: the choices must match harness/config.cc (platform.atomics / platform.spinlocks).
template <class Base, template <class> class Strategy, class... Args>
std::unique_ptr<CellRun> make_with_policies(const CellSpec& spec, uint64_t seed,
                                            bool private_streams, const Args&... strategy_args) {
  const std::string& a = spec.platform.atomics;
  const std::string& s = spec.platform.spinlocks;
  if (a != "native" && a != "emulated")
    throw std::invalid_argument("platform.atomics \"" + a + "\" is not implemented");
  if (s != "native" && s != "semaphore")
    throw std::invalid_argument("platform.spinlocks \"" + s + "\" is not implemented");
  const bool emulate_atomics = a == "emulated";
  const bool semaphore_spinlocks = s == "semaphore";
  if (!emulate_atomics && !semaphore_spinlocks)
    return make_on<Base, Strategy>(spec, seed, private_streams, strategy_args...);
  if (emulate_atomics && !semaphore_spinlocks)
    return make_on<EmulatedPlatform<Base, true, false>, Strategy>(spec, seed, private_streams,
                                                                  strategy_args...);
  if (!emulate_atomics)
    return make_on<EmulatedPlatform<Base, false, true>, Strategy>(spec, seed, private_streams,
                                                                  strategy_args...);
  return make_on<EmulatedPlatform<Base, true, true>, Strategy>(spec, seed, private_streams,
                                                               strategy_args...);
}

}  // namespace make_cell_detail

// private_streams: one WAL per client (the `ideal` baseline) instead of one shared WAL.
template <template <class> class Strategy, class... Args>
std::unique_ptr<CellRun> make_wal_cell(const CellSpec& spec, uint64_t seed, bool private_streams,
                                       const Args&... strategy_args) {
  if (spec.platform.kind == "threads")
    return make_cell_detail::make_with_policies<ThreadsPlatform, Strategy>(
        spec, seed, private_streams, strategy_args...);
  if (spec.platform.kind == "sim")  // emulation on the sim: per-simulation pools (emulated.h)
    return make_cell_detail::make_with_policies<SimPlatform, Strategy>(
        spec, seed, private_streams, strategy_args...);
  throw std::invalid_argument("platform \"" + spec.platform.kind + "\" is not implemented");
}

}  // namespace walbench

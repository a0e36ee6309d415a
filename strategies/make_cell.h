// One place that turns (strategy template, cell spec) into a running model for the platform the
// cell asks for. Each strategy's factory calls make_wal_cell<Its>(...); adding a platform or a
// platform policy means adding a branch here, not touching every strategy.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>

#include "core/platform/threads.h"
#include "harness/cell.h"
#include "harness/spec.h"
#include "harness/wal_cell.h"

namespace walbench {

// private_streams: one WAL per client (the `ideal` baseline) instead of one shared WAL.
template <template <class> class Strategy, class... Args>
std::unique_ptr<CellRun> make_wal_cell(const CellSpec& spec, uint64_t seed, bool private_streams,
                                       const Args&... strategy_args) {
  if (spec.platform.kind == "threads")
    return std::make_unique<WalCell<ThreadsPlatform, Strategy<ThreadsPlatform>>>(
        spec, seed, private_streams, strategy_args...);
  throw std::invalid_argument("platform \"" + spec.platform.kind + "\" is not implemented");
}

}  // namespace walbench

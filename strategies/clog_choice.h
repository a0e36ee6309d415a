// The CLOG of one cell with the CLOG strategy its config names (clog.strategy), chosen at run
// time: the choice is one switch per commit (never per record), so a WalCell is instantiated
// once per (platform, insertion strategy) whatever the CLOG strategy.
//
// strategies/make_cell.h passes ClogChoice<P> to WalCell as its CLOG (NB: must satisfy
// CellClog, core/cell/wal_cell.h), so the cell driver in core/ needs no CLOG strategy.
//
// Adding a CLOG strategy: a folder strategies/<name>/ with the protocol block, an entry in
// clog_strategies() (strategies/registry.cc), and a case here.
#pragma once

#include <concepts>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "core/clog/clog.h"
#include "core/proc.h"
#include "core/cell/spec.h"
#include "strategies/clog_exclusive/clog_exclusive.h"
#include "strategies/clog_group_update/clog_group_update.h"

namespace walbench {

// What ClogChoice needs of a CLOG strategy S on platform P (NB: Clog::set_tree_status calls
// set_page_status back for each page of a transaction tree).
template <class S, class P>
concept ClogStrategy = requires(S& s, const S& cs, Proc<P>& me, Xid xid,
                                std::span<const Xid> subxids, XidStatus status, Lsn lsn,
                                uint32_t pageno, bool all_xact_same_page) {
  s.set_status(me, xid, subxids, status, lsn);
  s.set_page_status(me, xid, subxids, status, lsn, pageno, all_xact_same_page);
  { cs.stats() } -> std::convertible_to<nlohmann::json>;
};

template <class P>
class ClogChoice {
  static_assert(ClogStrategy<ClogExclusive<P>, P>);
  static_assert(ClogStrategy<ClogGroupUpdate<P>, P>);

 public:
  ClogChoice(const ClogSpec& spec, ProcTable<P>& procs)
      : clog_(procs, spec.clog_buffers, spec.page_size,
              Xid{kFirstNormalXid.value + spec.xid_history}),
        name_(spec.strategy) {
    if (spec.strategy == "clog_exclusive") {
      kind_ = Kind::kExclusive;
      exclusive_.emplace(clog_, procs);
    } else if (spec.strategy == "clog_group_update") {
      kind_ = Kind::kGroupUpdate;
      group_.emplace(clog_, procs, ClogGroupUpdateParams::from_json(spec.params));
    } else {
      throw std::invalid_argument("unknown CLOG strategy \"" + spec.strategy + "\"");
    }
  }

  Clog<P>& clog() { return clog_; }
  const Clog<P>& clog() const { return clog_; }

  // TransactionIdCommitTree (lsn = kInvalidLsn: the commit record is flushed) or
  // TransactionIdAsyncCommitTree (lsn = the commit record's end).
  void commit_tree(Proc<P>& me, Xid xid, std::span<const Xid> subxids, Lsn lsn) {
    switch (kind_) {
      case Kind::kExclusive: exclusive_->set_status(me, xid, subxids, XidStatus::kCommitted, lsn); return;
      case Kind::kGroupUpdate: group_->set_status(me, xid, subxids, XidStatus::kCommitted, lsn); return;
    }
  }

  // The SLRU counters and the strategy's own; may be called while clients run (every value is
  // a Counter, core/counter.h, or fixed at construction).
  nlohmann::json stats() const {
    const ClogCounters& c = clog_.counters();
    nlohmann::json j = {{"strategy", name_},
                        {"buffers", clog_.num_buffers()},
                        {"pages", c.latest_page + 1},
                        {"page_hits", c.page_hits},
                        {"page_reads", c.page_reads},
                        {"page_writes", c.page_writes},
                        {"page_zeroes", c.page_zeroes},
                        {"wal_flushes", c.wal_flushes},
                        {"status_sets", c.status_sets}};
    const nlohmann::json s = kind_ == Kind::kExclusive ? exclusive_->stats() : group_->stats();
    for (const auto& [k, v] : s.items()) j[k] = v;
    return j;
  }

 private:
  enum class Kind { kExclusive, kGroupUpdate };
  Clog<P> clog_;
  std::string name_;
  Kind kind_ = Kind::kExclusive;
  std::optional<ClogExclusive<P>> exclusive_;
  std::optional<ClogGroupUpdate<P>> group_;
};

}  // namespace walbench

#include "strategies/link_buf/link_buf.h"

#include <stdexcept>
#include <string>

#include "strategies/make_cell.h"

namespace walbench {

LinkBufParams LinkBufParams::from_json(const nlohmann::json& j) {
  LinkBufParams p;
  if (j.contains("ring_slots")) p.ring_slots = j.at("ring_slots").get<uint32_t>();
  if (p.ring_slots == 0 || (p.ring_slots & (p.ring_slots - 1)) != 0)
    throw std::invalid_argument("link_buf: ring_slots must be a power of two");
  if (j.contains("tail_advancer")) {
    const std::string v = j.at("tail_advancer").get<std::string>();
    if (v == "waiter") p.tail_advancer = TailAdvancer::kWaiter;
    else if (v == "inserter") p.tail_advancer = TailAdvancer::kInserter;
    else throw std::invalid_argument("link_buf: unknown tail_advancer \"" + v + "\"");
  }
  if (j.contains("spin_rounds")) p.spin_rounds = j.at("spin_rounds").get<uint32_t>();
  if (j.contains("sleep_us")) p.sleep_us = j.at("sleep_us").get<uint32_t>();
  p.prev_link = parse_prev_link(j, "link_buf", p.prev_link);
  return p;
}

namespace {
std::unique_ptr<CellRun> make_cell(const CellSpec& spec, uint64_t seed) {
  return make_wal_cell<LinkBuf>(spec, seed, false, LinkBufParams::from_json(spec.strategy_params));
}
}  // namespace

StrategyInfo link_buf_info() {
  using T = ParamSpec::Type;
  std::vector<ParamSpec> params = {
      {"ring_slots", T::kInt, 131072,
       "slots of the recent_written ring, one per 8 bytes of WAL: a client whose slot is still "
       "taken (the tail is 8 x ring_slots bytes behind its start) waits. 131072 covers 1 MiB, "
       "MySQL's default innodb_log_recent_written_size",
       {}, 1, 1 << 26, true},
      {"tail_advancer", T::kString, "inserter",
       "who follows the links to move the tail: waiter (only those that wait for it: flushers, "
       "the WAL writer, evicting inserters, as MySQL 8.0.11's log_writer) or inserter (each "
       "inserter after publishing too: add_link_advance_tail, after Bug#30088404)",
       {"waiter", "inserter"}},
      {"spin_rounds", T::kInt, 100,
       "spin_delay rounds of a ring-full or tail wait before it sleeps", {}, 0, 1e9},
      {"sleep_us", T::kInt, 20,
       "then sleeps of this many microseconds (MySQL's ring-full wait: 20); 0 = spin only",
       {}, 0, 1e6},
      prev_link_param_spec("hash_table"),
  };
  return {"link_buf",
          "MySQL 8.0 redo log (WL#10310; log0buf.cc log_buffer_write_completed, ut0link_buf.h "
          "Link_buf; Bug#30088404 for the tail advancer)",
          "reserve with one fetch_add, copy with no lock, publish each finished copy as a link in "
          "a ring indexed by position; the links' contiguous tail answers "
          "WaitXLogInsertionsToFinish; xl_prev through lockfree_reserve's prev links",
          std::move(params),
          &make_cell};
}

}  // namespace walbench

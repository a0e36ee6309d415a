// The sim platform's coherence model for shared byte ranges that are not P objects (WAL page
// bytes): P::touch_range. Design and departures: sim.h ("RANGES").
#include <absl/container/flat_hash_map.h>

#include <algorithm>
#include <cstdint>

#include "core/aligned_array.h"
#include "core/platform/sim.h"
#include "core/platform/sim_internal.h"

namespace walbench {

static_assert(Simulation::kRangeBlockBytes == kRangeAlign,
              "buffers aligned for touch_range must start on a range block");

namespace {
constexpr uint64_t kLine = sim_internal::kLineBytes;
struct RangeBlock {
  int32_t writer = -1;  // physical core that last wrote into the block
  int32_t reader = -1;  // a core other than writer that read it since
};
}  // namespace

struct Simulation::RangeMap {
  absl::flat_hash_map<uintptr_t, RangeBlock> blocks;  // key: address / kRangeBlockBytes
};

void Simulation::RangeMapDelete::operator()(RangeMap* m) const { delete m; }

// One line moved between two cores, as access() would charge it (without counting it in
// SimCounters).
uint64_t Simulation::range_line_ns(uint32_t from, uint32_t to) const {
  if (from == to) return 0;
  if (cluster_lo_[from] == cluster_lo_[to])
    return cfg_.cores_per_cluster == 0 ? cfg_.same_socket_transfer_ns : cfg_.same_cluster_transfer_ns;
  if (socket_of_[from] == socket_of_[to]) return cfg_.same_socket_transfer_ns;
  return cfg_.cross_socket_transfer_ns;
}

void Simulation::op_touch_range(const void* p, size_t n, RangeAccess k) {
  Fiber* fp = cur_;
  if (fp == nullptr || n == 0) return;
  Fiber& f = *fp;
  if (f.replay) end_replay(f);
  f.spin_addr = nullptr;
  sync(f);  // block state changes in virtual-time order
  if (!range_map_) range_map_.reset(new RangeMap);
  const uint32_t c = f.core;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(p);
  const uintptr_t end = begin + n;
  const uintptr_t first_line = begin / kLine;
  const uintptr_t last_line = (end - 1) / kLine;
  const bool head_partial = begin % kLine != 0;
  const bool tail_partial = end % kLine != 0;
  uint64_t ns = 0;
  uint64_t per_line_sum = 0;  // sum of per-line transfers, divided once at the end
  for (uintptr_t b = begin / kRangeBlockBytes; b <= (end - 1) / kRangeBlockBytes; ++b) {
    RangeBlock& blk = range_map_->blocks[b];
    const uintptr_t lo_line = std::max(first_line, b * kRangeBlockBytes / kLine);
    const uintptr_t hi_line = std::min(last_line, ((b + 1) * kRangeBlockBytes - 1) / kLine);
    uint64_t lines = hi_line - lo_line + 1;
    if (k == RangeAccess::kRead) {
      if (blk.writer >= 0 && blk.writer != static_cast<int32_t>(c) &&
          blk.reader != static_cast<int32_t>(c)) {
        per_line_sum += lines * range_line_ns(static_cast<uint32_t>(blk.writer), c);
        range_counters_.remote_lines_read += lines;
        blk.reader = static_cast<int32_t>(c);
      }
      continue;
    }
    // Write: the farther of the two holders that are not us.
    uint64_t hold = 0;
    if (blk.writer >= 0) hold = range_line_ns(static_cast<uint32_t>(blk.writer), c);
    if (blk.reader >= 0) hold = std::max(hold, range_line_ns(static_cast<uint32_t>(blk.reader), c));
    if (hold > 0) {
      // Partial edge lines: a dependent RFO of the neighbour's bytes from the block's writer.
      uint64_t edge = 0;
      const uint64_t from_writer =
          blk.writer >= 0 ? range_line_ns(static_cast<uint32_t>(blk.writer), c) : 0;
      if (head_partial && lo_line == first_line) ++edge;
      if (tail_partial && hi_line == last_line && (hi_line != first_line || !head_partial)) ++edge;
      if (from_writer > 0) {
        ns += edge * from_writer;
        range_counters_.partial_line_transfers += edge;
        lines -= std::min(lines, edge);
      }
      per_line_sum += lines * hold;
      range_counters_.remote_lines_written += lines;
    }
    blk.writer = static_cast<int32_t>(c);
    blk.reader = -1;
  }
  ns += per_line_sum / kRangeLineParallelism;
  if (ns == 0) return;
  range_counters_.charged_ns += ns;
  f.clock += ns;
  sync(f);
}

}  // namespace walbench

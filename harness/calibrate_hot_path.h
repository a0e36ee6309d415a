// `walbench calibrate --hot-path RESULT`: how close a real-thread result comes to this machine's
// limit for one client (issue 11 item 4). The limit of a record of b bytes (WAL bytes per
// transaction, page headers included: bytes_per_s / tps of the cell) is what one core needs for
// the work PostgreSQL cannot skip on it: copying the record into the WAL buffer and computing its
// CRC, b / copy_rate + b / crc_rate, with copy_rate = one core's memcpy of 8 MiB blocks and
// crc_rate = the model's ISA-L CRC-32C, both measured here and now (calibrate_cpu.h). Everything
// else (the storage write and the streaming verifier run on other threads; locks, page
// initialisation) is the model's own cost and shows as the distance to 100%.
// Prints one line per 1-client real-thread cell: records/s, bytes/s, the limit, % of it, peak
// RSS. The rates are those of large buffers (8 MiB copies, ISA-L over 64 KiB): for small records
// the per-call costs of memcpy and the CRC are part of the distance to 100%.
#pragma once

#include <ostream>
#include <string>

namespace walbench {

// Returns 0; throws UsageError (harness/config.h) for a file that is not a result.
int calibrate_hot_path_command(const std::string& result_path, bool quick, std::ostream& out,
                               std::ostream& log);

}  // namespace walbench

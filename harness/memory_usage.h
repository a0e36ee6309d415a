// The process's peak resident set size, per repetition (Linux: /proc/self/status VmHWM, reset
// through /proc/self/clear_refs "5", kernel 4.0+). A real-thread repetition records it: the
// bound the ring storage keeps (issue 11) is checked against it. Process-wide: with simulated
// cells running side by side (-j) it would mix cells, and it depends on the host, so simulated
// repetitions do not record it.
#pragma once

#include <optional>

namespace walbench {

// Starts a new peak at the current resident size; false where the kernel does not allow it
// (the peak then counts from the process's start).
bool reset_peak_rss();
// VmHWM in MiB; nullopt where /proc/self/status cannot be read.
std::optional<double> peak_rss_mib();

}  // namespace walbench

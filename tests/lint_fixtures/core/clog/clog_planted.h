// core/clog headers are scanned. Never compiled.
#pragma once
#include <sys/time.h>
namespace walbench {
inline double clog_seconds() {
  timeval tv;
  gettimeofday(&tv, nullptr);  // expect-lint: gettimeofday
  return tv.tv_sec + absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch());  // expect-lint: absl::Now
}
}  // namespace walbench

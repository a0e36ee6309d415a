// CRC-32C (crc32c.h): the SSE4.2 loop for short buffers.
#include "core/wal/crc32c.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace walbench {

bool have_crc32c_sse42() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("sse4.2");
#else
  return false;
#endif
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t crc32c_sse42_loop(uint32_t crc, const void* data,
                                                              size_t n) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    crc = _mm_crc32_u8(crc, *p++);
    --n;
  }
  while (n >= 8) {  // one crc32q per 8 bytes, each waiting for the previous one's result
    uint64_t word;
    std::memcpy(&word, p, 8);
    crc = static_cast<uint32_t>(_mm_crc32_u64(crc, word));
    p += 8;
    n -= 8;
  }
  while (n > 0) {
    crc = _mm_crc32_u8(crc, *p++);
    --n;
  }
  return crc;
}
#else
uint32_t crc32c_sse42_loop(uint32_t, const void*, size_t) {
  std::fprintf(stderr, "calibrate: crc32c_sse42_loop called without SSE4.2\n");
  std::abort();
}
#endif

const bool kCrc32cSse42 = have_crc32c_sse42();

}  // namespace walbench

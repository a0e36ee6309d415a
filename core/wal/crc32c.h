// CRC-32C (Castagnoli), as PostgreSQL's pg_crc32c: INIT_CRC32C = 0xFFFFFFFF,
// COMP_CRC32C = update, FIN_CRC32C = bitwise not. Backed by ISA-L's crc32_iscsi, which takes
// and returns the raw (non-inverted) register, so
//   crc32c(p, n) == ~crc32_iscsi(p, n, 0xFFFFFFFF)   (check value 0xE3069283 for "123456789").
// Incremental use: s = crc32c_init(); s = crc32c_update(s, a, na); s = crc32c_update(s, b, nb);
// crc = crc32c_final(s) equals crc32c over a then b.
// Short buffers (under kCrc32cShortBytes) go through crc32c_sse42_loop where the CPU has the
// instruction: ISA-L's kernel pays a setup that dominates a record header or a 16-byte message
// (about 25 ns for 16 bytes against 10 for the loop, equal near 100 bytes, measured on the
// development VM); the CRC is the same function either way (core_tests checks them against
// each other).
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>

#include <isa-l/crc.h>

namespace walbench {

// True where crc32c_sse42_loop can run (x86-64 with SSE4.2, checked at run time).
bool have_crc32c_sse42();
extern const bool kCrc32cSse42;  // have_crc32c_sse42(), once
// PostgreSQL's pg_comp_crc32c_sse42 loop: crc32q per 8 bytes, then the tail bytes. `crc` is the
// raw register (INIT 0xFFFFFFFF, final value inverted). Call only when have_crc32c_sse42().
uint32_t crc32c_sse42_loop(uint32_t crc, const void* data, size_t n);
constexpr size_t kCrc32cShortBytes = 96;

inline uint32_t crc32c_init() { return 0xFFFFFFFFu; }

inline uint32_t crc32c_update(uint32_t state, const void* p, size_t n) {
  if (n < kCrc32cShortBytes && kCrc32cSse42) return crc32c_sse42_loop(state, p, n);
  // ISA-L takes a non-const pointer (it only reads) and an int length: feed it in chunks.
  auto* b = static_cast<unsigned char*>(const_cast<void*>(p));
  constexpr size_t kChunk = size_t{1} << 30;
  while (n > 0) {
    const size_t take = n < kChunk ? n : kChunk;
    state = crc32_iscsi(b, static_cast<int>(take), state);
    b += take;
    n -= take;
  }
  return state;
}

inline uint32_t crc32c_final(uint32_t state) { return ~state; }

inline uint32_t crc32c(const void* p, size_t n) {
  return crc32c_final(crc32c_update(crc32c_init(), p, n));
}

}  // namespace walbench

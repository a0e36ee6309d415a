// Distinct types for the numbers the WAL model deals in (CONVENTIONS.md "Types say what a
// number is"): a BytePos is not an Lsn, an Xid is not a ClientId.
//
//   BytePos  offset in the stream of usable WAL bytes, page headers excluded (PostgreSQL's
//            CurrBytePos / PrevBytePos "usable byte positions"). Reservation arithmetic
//            happens here.
//   Lsn      address in the WAL including page headers (XLogRecPtr).
//   Xid      transaction id.
//   ClientId index of a client (backend), 0-based; also its "pgprocno".
#pragma once

#include <compare>
#include <cstdint>
#include <functional>

namespace walbench {

template <class Tag>
struct StrongU64 {
  uint64_t value = 0;

  constexpr StrongU64() = default;
  constexpr explicit StrongU64(uint64_t v) : value(v) {}
  constexpr auto operator<=>(const StrongU64&) const = default;
  constexpr StrongU64 operator+(uint64_t n) const { return StrongU64(value + n); }
  constexpr StrongU64 operator-(uint64_t n) const { return StrongU64(value - n); }
  constexpr uint64_t operator-(StrongU64 o) const { return value - o.value; }
  constexpr StrongU64& operator+=(uint64_t n) {
    value += n;
    return *this;
  }
};

struct BytePosTag {};
struct LsnTag {};
using BytePos = StrongU64<BytePosTag>;
using Lsn = StrongU64<LsnTag>;

constexpr Lsn kInvalidLsn{0};
constexpr Lsn kMaxLsn{~uint64_t{0}};

struct Xid {
  uint32_t value = 0;
  constexpr auto operator<=>(const Xid&) const = default;
};
constexpr Xid kInvalidXid{0};
constexpr Xid kFirstNormalXid{3};

struct ClientId {
  uint32_t value = 0;
  constexpr auto operator<=>(const ClientId&) const = default;
};

constexpr uint64_t kMaxAlign = 8;
constexpr uint64_t max_align(uint64_t n) { return (n + kMaxAlign - 1) & ~(kMaxAlign - 1); }

}  // namespace walbench

template <class Tag>
struct std::hash<walbench::StrongU64<Tag>> {
  size_t operator()(walbench::StrongU64<Tag> v) const noexcept {
    return std::hash<uint64_t>{}(v.value);
  }
};

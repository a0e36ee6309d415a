// WAL geometry: page and segment sizes, and the conversions between usable byte positions
// (BytePos, page headers excluded) and LSNs (page headers included).
//
// Origin: PostgreSQL xlog.c, XLogBytePosToRecPtr / XLogBytePosToEndRecPtr /
// XLogRecPtrToBytePos and the UsableBytesInPage / UsableBytesInSegment macros (9.4+, groundwork
// commits 20ba5ca64c and 061e7efb1b). See PROTOCOLS.md section 1, "Byte positions". The
// arithmetic below follows PostgreSQL's step by step; the code is ours.
//
// Layout of one segment (S = segment_size, B = page_size):
//
//   LSN   0          40                B  B+24              2B 2B+24 ...         S
//         | long hdr | usable B-40 ... | hdr | usable B-24 ... | hdr | ...         |
//   BytePos          0                 B-40                  2B-64               usable_per_segment
//
// BytePos 0 is the first usable byte of segment 0, i.e. Lsn 40 (0/28).
//
// Two flavours of BytePos -> Lsn, because a position that falls exactly on a page boundary has
// two LSN names:
//   - bytepos_to_lsn (start of a record): the byte that will be written there lies past the next
//     page header, so the position maps to page start + header size.
//   - bytepos_to_end_lsn (end of a record, exclusive): the record ended at the last usable byte
//     of the previous page, so the end stays at the page start.
// lsn_to_bytepos accepts both names and maps them to the same BytePos.
//
// NB: all three must agree with each other; wal_format_test.cc checks them against a brute-force
// model of the layout for every position near page and segment boundaries.
#pragma once

#include <cassert>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/wal/types.h"

namespace walbench {

struct WalGeometry {
  uint32_t page_size = 8192;          // XLOG_BLCKSZ; power of two
  uint64_t segment_size = 16u << 20;  // wal_segment_size; power of two, multiple of page_size,
                                      // >= 2 pages

  static constexpr uint32_t kShortHeader = 24;  // SizeOfXLogShortPHD (MAXALIGNed)
  static constexpr uint32_t kLongHeader = 40;   // SizeOfXLogLongPHD, first page of a segment

  // Limits accepted by validate(). PostgreSQL allows pages of 1..64 KiB and segments of
  // 1 MiB..1 GiB; we also allow tiny geometries so tests can cross boundaries cheaply.
  static constexpr uint32_t kMinPageSize = 64;        // smallest power of two > kLongHeader
  static constexpr uint32_t kMaxPageSize = 1u << 20;
  static constexpr uint64_t kMaxSegmentSize = uint64_t{1} << 30;  // also keeps file names valid

  // Throws std::invalid_argument naming the bad value.
  void validate() const {
    auto bad = [](const std::string& what) {
      throw std::invalid_argument("invalid WAL geometry: " + what);
    };
    auto pow2 = [](uint64_t v) { return v != 0 && (v & (v - 1)) == 0; };
    if (!pow2(page_size) || page_size < kMinPageSize || page_size > kMaxPageSize)
      bad("page_size " + std::to_string(page_size) + " must be a power of two in [" +
          std::to_string(kMinPageSize) + ", " + std::to_string(kMaxPageSize) + "]");
    if (!pow2(segment_size) || segment_size > kMaxSegmentSize)
      bad("segment_size " + std::to_string(segment_size) + " must be a power of two <= " +
          std::to_string(kMaxSegmentSize));
    if (segment_size < 2 * uint64_t{page_size})
      bad("segment_size " + std::to_string(segment_size) + " must hold at least 2 pages of " +
          std::to_string(page_size) + " bytes");
  }

  // UsableBytesInPage.
  uint32_t usable_per_page() const { return page_size - kShortHeader; }
  uint64_t pages_per_segment() const { return segment_size / page_size; }
  // UsableBytesInSegment: every page loses a short header, the first one 16 bytes more.
  uint64_t usable_per_segment() const {
    return pages_per_segment() * usable_per_page() - (kLongHeader - kShortHeader);
  }

  uint64_t segment_number(Lsn l) const { return l.value / segment_size; }  // XLByteToSeg
  uint64_t page_number(Lsn l) const { return l.value / page_size; }
  Lsn page_start(Lsn l) const { return Lsn{l.value & ~(uint64_t{page_size} - 1)}; }
  bool is_segment_start(Lsn page_start) const { return page_start.value % segment_size == 0; }
  uint32_t header_size(Lsn page_start) const {
    return is_segment_start(page_start) ? kLongHeader : kShortHeader;
  }
  // True unless l points into a page header (offset 0, the page start, is a valid end LSN).
  bool is_valid_position(Lsn l) const {
    uint64_t off = l.value % page_size;
    return off == 0 || off >= header_size(page_start(l));
  }

  // XLogBytePosToRecPtr.
  Lsn bytepos_to_lsn(BytePos pos) const {
    const uint64_t fullsegs = pos.value / usable_per_segment();
    uint64_t bytesleft = pos.value % usable_per_segment();
    uint64_t seg_offset;
    if (bytesleft < page_size - kLongHeader) {
      seg_offset = bytesleft + kLongHeader;  // on the segment's first page
    } else {
      seg_offset = page_size;  // the first page, with its long header
      bytesleft -= page_size - kLongHeader;
      const uint64_t fullpages = bytesleft / usable_per_page();
      bytesleft %= usable_per_page();
      seg_offset += fullpages * page_size + bytesleft + kShortHeader;
    }
    return Lsn{fullsegs * segment_size + seg_offset};
  }

  // XLogBytePosToEndRecPtr: like bytepos_to_lsn, except that a position exactly on a page
  // boundary stays at the page start instead of moving past the header.
  Lsn bytepos_to_end_lsn(BytePos pos) const {
    const uint64_t fullsegs = pos.value / usable_per_segment();
    uint64_t bytesleft = pos.value % usable_per_segment();
    uint64_t seg_offset;
    if (bytesleft < page_size - kLongHeader) {
      seg_offset = bytesleft == 0 ? 0 : bytesleft + kLongHeader;
    } else {
      seg_offset = page_size;
      bytesleft -= page_size - kLongHeader;
      const uint64_t fullpages = bytesleft / usable_per_page();
      bytesleft %= usable_per_page();
      seg_offset += fullpages * page_size + (bytesleft == 0 ? 0 : bytesleft + kShortHeader);
    }
    return Lsn{fullsegs * segment_size + seg_offset};
  }

  // XLogRecPtrToBytePos: the inverse of both flavours. An LSN inside a page header is not a
  // position (PostgreSQL asserts); here it asserts too, and in release builds maps to the page's
  // first usable byte.
  BytePos lsn_to_bytepos(Lsn l) const {
    assert(is_valid_position(l));
    const uint64_t fullsegs = l.value / segment_size;
    const uint64_t fullpages = (l.value % segment_size) / page_size;
    const uint64_t offset = l.value % page_size;
    uint64_t result = fullsegs * usable_per_segment();
    if (fullpages == 0) {
      if (offset > kLongHeader) result += offset - kLongHeader;
    } else {
      result += (page_size - kLongHeader) + (fullpages - 1) * usable_per_page();
      if (offset > kShortHeader) result += offset - kShortHeader;
    }
    return BytePos{result};
  }
};

}  // namespace walbench

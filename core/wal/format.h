// The on-disk WAL format: page headers and record headers. Little-endian, every struct
// standard-layout with no implicit padding (static_asserts below), read and written through
// memcpy (never by casting a byte pointer).
//
// Origin: PostgreSQL xlog_internal.h (XLogPageHeaderData, XLogLongPageHeaderData) and
// xlogrecord.h (XLogRecord, 9.5+ layout), simplified: no block references, the payload is our
// own. See DESIGN.md section 2 and PROTOCOLS.md section 1.
//
// ## Pages
// The WAL is a sequence of segments (default 16 MiB) of pages (default 8 KiB). Every page starts
// with a PageHeader (24 bytes); the first page of a segment starts with a LongPageHeader
// (40 bytes) instead, flagged kPageLongHeader, which also carries the system id and the sizes.
//   magic     kPageMagic
//   info      kPageFirstIsContRecord if the first usable byte of the page continues a record
//             begun on an earlier page; kPageLongHeader on a segment's first page
//   timeline  kTimeline
//   pageaddr  the LSN of the page itself (guards against stale pages from recycled segments)
//   rem_len   with kPageFirstIsContRecord: the bytes of that record still to come (counting from
//             this page's first usable byte, alignment padding not included); else 0
//
// ## Records
// A record is a RecordHeader (24 bytes) followed by tot_len - 24 bytes of payload; the next
// record starts at the next MAXALIGN (8) boundary of usable bytes. A record (header included)
// may be split across any number of pages and segments: writers skip the page headers.
//   tot_len  header + payload, in [kMinRecordSize, kMaxRecordSize]
//   xid      transaction id (0 when none)
//   prev     start LSN of the previous record (xl_prev); 0 for the first record
//   info     resource-manager-specific flags; rmid one of RmId
//   pad      0
//   crc      CRC-32C over the payload, then over header bytes [0, offsetof(crc)) with prev set
//            (as PostgreSQL: the payload part is computed before any lock, the header part once
//            prev is known)
// Every payload starts with a 10-byte tag {client uint16, seq uint64} so the verifier can prove
// that each client's records are all present, once, in order. The rest of the payload is filler
// ('0' bytes, like repeat('0', N)).
//
// ## Worked example (default geometry)
// The first record of a fresh WAL starts at BytePos 0 = LSN 0/00000028 (after the 40-byte long
// header). A commit record has tot_len 34 and reserves MAXALIGN(34) = 40 bytes, so the second
// record starts at BytePos 40 = LSN 0/00000050 with prev = 0/00000028. A 9000-byte record at
// BytePos 80 (LSN 0/00000078) fills the remaining 8192 - 120 = 8072 bytes of page 0; page 1 (LSN
// 0/00002000) gets info = kPageFirstIsContRecord and rem_len = 9000 - 8072 = 928, and the record
// ends at LSN 0/00002000 + 24 + 928 = 0/000023B8; the next record starts at BytePos
// MAXALIGN(80 + 9000) = 9080 = LSN 0/000023B8.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "core/wal/geometry.h"
#include "core/wal/types.h"

namespace walbench {

static_assert(std::endian::native == std::endian::little,
              "the WAL format is little-endian and written by memcpy");

constexpr uint16_t kPageMagic = 0xD116;
constexpr uint16_t kPageFirstIsContRecord = 0x0001;  // XLP_FIRST_IS_CONTRECORD
constexpr uint16_t kPageLongHeader = 0x0002;         // XLP_LONG_HEADER
constexpr uint16_t kPageAllFlags = kPageFirstIsContRecord | kPageLongHeader;
constexpr uint32_t kTimeline = 1;
constexpr uint64_t kSystemId = 0x77616C62656E6368;  // "walbench"

struct PageHeader {
  uint16_t magic;
  uint16_t info;
  uint32_t timeline;
  uint64_t pageaddr;
  uint32_t rem_len;
  uint32_t pad;
};
static_assert(sizeof(PageHeader) == WalGeometry::kShortHeader);
static_assert(std::is_standard_layout_v<PageHeader> && std::is_trivially_copyable_v<PageHeader>);
static_assert(std::has_unique_object_representations_v<PageHeader>, "no implicit padding");

struct LongPageHeader {
  PageHeader std;
  uint64_t system_id;
  uint32_t seg_size;
  uint32_t page_size;
};
static_assert(sizeof(LongPageHeader) == WalGeometry::kLongHeader);
static_assert(std::is_standard_layout_v<LongPageHeader> &&
              std::is_trivially_copyable_v<LongPageHeader>);
static_assert(std::has_unique_object_representations_v<LongPageHeader>, "no implicit padding");

struct RecordHeader {
  uint32_t tot_len;
  uint32_t xid;
  uint64_t prev;
  uint8_t info;
  uint8_t rmid;
  uint16_t pad;
  uint32_t crc;  // last: the CRC covers the header bytes before it
};
constexpr uint32_t kRecordHeaderSize = 24;
static_assert(sizeof(RecordHeader) == kRecordHeaderSize);
static_assert(std::is_standard_layout_v<RecordHeader> &&
              std::is_trivially_copyable_v<RecordHeader>);
static_assert(std::has_unique_object_representations_v<RecordHeader>, "no implicit padding");
static_assert(offsetof(RecordHeader, tot_len) == 0 && offsetof(RecordHeader, prev) == 8 &&
              offsetof(RecordHeader, crc) == 20);
constexpr uint32_t kRecordCrcOffset = offsetof(RecordHeader, crc);  // header bytes under the CRC
constexpr uint32_t kRecordPrevOffset = offsetof(RecordHeader, prev);

constexpr uint32_t kTagSize = 10;  // payload starts with the tag: client (uint16), seq (uint64)
constexpr uint32_t kMinRecordSize = kRecordHeaderSize + kTagSize;  // 34 = a commit record
constexpr uint32_t kMaxRecordSize = 1u << 30;
constexpr uint32_t kMaxTagClients = 1u << 16;  // client ids must fit the 16-bit tag field
constexpr uint8_t kFillerByte = '0';

enum RmId : uint8_t { kRmXlog = 0, kRmXact = 1, kRmHeap = 10, kRmBtree = 11, kRmLogicalMsg = 21 };
bool is_known_rmid(uint8_t rmid);

// "%X/%08X" (high 32 bits / low 32 bits), as PostgreSQL prints an LSN.
std::string lsn_to_string(Lsn l);

// Field access on byte buffers.
PageHeader load_page_header(const uint8_t* p);
void store_page_header(uint8_t* p, const PageHeader& h);
LongPageHeader load_long_page_header(const uint8_t* p);
void store_long_page_header(uint8_t* p, const LongPageHeader& h);
RecordHeader load_record_header(const uint8_t* p);
void store_record_header(uint8_t* p, const RecordHeader& h);

// Write a page header (long form at a segment start) for the page that starts at page_start:
// rem_len 0, no contrecord flag. Writes only the header_size(page_start) header bytes; the rest
// of the page is left as it is (callers zero recycled pages first, as AdvanceXLInsertBuffer).
void init_page_header(uint8_t* page, Lsn page_start, const WalGeometry& g);
// Mark the page as starting with the continuation of a record: set kPageFirstIsContRecord and
// rem_len (the record's bytes still to come from this page's first usable byte on).
void set_page_contrecord(uint8_t* page, uint32_t rem_len);

// Build a record into buf (tot_len bytes: header + payload). Fills every header field except
// prev and crc (left 0); the payload is the tag (client, seq) then kFillerByte up to tot_len.
// Returns the CRC state over the payload (crc32c_update from crc32c_init), to be passed to
// finish_record. Meant to run before any lock. Aborts (hot path: no exceptions) if tot_len is
// outside [kMinRecordSize, kMaxRecordSize] or client.value >= kMaxTagClients.
uint32_t build_record(uint8_t* buf, uint32_t tot_len, Xid xid, uint8_t rmid, uint8_t info,
                      ClientId client, uint64_t seq);
// Set xl_prev and the final CRC: the payload state, continued over header bytes
// [0, kRecordCrcOffset) with prev filled in.
void finish_record(uint8_t* buf, uint32_t payload_crc_state, Lsn prev);
// CRC of a complete contiguous record (the value finish_record stores).
uint32_t compute_record_crc(const uint8_t* record, uint32_t tot_len);
// Recompute the CRC and compare with the stored one. record = contiguous header + payload of
// the tot_len its header states (the caller guarantees the buffer holds that many bytes).
bool record_crc_ok(const uint8_t* record);
// Bounds-checked form for untrusted bytes: false unless kRecordHeaderSize <= tot_len <= avail
// and the CRC matches.
bool record_crc_ok(const uint8_t* record, size_t avail);

struct RecordTag {
  uint32_t client;
  uint64_t seq;
};
void write_tag(uint8_t* payload, ClientId client, uint64_t seq);  // client.value < kMaxTagClients
RecordTag read_tag(const uint8_t* payload);

}  // namespace walbench

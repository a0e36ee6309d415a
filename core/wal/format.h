// The on-disk WAL format: page headers, record headers and the records walbench writes, byte for
// byte PostgreSQL 15's (XLOG_PAGE_MAGIC 0xD110), so that PG 15's own pg_waldump reads a run's WAL
// (tests/pg_waldump_test.cc). Little-endian, every struct standard-layout with no implicit padding
// (static_asserts below), read and written through memcpy (never by casting a byte pointer).
//
// Origin: PostgreSQL 15 (REL_15_STABLE) xlog_internal.h (XLogPageHeaderData,
// XLogLongPageHeaderData), xlogrecord.h (XLogRecord, XLR_BLOCK_ID_DATA_SHORT/LONG),
// xloginsert.c (XLogRecordAssemble), replication/message.h (xl_logical_message), access/xact.h
// (xl_xact_commit, xl_xact_xinfo, xl_xact_subxacts), rmgrlist.h (resource manager ids). See
// DESIGN.md section 2 and PROTOCOLS.md section 1.
//
// ## Pages
// The WAL is a sequence of segments (default 16 MiB) of pages (default 8 KiB). Every page starts
// with a PageHeader (24 bytes); the first page of a segment starts with a LongPageHeader
// (40 bytes) instead, flagged kPageLongHeader, which also carries the system id and the sizes.
//   magic     kPageMagic (PG 15's XLOG_PAGE_MAGIC)
//   info      kPageFirstIsContRecord if the first usable byte of the page continues a record
//             begun on an earlier page; kPageLongHeader on a segment's first page
//   timeline  kTimeline
//   pageaddr  the LSN of the page itself (guards against stale pages from recycled segments)
//   rem_len   with kPageFirstIsContRecord: the bytes of that record still to come (counting from
//             this page's first usable byte, alignment padding not included); else 0
// pg_waldump checks the long header's seg_size (a power of two, 1 MiB..1 GiB) and page_size
// (8192 for a stock build): smaller geometries (tests) are walbench-only.
//
// ## Records
// A record is a RecordHeader (24 bytes) followed by tot_len - 24 bytes; the next record starts at
// the next MAXALIGN (8) boundary of usable bytes. A record (header included) may be split across
// any number of pages and segments: writers skip the page headers.
//   tot_len  the whole record, in [kMinRecordSize, kMaxRecordSize]
//   xid      transaction id (0 when none)
//   prev     start LSN of the previous record (xl_prev); 0 for the first record
//   info     resource-manager-specific flags; rmid one of RmId
//   pad      0
//   crc      CRC-32C over the bytes after the header, then over header bytes [0, offsetof(crc))
//            with prev set (as PostgreSQL: the first part is computed before any lock, the header
//            part once prev is known)
// After the header comes the data header of the main data, as XLogRecordAssemble writes it for a
// record without block references: kBlockIdDataShort then a uint8 length when the main data is
// at most 255 bytes, else kBlockIdDataLong then a uint32 length; the main data fills the rest:
// 24 + 2 + len (or 24 + 5 + len) == tot_len, as DecodeXLogRecord requires.
//
// ## The tag
// The verifier proves that each client's records are all present, once, in order, by a 10-byte
// tag {client uint16, seq uint64} that every record carries in its LAST 10 BYTES (so the verifier
// finds it without parsing the main data). Where that is in PostgreSQL's terms:
//   LogicalMessage/MESSAGE  the last 10 bytes of the message (the message is repeat('0', N) with
//                           its tail replaced by the tag), so a message has at least 10 bytes.
//   Transaction/COMMIT      10 bytes after the commit's fixed part and xinfo parts. PostgreSQL
//                           reads only the parts its xinfo flags announce, so pg_waldump ignores
//                           them; a COMMIT is 10 bytes longer than PostgreSQL's.
//   everything else         the last 10 bytes of the main data (see build_record).
//
// ## Record kinds
//   build_message_record  pg_logical_emit_message(transactional, 'test', message):
//     RM_LOGICALMSG_ID, XLOG_LOGICAL_MESSAGE; main data xl_logical_message {Oid dbId =
//     kMessageDbOid; bool transactional; 3 pad bytes 0; Size prefix_size = 5; Size message_size
//     = N} (24 bytes), "test\0", then the N message bytes. tot_len = message_record_size(N):
//     55 + N for N <= 226, 58 + N beyond (the long data header): exactly PostgreSQL 15's.
//   build_commit_record   RecordTransactionCommit of a transaction with n subtransactions:
//     RM_XACT_ID, XLOG_XACT_COMMIT (| XLOG_XACT_HAS_INFO when n > 0); main data xl_xact_commit
//     {TimestampTz xact_time = 0} then, when n > 0, xl_xact_xinfo {XACT_XINFO_HAS_SUBXACTS} and
//     xl_xact_subxacts {int nsubxacts; TransactionId subxacts[n]}, then the tag.
//     tot_len = commit_record_size(n) = 44, or 52 + 4n: PostgreSQL's 34 / 42 + 4n plus the tag.
//   build_record          any other record (the pgbench workloads' Heap, Heap2, Btree records):
//     the rmid and info are PostgreSQL's, the size the measured one, but the record has no block
//     reference and its main data is filler ('0' bytes) then the tag, not the rmgr's struct.
//     pg_waldump reads it and counts it under the right name and size (its description prints
//     the filler as the struct's fields); PostgreSQL's redo could not replay it. A main data of
//     253..255 bytes (tot_len 282..284) gets the long data header: pg_waldump accepts it,
//     PostgreSQL itself would use the short one.
//
// ## Worked example (default geometry)
// The first record of a fresh WAL starts at BytePos 0 = LSN 0/00000028 (after the 40-byte long
// header). A commit record has tot_len 44 and reserves MAXALIGN(44) = 48 bytes; its bytes are the
// header, FF 12 (short data header, 18 bytes of main data), xact_time 0 (8 bytes) and the tag.
// The second record, another commit, starts at BytePos 48 = LSN 0/00000058 with prev =
// 0/00000028. The third, a message of N = 8942 bytes, is a record of 58 + 8942 = 9000 bytes (FE then the uint32 length 8971, the
// 24-byte xl_logical_message, "test\0", 8932 '0' bytes and the tag) at BytePos 96 (LSN
// 0/00000088); it fills the remaining 8192 - 136 = 8056 bytes of page 0; page 1 (LSN 0/00002000)
// gets info = kPageFirstIsContRecord and rem_len = 9000 - 8056 = 944, and the record ends at
// LSN 0/00002000 + 24 + 944 = 0/000023C8; the next record starts at BytePos MAXALIGN(96 + 9000)
// = 9096 = LSN 0/000023C8.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>

#include "core/wal/geometry.h"
#include "core/wal/types.h"

namespace walbench {

static_assert(std::endian::native == std::endian::little,
              "the WAL format is little-endian and written by memcpy");

constexpr uint16_t kPageMagic = 0xD110;  // XLOG_PAGE_MAGIC of PostgreSQL 15
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

constexpr uint32_t kTagSize = 10;  // the record's last bytes: client (uint16), seq (uint64)
constexpr uint32_t kMaxTagClients = 1u << 16;  // client ids must fit the 16-bit tag field
constexpr uint8_t kFillerByte = '0';

// The main data's header (XLR_BLOCK_ID_DATA_SHORT / _LONG and their lengths).
constexpr uint8_t kBlockIdDataShort = 255;
constexpr uint8_t kBlockIdDataLong = 254;
constexpr uint32_t kDataShortHeaderSize = 2;  // id, uint8 length
constexpr uint32_t kDataLongHeaderSize = 5;   // id, uint32 length
constexpr uint32_t kMaxShortMainData = 255;
// The data header XLogRecordAssemble writes for a main data of main_len bytes.
constexpr uint32_t data_header_size(uint32_t main_len) {
  return main_len <= kMaxShortMainData ? kDataShortHeaderSize : kDataLongHeaderSize;
}
constexpr uint32_t record_size_for_main_data(uint32_t main_len) {
  return kRecordHeaderSize + data_header_size(main_len) + main_len;
}

// The smallest record build_record makes: header, short data header, the tag.
constexpr uint32_t kMinRecordSize = kRecordHeaderSize + kDataShortHeaderSize + kTagSize;  // 36
constexpr uint32_t kMaxRecordSize = 1u << 30;

// Resource manager ids (rmgrlist.h, PostgreSQL 15).
enum RmId : uint8_t {
  kRmXlog = 0,
  kRmXact = 1,
  kRmHeap2 = 9,
  kRmHeap = 10,
  kRmBtree = 11,
  kRmLogicalMsg = 21
};
bool is_known_rmid(uint8_t rmid);

// Logical messages (replication/message.h).
constexpr uint8_t kInfoLogicalMessage = 0x00;  // XLOG_LOGICAL_MESSAGE
constexpr uint32_t kLogicalMessageFixedSize = 24;  // SizeOfLogicalMessage
constexpr char kMessagePrefix[] = "test";          // pgbench-style prefix, sent with its NUL
constexpr uint32_t kMessagePrefixSize = sizeof kMessagePrefix;  // 5: prefix_size counts the NUL
constexpr uint32_t kMessageDbOid = 5;  // the "postgres" database of a PG 15 cluster
constexpr uint32_t kMinMessageSize = kTagSize;  // the message carries the tag
constexpr uint32_t message_record_size(uint32_t message_size) {
  return record_size_for_main_data(kLogicalMessageFixedSize + kMessagePrefixSize + message_size);
}

// Transaction commits (access/xact.h).
constexpr uint8_t kInfoXactCommit = 0x00;             // XLOG_XACT_COMMIT
constexpr uint8_t kInfoXactHasInfo = 0x80;            // XLOG_XACT_HAS_INFO: xl_xact_xinfo follows
constexpr uint32_t kXactXinfoHasSubxacts = 1u << 1;   // XACT_XINFO_HAS_SUBXACTS
constexpr uint32_t kCommitFixedSize = 8;              // MinSizeOfXactCommit: xact_time
constexpr uint32_t commit_main_data_size(uint32_t nsubxacts) {
  return kCommitFixedSize + (nsubxacts == 0 ? 0 : 4 + 4 + 4 * nsubxacts) + kTagSize;
}
constexpr uint32_t commit_record_size(uint32_t nsubxacts) {
  return record_size_for_main_data(commit_main_data_size(nsubxacts));
}

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

// Build a record into buf (tot_len bytes: header + data header + main data). Each fills every
// header field except prev and crc (left 0) and returns the CRC state over the bytes after the
// header (crc32c_update from crc32c_init), to be passed to finish_record. Meant to run before any
// lock. Hot path: a violated precondition aborts (file:line and the rule), no exceptions.
//
// Any record but a message or a commit (see "Record kinds"): main data = filler then the tag.
// Aborts if tot_len is outside [kMinRecordSize, kMaxRecordSize], if rmid is kRmLogicalMsg or
// kRmXact (their builders below), or client.value >= kMaxTagClients.
uint32_t build_record(uint8_t* buf, uint32_t tot_len, Xid xid, uint8_t rmid, uint8_t info,
                      ClientId client, uint64_t seq);
// pg_logical_emit_message(transactional, 'test', repeat('0', message_size)) with the message's
// last 10 bytes the tag; tot_len = message_record_size(message_size). Aborts unless
// kMinMessageSize <= message_size and the record fits kMaxRecordSize.
uint32_t build_message_record(uint8_t* buf, uint32_t message_size, bool transactional, Xid xid,
                              ClientId client, uint64_t seq);
// The COMMIT of transaction xid with its subtransactions; tot_len =
// commit_record_size(subxids.size()).
uint32_t build_commit_record(uint8_t* buf, Xid xid, std::span<const Xid> subxids,
                             ClientId client, uint64_t seq);
// The main data of a complete record: its offset and length from the data header, or nullopt
// unless the header is XLR_BLOCK_ID_DATA_SHORT/LONG and the lengths add up to tot_len.
struct MainData {
  uint32_t offset;
  uint32_t length;
};
bool parse_main_data(const uint8_t* record, uint32_t tot_len, MainData* out);
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
void write_tag(uint8_t* at, ClientId client, uint64_t seq);  // client.value < kMaxTagClients
RecordTag read_tag(const uint8_t* at);
// The tag of a complete record: its last kTagSize bytes.
inline RecordTag record_tag(const uint8_t* record, uint32_t tot_len) {
  return read_tag(record + tot_len - kTagSize);
}

}  // namespace walbench

// On-disk WAL format: see format.h for the spec and a worked example.
#include "core/wal/format.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/wal/crc32c.h"

namespace walbench {

namespace {

// Hot path: no exceptions. A cheap always-on check that aborts with file:line and the rule.
[[noreturn]] void format_check_failed(const char* file, int line, const char* what) {
  std::fprintf(stderr, "%s:%d: WAL format check failed: %s\n", file, line, what);
  std::abort();
}
#define WALBENCH_FORMAT_CHECK(cond, what) \
  do {                                    \
    if (!(cond)) [[unlikely]]             \
      format_check_failed(__FILE__, __LINE__, what); \
  } while (0)

}  // namespace

bool is_known_rmid(uint8_t rmid) {
  switch (rmid) {
    case kRmXlog:
    case kRmXact:
    case kRmHeap2:
    case kRmHeap:
    case kRmBtree:
    case kRmLogicalMsg:
      return true;
    default:
      return false;
  }
}

std::string lsn_to_string(Lsn l) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%" PRIX32 "/%08" PRIX32, static_cast<uint32_t>(l.value >> 32),
                static_cast<uint32_t>(l.value));
  return buf;
}

PageHeader load_page_header(const uint8_t* p) {
  PageHeader h;
  std::memcpy(&h, p, sizeof h);
  return h;
}
void store_page_header(uint8_t* p, const PageHeader& h) { std::memcpy(p, &h, sizeof h); }

LongPageHeader load_long_page_header(const uint8_t* p) {
  LongPageHeader h;
  std::memcpy(&h, p, sizeof h);
  return h;
}
void store_long_page_header(uint8_t* p, const LongPageHeader& h) { std::memcpy(p, &h, sizeof h); }

RecordHeader load_record_header(const uint8_t* p) {
  RecordHeader h;
  std::memcpy(&h, p, sizeof h);
  return h;
}
void store_record_header(uint8_t* p, const RecordHeader& h) { std::memcpy(p, &h, sizeof h); }

void init_page_header(uint8_t* page, Lsn page_start, const WalGeometry& g) {
  assert(g.page_start(page_start) == page_start);
  PageHeader std_hdr{};
  std_hdr.magic = kPageMagic;
  std_hdr.info = 0;
  std_hdr.timeline = kTimeline;
  std_hdr.pageaddr = page_start.value;
  std_hdr.rem_len = 0;
  std_hdr.pad = 0;
  if (g.is_segment_start(page_start)) {
    LongPageHeader l{};
    l.std = std_hdr;
    l.std.info = kPageLongHeader;
    l.system_id = kSystemId;
    l.seg_size = static_cast<uint32_t>(g.segment_size);
    l.page_size = g.page_size;
    store_long_page_header(page, l);
  } else {
    store_page_header(page, std_hdr);
  }
}

void set_page_contrecord(uint8_t* page, uint32_t rem_len) {
  PageHeader h = load_page_header(page);
  h.info |= kPageFirstIsContRecord;
  h.rem_len = rem_len;
  store_page_header(page, h);
}

void write_tag(uint8_t* at, ClientId client, uint64_t seq) {
  WALBENCH_FORMAT_CHECK(client.value < kMaxTagClients, "client id fits the 16-bit tag");
  const auto c = static_cast<uint16_t>(client.value);
  std::memcpy(at, &c, sizeof c);
  std::memcpy(at + sizeof c, &seq, sizeof seq);
}

RecordTag read_tag(const uint8_t* at) {
  uint16_t c;
  uint64_t seq;
  std::memcpy(&c, at, sizeof c);
  std::memcpy(&seq, at + sizeof c, sizeof seq);
  return RecordTag{c, seq};
}

namespace {

// Header (prev and crc left 0) and data header of a record of tot_len bytes whose main data is
// main_len bytes (the data header is the rest: short or long); returns where the main data starts.
uint8_t* start_record(uint8_t* buf, uint32_t tot_len, uint32_t main_len, Xid xid, uint8_t rmid,
                      uint8_t info) {
  WALBENCH_FORMAT_CHECK(tot_len >= kMinRecordSize && tot_len <= kMaxRecordSize,
                        "kMinRecordSize <= tot_len <= kMaxRecordSize");
  RecordHeader h{};
  h.tot_len = tot_len;
  h.xid = xid.value;
  h.prev = 0;  // set by finish_record
  h.info = info;
  h.rmid = rmid;
  h.pad = 0;
  h.crc = 0;  // set by finish_record
  store_record_header(buf, h);
  uint8_t* p = buf + kRecordHeaderSize;
  if (tot_len - main_len - kRecordHeaderSize == kDataShortHeaderSize) {
    WALBENCH_FORMAT_CHECK(main_len <= kMaxShortMainData, "short data header: main data <= 255");
    p[0] = kBlockIdDataShort;
    p[1] = static_cast<uint8_t>(main_len);
    return p + kDataShortHeaderSize;
  }
  WALBENCH_FORMAT_CHECK(tot_len - main_len - kRecordHeaderSize == kDataLongHeaderSize,
                        "the data header fills tot_len - 24 - main_len bytes");
  p[0] = kBlockIdDataLong;
  std::memcpy(p + 1, &main_len, sizeof main_len);
  return p + kDataLongHeaderSize;
}

uint32_t crc_after_header(const uint8_t* buf, uint32_t tot_len) {
  return crc32c_update(crc32c_init(), buf + kRecordHeaderSize, tot_len - kRecordHeaderSize);
}

}  // namespace

uint32_t build_record(uint8_t* buf, uint32_t tot_len, Xid xid, uint8_t rmid, uint8_t info,
                      ClientId client, uint64_t seq) {
  WALBENCH_FORMAT_CHECK(tot_len >= kMinRecordSize && tot_len <= kMaxRecordSize,
                        "kMinRecordSize <= tot_len <= kMaxRecordSize");
  WALBENCH_FORMAT_CHECK(rmid != kRmLogicalMsg && rmid != kRmXact,
                        "messages and commits are built by build_message/commit_record");
  // The data header is short iff the main data fits 255 bytes; tot_len 282..284 cannot be
  // written with the short one and get the long one (see format.h).
  uint32_t main_len = tot_len - kRecordHeaderSize - kDataShortHeaderSize;
  if (main_len > kMaxShortMainData) main_len = tot_len - kRecordHeaderSize - kDataLongHeaderSize;
  uint8_t* main = start_record(buf, tot_len, main_len, xid, rmid, info);
  std::memset(main, kFillerByte, main_len - kTagSize);
  write_tag(main + main_len - kTagSize, client, seq);
  return crc_after_header(buf, tot_len);
}

uint32_t build_message_record(uint8_t* buf, uint32_t message_size, bool transactional, Xid xid,
                              ClientId client, uint64_t seq) {
  WALBENCH_FORMAT_CHECK(message_size >= kMinMessageSize, "a message holds the 10-byte tag");
  WALBENCH_FORMAT_CHECK(message_size <= kMaxRecordSize - message_record_size(0),
                        "message_record_size(message_size) <= kMaxRecordSize");
  const uint32_t main_len = kLogicalMessageFixedSize + kMessagePrefixSize + message_size;
  uint8_t* p = start_record(buf, message_record_size(message_size), main_len, xid, kRmLogicalMsg,
                            kInfoLogicalMessage);
  // xl_logical_message: dbId (Oid) at 0, transactional (bool) at 4, 3 padding bytes,
  // prefix_size (Size) at 8, message_size (Size) at 16.
  std::memset(p, 0, kLogicalMessageFixedSize);
  const uint32_t db = kMessageDbOid;
  std::memcpy(p, &db, sizeof db);
  p[4] = transactional ? 1 : 0;
  const uint64_t prefix_size = kMessagePrefixSize;
  const uint64_t size = message_size;
  std::memcpy(p + 8, &prefix_size, sizeof prefix_size);
  std::memcpy(p + 16, &size, sizeof size);
  p += kLogicalMessageFixedSize;
  std::memcpy(p, kMessagePrefix, kMessagePrefixSize);
  p += kMessagePrefixSize;
  std::memset(p, kFillerByte, message_size - kTagSize);
  write_tag(p + message_size - kTagSize, client, seq);
  return crc_after_header(buf, message_record_size(message_size));
}

uint32_t build_commit_record(uint8_t* buf, Xid xid, std::span<const Xid> subxids,
                             ClientId client, uint64_t seq) {
  const auto n = static_cast<uint32_t>(subxids.size());
  const uint8_t info = n == 0 ? kInfoXactCommit : (kInfoXactCommit | kInfoXactHasInfo);
  uint8_t* p = start_record(buf, commit_record_size(n), commit_main_data_size(n), xid, kRmXact,
                            info);
  const int64_t xact_time = 0;  // TimestampTz: 2000-01-01 (sim runs stay deterministic)
  std::memcpy(p, &xact_time, sizeof xact_time);
  p += sizeof xact_time;
  if (n > 0) {
    const uint32_t xinfo = kXactXinfoHasSubxacts;  // xl_xact_xinfo
    const int32_t nsubxacts = static_cast<int32_t>(n);  // xl_xact_subxacts
    std::memcpy(p, &xinfo, sizeof xinfo);
    std::memcpy(p + 4, &nsubxacts, sizeof nsubxacts);
    p += 8;
    for (const Xid x : subxids) {
      std::memcpy(p, &x.value, sizeof x.value);
      p += sizeof x.value;
    }
  }
  write_tag(p, client, seq);
  return crc_after_header(buf, commit_record_size(n));
}

bool parse_main_data(const uint8_t* record, uint32_t tot_len, MainData* out) {
  if (tot_len < kRecordHeaderSize + kDataShortHeaderSize) return false;
  const uint8_t* p = record + kRecordHeaderSize;
  uint32_t len;
  uint32_t hdr;
  if (p[0] == kBlockIdDataShort) {
    len = p[1];
    hdr = kDataShortHeaderSize;
  } else if (p[0] == kBlockIdDataLong && tot_len >= kRecordHeaderSize + kDataLongHeaderSize) {
    std::memcpy(&len, p + 1, sizeof len);
    hdr = kDataLongHeaderSize;
  } else {
    return false;
  }
  if (uint64_t{kRecordHeaderSize} + hdr + len != tot_len) return false;
  *out = MainData{kRecordHeaderSize + hdr, len};
  return true;
}

void finish_record(uint8_t* buf, uint32_t payload_crc_state, Lsn prev) {
  std::memcpy(buf + kRecordPrevOffset, &prev.value, sizeof prev.value);
  const uint32_t crc = crc32c_final(crc32c_update(payload_crc_state, buf, kRecordCrcOffset));
  std::memcpy(buf + kRecordCrcOffset, &crc, sizeof crc);
}

uint32_t compute_record_crc(const uint8_t* record, uint32_t tot_len) {
  const uint32_t s =
      crc32c_update(crc32c_init(), record + kRecordHeaderSize, tot_len - kRecordHeaderSize);
  return crc32c_final(crc32c_update(s, record, kRecordCrcOffset));
}

bool record_crc_ok(const uint8_t* record) {
  const RecordHeader h = load_record_header(record);
  if (h.tot_len < kRecordHeaderSize) return false;
  return compute_record_crc(record, h.tot_len) == h.crc;
}

bool record_crc_ok(const uint8_t* record, size_t avail) {
  if (avail < kRecordHeaderSize) return false;
  const RecordHeader h = load_record_header(record);
  if (h.tot_len < kRecordHeaderSize || h.tot_len > avail) return false;
  return compute_record_crc(record, h.tot_len) == h.crc;
}

}  // namespace walbench

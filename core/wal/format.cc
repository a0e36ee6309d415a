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

void write_tag(uint8_t* payload, ClientId client, uint64_t seq) {
  WALBENCH_FORMAT_CHECK(client.value < kMaxTagClients, "client id fits the 16-bit tag");
  const auto c = static_cast<uint16_t>(client.value);
  std::memcpy(payload, &c, sizeof c);
  std::memcpy(payload + sizeof c, &seq, sizeof seq);
}

RecordTag read_tag(const uint8_t* payload) {
  uint16_t c;
  uint64_t seq;
  std::memcpy(&c, payload, sizeof c);
  std::memcpy(&seq, payload + sizeof c, sizeof seq);
  return RecordTag{c, seq};
}

uint32_t build_record(uint8_t* buf, uint32_t tot_len, Xid xid, uint8_t rmid, uint8_t info,
                      ClientId client, uint64_t seq) {
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
  uint8_t* payload = buf + kRecordHeaderSize;
  write_tag(payload, client, seq);
  std::memset(payload + kTagSize, kFillerByte, tot_len - kMinRecordSize);
  return crc32c_update(crc32c_init(), payload, tot_len - kRecordHeaderSize);
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

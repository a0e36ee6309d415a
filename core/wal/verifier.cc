// The WAL verifier: see verifier.h for what is checked.
//
// Design: one pass in LSN order over the stream of usable bytes. Reader::read() hands out the
// bytes of [x, x + n) in BytePos space chunk by chunk, loading one page at a time through
// Storage::read and checking the header of every page the first time the walk enters it. The
// contrecord expectation of a page follows from the record being read when it is entered: with
// F the BytePos of the page's first usable byte and [rs, re) the record's bytes, the page must
// say "continuation, rem_len = re - F" iff rs < F < re.
#include "core/wal/verifier.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "core/wal/crc32c.h"
#include "core/wal/format.h"

namespace walbench {

namespace {

// The first error; thrown inside the walk, caught once in verify_wal.
struct VerifyFailure {
  std::string message;
};

[[noreturn]] void fail(Lsn at, const std::string& what) {
  throw VerifyFailure{"at " + lsn_to_string(at) + ": " + what};
}

std::string hex(uint64_t v, int width) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%0*llX", width, static_cast<unsigned long long>(v));
  return buf;
}

class Reader {
 public:
  Reader(const Storage& st, const WalGeometry& g, bool first_page_history_unknown)
      : st_(st), g_(g), page_(g.page_size), first_unknown_(first_page_history_unknown) {}

  // Feed the usable bytes [x, x + n) to sink(const uint8_t*, size_t), in order. [rs, re) are the
  // bytes of the record being read (for the contrecord check of pages entered on the way).
  template <class Sink>
  void read(uint64_t x, uint64_t n, uint64_t rs, uint64_t re, Sink&& sink) {
    while (n > 0) {
      const Lsn lsn = g_.bytepos_to_lsn(BytePos{x});
      const uint64_t page = g_.page_number(lsn);
      const uint32_t off = static_cast<uint32_t>(lsn.value % g_.page_size);
      enter_page(page, x, rs, re);
      const uint64_t take = std::min<uint64_t>(n, g_.page_size - off);
      sink(page_.data() + off, static_cast<size_t>(take));
      x += take;
      n -= take;
    }
  }

 private:
  void enter_page(uint64_t page, uint64_t x, uint64_t rs, uint64_t re) {
    if (page == loaded_) return;
    // The walk only moves forward, and every page holds more usable bytes than the alignment
    // padding between two records, so no page is skipped.
    st_.read(Lsn{page * g_.page_size}, page_.data(), page_.size());
    loaded_ = page;
    check_page_header(page, x, rs, re);
    first_page_ = false;
  }

  void check_page_header(uint64_t page, uint64_t x, uint64_t rs, uint64_t re) {
    const Lsn page_lsn{page * g_.page_size};
    const PageHeader h = load_page_header(page_.data());
    if (h.magic != kPageMagic)
      fail(page_lsn, "invalid magic number " + hex(h.magic, 4) + " in page header");
    if ((h.info & ~kPageAllFlags) != 0)
      fail(page_lsn, "invalid info bits " + hex(h.info, 4) + " in page header");
    if (h.timeline != kTimeline)
      fail(page_lsn, "unexpected timeline " + std::to_string(h.timeline) + " in page header");
    if (h.pageaddr != page_lsn.value)
      fail(page_lsn, "unexpected pageaddr " + lsn_to_string(Lsn{h.pageaddr}) + " in page header");
    if (g_.is_segment_start(page_lsn)) {
      if ((h.info & kPageLongHeader) == 0)
        fail(page_lsn, "first page of a segment lacks the long header flag (info " +
                           hex(h.info, 4) + ")");
      const LongPageHeader l = load_long_page_header(page_.data());
      if (l.system_id != kSystemId)
        fail(page_lsn, "WAL file is from a different system: system id " + hex(l.system_id, 16) +
                           ", expected " + hex(kSystemId, 16));
      if (l.seg_size != g_.segment_size)
        fail(page_lsn, "incorrect segment size " + std::to_string(l.seg_size) +
                           " in page header, expected " + std::to_string(g_.segment_size));
      if (l.page_size != g_.page_size)
        fail(page_lsn, "incorrect page size " + std::to_string(l.page_size) +
                           " in page header, expected " + std::to_string(g_.page_size));
    } else if ((h.info & kPageLongHeader) != 0) {
      fail(page_lsn, "unexpected long header flag on a page that does not start a segment");
    }

    const uint64_t first = g_.lsn_to_bytepos(page_lsn).value;  // F
    if (first_page_ && first_unknown_ && x > first) return;    // history before start unknown
    if (rs < first && first < re) {
      const uint64_t want = re - first;
      if ((h.info & kPageFirstIsContRecord) == 0)
        fail(page_lsn, "there is no contrecord flag (expected rem_len " + std::to_string(want) +
                           ")");
      if (h.rem_len != want)
        fail(page_lsn, "invalid contrecord length " + std::to_string(h.rem_len) + " (expected " +
                           std::to_string(want) + ")");
    } else {
      if ((h.info & kPageFirstIsContRecord) != 0)
        fail(page_lsn, "unexpected contrecord flag (rem_len " + std::to_string(h.rem_len) +
                           ") on a page that no record continues onto");
      if (h.rem_len != 0)
        fail(page_lsn, "invalid contrecord length " + std::to_string(h.rem_len) +
                           " (expected 0)");
    }
  }

  const Storage& st_;
  const WalGeometry& g_;
  std::vector<uint8_t> page_;
  uint64_t loaded_ = ~uint64_t{0};
  bool first_page_ = true;
  const bool first_unknown_;
};

struct Walk {
  const WalGeometry& g;
  const VerifyExpect& expect;
  VerifyResult& result;
  uint64_t bp = 0;  // BytePos of the next record

  void run(const Storage& st) {
    if (!g.is_valid_position(expect.start))
      fail(expect.start, "start position lies inside a page header");
    if (!g.is_valid_position(expect.end))
      fail(expect.end, "end position lies inside a page header");
    const uint64_t start_bp = g.lsn_to_bytepos(expect.start).value;
    const uint64_t end_bp = g.lsn_to_bytepos(expect.end).value;
    if (start_bp % kMaxAlign != 0) fail(expect.start, "start position is not MAXALIGNed");
    if (end_bp % kMaxAlign != 0) fail(expect.end, "end position is not MAXALIGNed");
    if (end_bp < start_bp)
      fail(expect.end, "end of WAL lies before its start " + lsn_to_string(expect.start));

    const bool from_beginning = start_bp == 0;
    Reader reader(st, g, /*first_page_history_unknown=*/!from_beginning);
    const size_t clients = expect.records_per_client.size();
    std::vector<uint64_t> next_seq(clients, 0);
    Lsn prev_start = kInvalidLsn;
    bool first = true;
    bp = start_bp;

    while (bp < end_bp) {
      const Lsn rec = g.bytepos_to_lsn(BytePos{bp});
      if (end_bp - bp < kRecordHeaderSize)
        fail(rec, "record header of " + std::to_string(kRecordHeaderSize) +
                      " bytes extends past the end of WAL " + lsn_to_string(expect.end));

      // The first 8 bytes never cross a page (record starts and page usable areas are both
      // MAXALIGNed), so tot_len is known and checked before any continuation page is entered.
      uint8_t hdr[kRecordHeaderSize];
      size_t got = 0;
      auto into_hdr = [&](const uint8_t* p, size_t n) {
        std::memcpy(hdr + got, p, n);
        got += n;
      };
      reader.read(bp, 8, bp, bp + 8, into_hdr);
      uint32_t tot_len;
      std::memcpy(&tot_len, hdr, sizeof tot_len);
      if (tot_len < kMinRecordSize)
        fail(rec, "invalid record length: expected at least " + std::to_string(kMinRecordSize) +
                      ", got " + std::to_string(tot_len));
      if (tot_len > kMaxRecordSize)
        fail(rec, "invalid record length " + std::to_string(tot_len) + ": more than " +
                      std::to_string(kMaxRecordSize));
      if (tot_len > end_bp - bp)
        fail(rec, "record length " + std::to_string(tot_len) + " extends past the end of WAL " +
                      lsn_to_string(expect.end));
      const uint64_t re = bp + tot_len;

      reader.read(bp + 8, kRecordHeaderSize - 8, bp, re, into_hdr);
      const RecordHeader h = load_record_header(hdr);
      if (!is_known_rmid(h.rmid))
        fail(rec, "invalid resource manager ID " + std::to_string(h.rmid));
      const bool check_prev = !first || from_beginning;
      if (check_prev && h.prev != prev_start.value)
        fail(rec, "record's prev link " + lsn_to_string(Lsn{h.prev}) +
                      " does not match previous record " + lsn_to_string(prev_start));

      // Payload: CRC and the tag (its 10 bytes may be split across pages).
      uint32_t crc = crc32c_init();
      uint8_t tag[kTagSize];
      size_t tag_got = 0;
      reader.read(bp + kRecordHeaderSize, tot_len - kRecordHeaderSize, bp, re,
                  [&](const uint8_t* p, size_t n) {
                    crc = crc32c_update(crc, p, n);
                    if (tag_got < kTagSize) {
                      const size_t t = std::min<size_t>(n, kTagSize - tag_got);
                      std::memcpy(tag + tag_got, p, t);
                      tag_got += t;
                    }
                  });
      crc = crc32c_final(crc32c_update(crc, hdr, kRecordCrcOffset));
      if (crc != h.crc)
        fail(rec, "incorrect resource manager data checksum in record (stored " + hex(h.crc, 8) +
                      ", computed " + hex(crc, 8) + ")");

      const RecordTag t = read_tag(tag);
      if (t.client >= clients)
        fail(rec, "record tagged with client " + std::to_string(t.client) + " (seq " +
                      std::to_string(t.seq) + "), but there are only " + std::to_string(clients) +
                      " clients");
      const uint64_t want = next_seq[t.client];
      if (t.seq != want) {
        const std::string who = "client " + std::to_string(t.client) + " seq " +
                                std::to_string(t.seq);
        if (t.seq < want)
          fail(rec, "duplicate record: " + who + " already seen (expected seq " +
                        std::to_string(want) + ")");
        fail(rec, "out of order or missing record: " + who + " where seq " +
                      std::to_string(want) + " was expected");
      }
      if (t.seq >= expect.records_per_client[t.client])
        fail(rec, "client " + std::to_string(t.client) + " seq " + std::to_string(t.seq) +
                      " beyond the " + std::to_string(expect.records_per_client[t.client]) +
                      " records expected");
      next_seq[t.client] = want + 1;

      ++result.records;
      prev_start = rec;
      first = false;
      bp = max_align(re);
    }

    for (size_t c = 0; c < clients; ++c)
      if (next_seq[c] != expect.records_per_client[c])
        fail(expect.end, "end of WAL reached with " + std::to_string(next_seq[c]) +
                             " records of client " + std::to_string(c) + ", expected " +
                             std::to_string(expect.records_per_client[c]));
    if (result.records != expect.total_records)
      fail(expect.end, "end of WAL reached after " + std::to_string(result.records) +
                           " records, expected " + std::to_string(expect.total_records));
  }
};

}  // namespace

VerifyResult verify_wal(const Storage& storage, const WalGeometry& g, const VerifyExpect& expect) {
  VerifyResult result;
  try {
    g.validate();
  } catch (const std::exception& e) {
    result.ok = false;
    result.error = e.what();
    return result;
  }
  Walk walk{g, expect, result};
  try {
    walk.run(storage);
  } catch (const VerifyFailure& f) {
    result.ok = false;
    result.error = f.message;
  } catch (const std::exception& e) {  // storage I/O errors, allocation failure
    result.ok = false;
    result.error = "at " + lsn_to_string(g.bytepos_to_lsn(BytePos{walk.bp})) +
                   ": could not read WAL: " + e.what();
  }
  const uint64_t walked_end = g.bytepos_to_end_lsn(BytePos{walk.bp}).value;
  result.bytes = walked_end > expect.start.value ? walked_end - expect.start.value : 0;
  return result;
}

}  // namespace walbench

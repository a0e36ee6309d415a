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
#include <optional>
#include <string>
#include <thread>

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

// Bytes [off, off + n) of a record are at p: copy those inside [from, to) to dst[x - from].
void copy_overlap(const uint8_t* p, size_t n, uint64_t off, uint64_t from, uint64_t to,
                  uint8_t* dst) {
  const uint64_t a = std::max(off, from);
  const uint64_t b = std::min(off + n, to);
  if (a < b) std::memcpy(dst + (a - from), p + (a - off), b - a);
}

std::string hex(uint64_t v, int width) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%0*llX", width, static_cast<unsigned long long>(v));
  return buf;
}

// Where the walk's bytes come from. After a run (verify_wal): all of the storage, the end known
// from the start. While the run writes (StreamingVerifier): the written frontier of a
// StreamedStorage, which the walk waits for, and the end once the run declares it.
class Source {
 public:
  Source(const Storage& st, uint64_t end) : st_(st), streamed_(nullptr), end_(end) {}
  explicit Source(StreamedStorage& st) : st_(st), streamed_(&st) {}

  // Everything below the returned LSN can be read; waits (streaming) until it is past `lsn` or
  // the end is known.
  uint64_t readable_past(uint64_t lsn) {
    if (streamed_ == nullptr) return ~uint64_t{0};  // bytes never written read as zero
    if (frontier_ > lsn) return frontier_;
    frontier_ = streamed_->written_past(lsn);
    return frontier_;
  }
  // The end of WAL; none while the run is still writing.
  std::optional<uint64_t> end() {
    if (!end_ && streamed_ != nullptr) end_ = streamed_->declared_end();
    return end_;
  }
  void read(uint64_t lsn, uint8_t* out, size_t n) const { st_.read(Lsn{lsn}, out, n); }
  void release(uint64_t lsn) const {
    if (streamed_ != nullptr) streamed_->release(lsn);
  }

 private:
  const Storage& st_;
  StreamedStorage* const streamed_;
  std::optional<uint64_t> end_;
  uint64_t frontier_ = 0;
};

class Reader {
 public:
  Reader(Source& src, const WalGeometry& g, bool first_page_history_unknown)
      : src_(src), g_(g), page_(g.page_size), first_unknown_(first_page_history_unknown) {}

  // Feed the usable bytes [x, x + n) to sink(const uint8_t*, size_t), in order. [rs, re) are the
  // bytes of the record being read (for the contrecord check of pages entered on the way, and
  // for the error when the end of WAL turns out to lie inside the record).
  template <class Sink>
  void read(uint64_t x, uint64_t n, uint64_t rs, uint64_t re, Sink&& sink) {
    while (n > 0) {
      const Lsn lsn = g_.bytepos_to_lsn(BytePos{x});
      const uint64_t page = g_.page_number(lsn);
      const uint32_t off = static_cast<uint32_t>(lsn.value % g_.page_size);
      const uint64_t take = std::min<uint64_t>(n, g_.page_size - off);
      load(page, off + take, x, rs, re);
      sink(page_.data() + off, static_cast<size_t>(take));
      x += take;
      n -= take;
    }
  }

 private:
  // Make the page's bytes [0, upto) available (as many more as are written), checking its header
  // the first time the walk enters it.
  void load(uint64_t page, uint64_t upto, uint64_t x, uint64_t rs, uint64_t re) {
    const uint64_t page_lsn = page * g_.page_size;
    const bool entering = page != loaded_;
    if (entering) {
      // The walk only moves forward, and every page holds more usable bytes than the alignment
      // padding between two records, so no page is skipped.
      src_.release(page_lsn);  // every byte before this page is checked
      loaded_ = page;
      have_ = 0;
    }
    if (have_ < upto) {
      const uint64_t readable = src_.readable_past(page_lsn + upto - 1);
      if (readable < page_lsn + upto) {  // the run ended inside this record
        fail(g_.bytepos_to_lsn(BytePos{rs}),
             "record length " + std::to_string(re - rs) + " extends past the end of WAL " +
                 lsn_to_string(Lsn{src_.end().value_or(0)}));
      }
      const uint64_t to = std::min<uint64_t>(g_.page_size, readable - page_lsn);
      src_.read(page_lsn + have_, page_.data() + have_, static_cast<size_t>(to - have_));
      have_ = to;
    }
    if (entering) {
      check_page_header(page, x, rs, re);
      first_page_ = false;
    }
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

  Source& src_;
  const WalGeometry& g_;
  std::vector<uint8_t> page_;
  uint64_t loaded_ = ~uint64_t{0};
  uint64_t have_ = 0;  // bytes of the loaded page read so far
  bool first_page_ = true;
  const bool first_unknown_;
};

// One walk in LSN order from `start`. The end of WAL comes from the source: known at once after
// a run, learned when the run declares it while streaming (validated then, with the same errors).
class Walk {
 public:
  Walk(const WalGeometry& g, Source& src, Lsn start, size_t clients, VerifyResult& result)
      : g_(g), src_(src), start_(start), result_(result), next_seq_(clients, 0) {}

  // records_per_client: when known in advance (after a run), a record beyond a client's count
  // fails at once; streaming, the counts are checked by check_counts() at the end.
  void run(const std::vector<uint64_t>* records_per_client) {
    if (!g_.is_valid_position(start_)) fail(start_, "start position lies inside a page header");
    const uint64_t start_bp = g_.lsn_to_bytepos(start_).value;
    if (start_bp % kMaxAlign != 0) fail(start_, "start position is not MAXALIGNed");
    end_bytepos();  // after a run: the end's own checks come before any record's

    const bool from_beginning = start_bp == 0;
    Reader reader(src_, g_, /*first_page_history_unknown=*/!from_beginning);
    const size_t clients = next_seq_.size();
    Lsn prev_start = kInvalidLsn;
    bool first = true;
    bp = start_bp;

    while (true) {
      const Lsn rec = g_.bytepos_to_lsn(BytePos{bp});
      src_.readable_past(rec.value);  // streaming: until a record starts here or the run ends
      const uint64_t end_bp = end_bytepos();
      if (end_bp != kUnknown && bp >= end_bp) break;
      if (end_bp - bp < kRecordHeaderSize)
        fail(rec, "record header of " + std::to_string(kRecordHeaderSize) +
                      " bytes extends past the end of WAL " + lsn_to_string(end_lsn()));

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
      if (tot_len > end_bp - bp)  // an end learned later is checked as the record is read
        fail(rec, "record length " + std::to_string(tot_len) + " extends past the end of WAL " +
                      lsn_to_string(end_lsn()));
      const uint64_t re = bp + tot_len;

      reader.read(bp + 8, kRecordHeaderSize - 8, bp, re, into_hdr);
      const RecordHeader h = load_record_header(hdr);
      if (!is_known_rmid(h.rmid))
        fail(rec, "invalid resource manager ID " + std::to_string(h.rmid));
      const bool check_prev = !first || from_beginning;
      if (check_prev && h.prev != prev_start.value)
        fail(rec, "record's prev link " + lsn_to_string(Lsn{h.prev}) +
                      " does not match previous record " + lsn_to_string(prev_start));

      // The rest: CRC, the data header (its first 5 bytes) and the tag (the last 10), any of
      // them possibly split across pages.
      uint32_t crc = crc32c_init();
      uint8_t data_hdr[kDataLongHeaderSize] = {};
      uint8_t tag[kTagSize];
      const uint32_t tag_from = tot_len - kRecordHeaderSize - kTagSize;  // offset after header
      uint32_t off = 0;
      reader.read(bp + kRecordHeaderSize, tot_len - kRecordHeaderSize, bp, re,
                  [&](const uint8_t* p, size_t n) {
                    crc = crc32c_update(crc, p, n);
                    copy_overlap(p, n, off, 0, kDataLongHeaderSize, data_hdr);
                    copy_overlap(p, n, off, tag_from, tag_from + kTagSize, tag);
                    off += static_cast<uint32_t>(n);
                  });
      crc = crc32c_final(crc32c_update(crc, hdr, kRecordCrcOffset));
      if (crc != h.crc)
        fail(rec, "incorrect resource manager data checksum in record (stored " + hex(h.crc, 8) +
                      ", computed " + hex(crc, 8) + ")");
      check_data_header(rec, data_hdr, tot_len);

      const RecordTag t = read_tag(tag);
      if (t.client >= clients)
        fail(rec, "record tagged with client " + std::to_string(t.client) + " (seq " +
                      std::to_string(t.seq) + "), but there are only " + std::to_string(clients) +
                      " clients");
      const uint64_t want = next_seq_[t.client];
      if (t.seq != want) {
        const std::string who = "client " + std::to_string(t.client) + " seq " +
                                std::to_string(t.seq);
        if (t.seq < want)
          fail(rec, "duplicate record: " + who + " already seen (expected seq " +
                        std::to_string(want) + ")");
        fail(rec, "out of order or missing record: " + who + " where seq " +
                      std::to_string(want) + " was expected");
      }
      if (records_per_client != nullptr && t.seq >= (*records_per_client)[t.client])
        fail(rec, "client " + std::to_string(t.client) + " seq " + std::to_string(t.seq) +
                      " beyond the " + std::to_string((*records_per_client)[t.client]) +
                      " records expected");
      next_seq_[t.client] = want + 1;

      ++result_.records;
      RecordTypeTally& tally = result_.record_types[record_type_key(h.rmid, h.info)];
      ++tally.count;
      tally.bytes += tot_len;
      prev_start = rec;
      first = false;
      bp = max_align(re);
    }
  }

  void check_counts(const VerifyExpect& expect) const {
    const size_t clients = next_seq_.size();
    if (expect.records_per_client.size() != clients)
      fail(expect.end, "verifier expected " + std::to_string(expect.records_per_client.size()) +
                           " clients, walked for " + std::to_string(clients));
    for (size_t c = 0; c < clients; ++c)
      if (next_seq_[c] != expect.records_per_client[c])
        fail(expect.end, "end of WAL reached with " + std::to_string(next_seq_[c]) +
                             " records of client " + std::to_string(c) + ", expected " +
                             std::to_string(expect.records_per_client[c]));
    if (result_.records != expect.total_records)
      fail(expect.end, "end of WAL reached after " + std::to_string(result_.records) +
                           " records, expected " + std::to_string(expect.total_records));
  }

  // LSN of the end of what the walk checked (the last good record's MAXALIGNed end).
  uint64_t walked_end() const { return g_.bytepos_to_end_lsn(BytePos{bp}).value; }

  uint64_t bp = 0;  // BytePos of the next record

 private:
  static constexpr uint64_t kUnknown = ~uint64_t{0};

  // The main data's header (format.h "Records"), as DecodeXLogRecord reads it: a short or long
  // data block id whose length, with the headers, adds up to tot_len.
  static void check_data_header(Lsn rec, const uint8_t* p, uint32_t tot_len) {
    const uint64_t rest = tot_len - kRecordHeaderSize;
    if (p[0] == kBlockIdDataShort) {
      if (kDataShortHeaderSize + uint64_t{p[1]} != rest)
        fail(rec, "main data length " + std::to_string(p[1]) + " (short header) does not fill " +
                      "the record's " + std::to_string(rest) + " bytes after its header");
    } else if (p[0] == kBlockIdDataLong && rest >= kDataLongHeaderSize) {
      uint32_t len;
      std::memcpy(&len, p + 1, sizeof len);
      if (kDataLongHeaderSize + uint64_t{len} != rest)
        fail(rec, "main data length " + std::to_string(len) + " (long header) does not fill " +
                      "the record's " + std::to_string(rest) + " bytes after its header");
    } else {
      fail(rec, "invalid block_id " + std::to_string(p[0]) + ": expected the main data's (" +
                    std::to_string(kBlockIdDataShort) + " or " + std::to_string(kBlockIdDataLong) +
                    ")");
    }
  }

  Lsn end_lsn() { return Lsn{src_.end().value_or(0)}; }

  // BytePos of the end of WAL, kUnknown while the run is still writing.
  uint64_t end_bytepos() {
    if (end_bp_ != kUnknown) return end_bp_;
    if (!src_.end()) return kUnknown;
    const Lsn end = end_lsn();
    if (!g_.is_valid_position(end)) fail(end, "end position lies inside a page header");
    end_bp_ = g_.lsn_to_bytepos(end).value;
    if (end_bp_ % kMaxAlign != 0) fail(end, "end position is not MAXALIGNed");
    if (end_bp_ < g_.lsn_to_bytepos(start_).value)
      fail(end, "end of WAL lies before its start " + lsn_to_string(start_));
    return end_bp_;
  }

  const WalGeometry& g_;
  Source& src_;
  const Lsn start_;
  VerifyResult& result_;
  std::vector<uint64_t> next_seq_;
  uint64_t end_bp_ = kUnknown;
};

// Runs fn (a walk and/or its final checks) and turns its first failure into result.error.
template <class Fn>
void run_walk(const Walk& walk, const WalGeometry& g, VerifyResult& result, Fn&& fn) {
  try {
    fn();
  } catch (const VerifyFailure& f) {
    result.ok = false;
    result.error = f.message;
  } catch (const std::exception& e) {  // storage I/O errors, allocation failure
    result.ok = false;
    result.error = "at " + lsn_to_string(g.bytepos_to_lsn(BytePos{walk.bp})) +
                   ": could not read WAL: " + e.what();
  }
}

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
  Source src(storage, expect.end.value);
  Walk walk(g, src, expect.start, expect.records_per_client.size(), result);
  run_walk(walk, g, result, [&] {
    walk.run(&expect.records_per_client);
    walk.check_counts(expect);
  });
  result.bytes = walk.walked_end() > expect.start.value ? walk.walked_end() - expect.start.value : 0;
  return result;
}

// ---------------------------------------------------------------------------------------------
// StreamingVerifier

struct StreamingVerifier::State {
  State(StreamedStorage& st, const WalGeometry& g, Lsn start, size_t clients)
      : src(st), walk(g, src, start, clients, result) {}
  Source src;
  VerifyResult result;
  Walk walk;
  bool walked = false;  // the walk reached the declared end without an error
  std::thread thread;
};

StreamingVerifier::StreamingVerifier(StreamedStorage& storage, const WalGeometry& g, Lsn start,
                                     size_t clients)
    : storage_(storage), g_(g), start_(start),
      state_(std::make_unique<State>(storage, g_, start, clients)) {
  state_->thread = std::thread([this] {
    run_walk(state_->walk, g_, state_->result, [&] {
      state_->walk.run(nullptr);
      state_->walked = true;
    });
    storage_.reader_gone();  // finished or failed: the writer never waits for this reader again
  });
}

// Abandoned (the run failed before finish): end the walk wherever the WAL stands.
StreamingVerifier::~StreamingVerifier() {
  if (state_->thread.joinable()) {
    if (!storage_.declared_end()) storage_.declare_end(storage_.written());
    state_->thread.join();
  }
}

VerifyResult StreamingVerifier::finish(const VerifyExpect& expect) {
  storage_.declare_end(expect.end.value);
  state_->thread.join();
  VerifyResult result = state_->result;
  if (state_->walked)
    run_walk(state_->walk, g_, result, [&] { state_->walk.check_counts(expect); });
  const uint64_t walked_end = state_->walk.walked_end();
  result.bytes = walked_end > start_.value ? walked_end - start_.value : 0;
  const StreamedStorage::Stats st = storage_.stats();
  result.streamed = true;
  result.ring_bytes = st.ring_bytes;
  result.max_lag_bytes = st.max_lag_bytes;
  result.writer_waits = st.writer_waits;
  result.writer_wait_ms = static_cast<double>(st.writer_wait_ns) / 1e6;
  return result;
}

}  // namespace walbench

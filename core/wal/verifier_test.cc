// Tests of Storage and the WAL verifier: write a correct WAL by hand with a tiny single-threaded
// writer, read it back through memory and file storage, then corrupt it in every way the
// verifier must catch and check that it names the right LSN.
#include <catch2/catch.hpp>

#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/wal/format.h"
#include "core/wal/geometry.h"
#include "core/wal/storage.h"
#include "core/wal/verifier.h"

using namespace walbench;
using Catch::Contains;
using Catch::StartsWith;

namespace {

// A single-threaded WAL writer built from the format functions, independent of the real
// insertion code: reserve MAXALIGN(tot_len) usable bytes, link prev, copy across page headers,
// flag continuations. Pages are kept in a map and written to storage at the end.
class TestWal {
 public:
  struct Rec {
    Lsn start;
    uint64_t bp;  // start BytePos
    uint32_t tot_len;
    uint32_t client;
    uint64_t seq;
  };

  TestWal(WalGeometry g, uint32_t clients) : g_(g), per_client_(clients, 0) {}

  // Append one record. seq defaults to the client's next; prev to the previous record's start.
  // skip_copy reserves the space (and initialises the pages it covers, as buffer
  // initialisation would) but never copies the record: a lost insertion.
  Lsn append(uint32_t tot_len, uint32_t client, std::optional<uint64_t> seq = {},
             std::optional<Lsn> prev = {}, bool skip_copy = false) {
    const uint64_t s = seq.value_or(per_client_.at(client));
    std::vector<uint8_t> buf(tot_len);
    const uint8_t rmid = tot_len == kMinRecordSize ? kRmHeap2 : kRmHeap;
    const uint32_t st = build_record(buf.data(), tot_len, Xid{100 + static_cast<uint32_t>(total_)},
                                     rmid, 0, ClientId{client}, s);
    finish_record(buf.data(), st, prev.value_or(prev_));

    const uint64_t bp = curr_;
    const uint64_t re = bp + tot_len;
    copy(bp, buf.data(), tot_len, bp, re, skip_copy);

    auto page_of = [&](uint64_t x) { return g_.page_number(g_.bytepos_to_lsn(BytePos{x})); };
    auto seg_of = [&](uint64_t x) { return g_.segment_number(g_.bytepos_to_lsn(BytePos{x})); };
    if (page_of(bp) != page_of(bp + kRecordHeaderSize - 1)) ++header_splits;
    if (page_of(re - kTagSize) != page_of(re - 1)) ++tag_splits;
    if (page_of(bp) != page_of(re - 1)) ++page_crossings;
    if (seg_of(bp) != seg_of(re - 1)) ++segment_crossings;
    if (g_.bytepos_to_end_lsn(BytePos{re}).value % g_.page_size == 0) ++exact_page_ends;

    const Lsn start = g_.bytepos_to_lsn(BytePos{bp});
    recs.push_back(Rec{start, bp, tot_len, client, s});
    prev_ = start;
    curr_ = max_align(re);
    ++per_client_.at(client);
    ++total_;
    return start;
  }

  // Append a record that ends exactly `leave` bytes before a page boundary (0: on it).
  Lsn append_leaving(uint64_t leave, uint32_t client) {
    uint64_t page = g_.page_number(g_.bytepos_to_lsn(BytePos{curr_}));
    for (;;) {
      ++page;
      const uint64_t boundary = g_.lsn_to_bytepos(Lsn{page * g_.page_size}).value;
      if (boundary >= curr_ + leave + kMinRecordSize)
        return append(static_cast<uint32_t>(boundary - leave - curr_), client);
    }
  }

  // Append a record that ends `past` usable bytes into a later page (past < kTagSize: its tag
  // is split across the page boundary).
  Lsn append_crossing(uint64_t past, uint32_t client) {
    uint64_t page = g_.page_number(g_.bytepos_to_lsn(BytePos{curr_}));
    for (;;) {
      ++page;
      const uint64_t boundary = g_.lsn_to_bytepos(Lsn{page * g_.page_size}).value;
      if (boundary + past >= curr_ + kMinRecordSize)
        return append(static_cast<uint32_t>(boundary + past - curr_), client);
    }
  }

  void write_to(Storage& st, size_t chunk) const {
    const std::vector<uint8_t> img = image();
    for (size_t off = 0; off < img.size(); off += chunk)
      st.write(Lsn{off}, img.data() + off, std::min(chunk, img.size() - off));
  }

  std::vector<uint8_t> image() const {
    std::vector<uint8_t> img;
    if (pages_.empty()) return img;
    img.resize((pages_.rbegin()->first + 1) * g_.page_size);
    for (const auto& [no, p] : pages_)
      std::memcpy(img.data() + no * g_.page_size, p.data(), p.size());
    return img;
  }

  VerifyExpect expect() const {
    return VerifyExpect{g_.bytepos_to_lsn(BytePos{0}), end(), per_client_, total_};
  }
  Lsn end() const { return g_.bytepos_to_end_lsn(BytePos{curr_}); }
  uint64_t curr() const { return curr_; }
  uint64_t next_seq(uint32_t client) const { return per_client_.at(client); }
  size_t pages() const { return pages_.size(); }

  std::vector<Rec> recs;
  uint64_t header_splits = 0, tag_splits = 0, page_crossings = 0, segment_crossings = 0,
           exact_page_ends = 0;

 private:
  uint8_t* page(uint64_t no) {
    auto [it, fresh] = pages_.try_emplace(no);
    if (fresh) {
      it->second.assign(g_.page_size, 0);
      init_page_header(it->second.data(), Lsn{no * g_.page_size}, g_);
    }
    return it->second.data();
  }

  void copy(uint64_t x, const uint8_t* data, uint64_t n, uint64_t rs, uint64_t re, bool skip) {
    while (n > 0) {
      const Lsn lsn = g_.bytepos_to_lsn(BytePos{x});
      const uint64_t no = g_.page_number(lsn);
      const bool fresh = pages_.find(no) == pages_.end();
      uint8_t* p = page(no);
      const uint64_t off = lsn.value % g_.page_size;
      // A record continuing onto a page flags it (CopyXLogRecordToWAL).
      if (!skip && x > rs && off == g_.header_size(Lsn{no * g_.page_size})) {
        REQUIRE(fresh);
        set_page_contrecord(p, static_cast<uint32_t>(re - x));
      }
      const uint64_t take = std::min<uint64_t>(n, g_.page_size - off);
      if (!skip) std::memcpy(p + off, data, take);
      data += take;
      x += take;
      n -= take;
    }
  }

  WalGeometry g_;
  std::map<uint64_t, std::vector<uint8_t>> pages_;
  std::vector<uint64_t> per_client_;
  uint64_t total_ = 0;
  uint64_t curr_ = 0;  // CurrBytePos
  Lsn prev_{0};        // PrevBytePos, as an LSN
};

// Deterministic sizes: many small records, some page-sized, a few spanning segments, and
// records placed so that headers, tags and ends fall on page boundaries.
TestWal standard_wal(const WalGeometry& g, uint32_t clients, int n) {
  TestWal w(g, clients);
  uint64_t rng = 12345;
  auto next = [&] {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return rng >> 33;
  };
  for (int i = 0; i < n; ++i) {
    const uint32_t c = static_cast<uint32_t>(next() % clients);
    if (i % 17 == 5) {
      w.append_leaving(0, c);  // ends exactly at a page end
    } else if (i % 23 == 7) {
      w.append_leaving(16, c);  // the next header is split 16 + 8
    } else if (i % 29 == 3) {
      w.append_leaving(8, c);  // the next header is split 8 + 16
    } else if (i % 31 == 11) {
      w.append_crossing(4, c);  // its tag is split 6 + 4
    } else if (i % 37 == 13) {
      w.append(static_cast<uint32_t>(2 * g.segment_size + 1000 + next() % 64), c);
    } else {
      const uint64_t k = next() % 10;
      uint32_t size = kMinRecordSize;                                   // the smallest
      if (k >= 4) size = static_cast<uint32_t>(55 + next() % 300);        // a small message
      if (k >= 8) size = static_cast<uint32_t>(g.page_size / 2 + next() % (2 * g.page_size));
      w.append(size, c);
    }
  }
  return w;
}

std::string at(Lsn l) { return "at " + lsn_to_string(l) + ": "; }

// Read-modify-write of bytes in storage (page headers are not covered by any CRC).
void patch(Storage& st, Lsn where, const void* bytes, size_t n) {
  st.write(where, static_cast<const uint8_t*>(bytes), n);
}
void flip(Storage& st, Lsn where, uint8_t mask = 0x01) {
  uint8_t b;
  st.read(where, &b, 1);
  b ^= mask;
  st.write(where, &b, 1);
}
template <class T>
void patch_field(Storage& st, Lsn page, size_t offset, T value) {
  patch(st, Lsn{page.value + offset}, &value, sizeof value);
}

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/walbench-verifier-XXXXXX";
    const char* p = mkdtemp(tmpl);
    REQUIRE(p != nullptr);
    path = p;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

void require_ok(const VerifyResult& r, const TestWal& w) {
  INFO(r.error);
  REQUIRE(r.ok);
  CHECK(r.error.empty());
  CHECK(r.records == w.recs.size());
  CHECK(r.bytes == w.end().value - w.expect().start.value);
}

const WalGeometry kSmall{1024, 4096};

}  // namespace

// ---------------------------------------------------------------------------------------------
// Storage

TEST_CASE("segment file names follow PostgreSQL", "[wal]") {
  const WalGeometry def;
  CHECK(segment_file_name(0, def) == "000000010000000000000000");
  CHECK(segment_file_name(1, def) == "000000010000000000000001");
  CHECK(segment_file_name(255, def) == "0000000100000000000000FF");
  CHECK(segment_file_name(256, def) == "000000010000000100000000");  // 256 segments per 4 GiB
  CHECK(segment_file_name(0x1234, def, 2) == "000000020000001200000034");
  CHECK(segment_file_name(1u << 20, kSmall) == "000000010000000100000000");
}

TEST_CASE("storage keeps bytes across pages and segments; unwritten bytes read as zero", "[wal]") {
  TempDir dir;
  std::unique_ptr<Storage> st;
  SECTION("memory") {
    st = make_memory_storage(kSmall);
    CHECK(std::string(st->kind()) == "memory");
  }
  SECTION("file") {
    st = make_file_storage(kSmall, dir.path + "/wal", true);
    CHECK(std::string(st->kind()) == "file");
  }
  std::vector<uint8_t> data(3 * 4096 + 100);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7 + 1);
  const Lsn start{4096 - 50};  // spans four segments
  st->write(start, data.data(), data.size());
  CHECK(st->bytes_written() == data.size());
  st->sync();
  CHECK(st->syncs() == 1);

  std::vector<uint8_t> back(data.size() + 200, 0xEE);
  st->read(Lsn{start.value - 100}, back.data(), back.size());
  for (size_t i = 0; i < 100; ++i) REQUIRE(back[i] == 0);
  CHECK(std::memcmp(back.data() + 100, data.data(), data.size()) == 0);
  for (size_t i = 100 + data.size(); i < back.size(); ++i) REQUIRE(back[i] == 0);

  std::vector<uint8_t> far(64, 0xEE);
  st->read(Lsn{100 * 4096 + 5}, far.data(), far.size());  // a segment never written
  for (uint8_t b : far) REQUIRE(b == 0);

  // Overwrite in place.
  const uint8_t x[3] = {1, 2, 3};
  st->write(Lsn{4096}, x, 3);
  uint8_t y[3];
  st->read(Lsn{4096}, y, 3);
  CHECK(std::memcmp(x, y, 3) == 0);
}

TEST_CASE("file storage writes PostgreSQL-named segment files and survives reopening", "[wal]") {
  TempDir dir;
  const std::string wal = dir.path + "/pg_wal";  // created on demand
  std::vector<uint8_t> data(2 * 4096, 0x5A);
  {
    auto st = make_file_storage(kSmall, wal, false);
    // Many segments: more than the storage keeps open at once.
    for (uint64_t seg = 0; seg < 40; ++seg) st->write(Lsn{seg * 4096 + 1000}, data.data(), 100);
    st->sync();
    st->write(Lsn{2 * 4096}, data.data(), data.size());
    st->sync();
  }
  CHECK(std::filesystem::exists(wal + "/000000010000000000000000"));
  CHECK(std::filesystem::exists(wal + "/000000010000000000000027"));
  CHECK_FALSE(std::filesystem::exists(wal + "/000000010000000000000028"));
  auto again = make_file_storage(kSmall, wal, true);
  std::vector<uint8_t> back(data.size());
  again->read(Lsn{2 * 4096}, back.data(), back.size());
  CHECK(back == data);
  uint8_t b = 0;
  again->read(Lsn{39 * 4096 + 1099}, &b, 1);
  CHECK(b == 0x5A);
  again->read(Lsn{39 * 4096 + 1100}, &b, 1);
  CHECK(b == 0);
}

TEST_CASE("file storage errors name the path", "[wal]") {
  TempDir dir;
  const std::string file = dir.path + "/not-a-dir";
  { FILE* f = fopen(file.c_str(), "w"); REQUIRE(f != nullptr); fclose(f); }
  CHECK_THROWS_WITH(make_file_storage(kSmall, file + "/wal", true), Contains(file));
  CHECK_THROWS_AS(make_file_storage(kSmall, file, true), std::runtime_error);
  CHECK_THROWS_AS(make_memory_storage(WalGeometry{1000, 4096}), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// The verifier on correct WAL

TEST_CASE("hand-written WAL crossing pages and segments verifies", "[wal]") {
  TestWal w = standard_wal(kSmall, 4, 400);
  // The WAL covers what it must, or the test proves nothing.
  REQUIRE(w.header_splits > 0);
  REQUIRE(w.tag_splits > 0);
  REQUIRE(w.page_crossings > 50);
  REQUIRE(w.segment_crossings > 10);
  REQUIRE(w.exact_page_ends > 0);

  SECTION("memory, written in odd chunks") {
    auto st = make_memory_storage(kSmall);
    w.write_to(*st, 1000);
    require_ok(verify_wal(*st, kSmall, w.expect()), w);
  }
  SECTION("memory, written in one call; records counted by type") {
    auto st = make_memory_storage(kSmall);
    w.write_to(*st, size_t{1} << 40);
    const VerifyResult r = verify_wal(*st, kSmall, w.expect());
    require_ok(r, w);
    std::map<uint16_t, RecordTypeTally> want;
    for (const auto& rec : w.recs) {
      RecordTypeTally& t = want[record_type_key(rec.tot_len == kMinRecordSize ? kRmHeap2 : kRmHeap, 0)];
      ++t.count;
      t.bytes += rec.tot_len;
    }
    CHECK(r.record_types == want);
    CHECK(want.size() == 2);
  }
  SECTION("file, fsync") {
    TempDir dir;
    auto st = make_file_storage(kSmall, dir.path, true);
    w.write_to(*st, 3 * 1024 + 8);
    st->sync();
    CHECK(std::filesystem::exists(dir.path + "/000000010000000000000001"));
    require_ok(verify_wal(*st, kSmall, w.expect()), w);
  }
  SECTION("file, no fsync") {
    TempDir dir;
    auto st = make_file_storage(kSmall, dir.path, false);
    w.write_to(*st, 4096);
    require_ok(verify_wal(*st, kSmall, w.expect()), w);
  }
}

TEST_CASE("default geometry WAL with a record spanning segments verifies", "[wal]") {
  const WalGeometry g;
  TestWal w(g, 2);
  w.append(kMinRecordSize, 0);
  w.append(71, 1);
  w.append_leaving(16, 0);
  w.append(20u << 20, 1);  // 20 MiB: from segment 0 into segment 1
  w.append(8250, 0);
  w.append(kMinRecordSize, 1);
  REQUIRE(w.segment_crossings == 1);
  REQUIRE(w.header_splits == 1);
  auto st = make_memory_storage(g);
  w.write_to(*st, 8192 * 3 + 8);
  require_ok(verify_wal(*st, g, w.expect()), w);
  CHECK(w.recs[0].start == Lsn{40});
}

TEST_CASE("an empty WAL verifies", "[wal]") {
  auto st = make_memory_storage(kSmall);
  const Lsn start = kSmall.bytepos_to_lsn(BytePos{0});
  const VerifyResult r = verify_wal(*st, kSmall, VerifyExpect{start, Lsn{0}, {0, 0}, 0});
  INFO(r.error);
  CHECK(r.ok);
  CHECK(r.records == 0);
  CHECK(r.bytes == 0);
}

TEST_CASE("verifying from a record in the middle of the WAL", "[wal]") {
  TestWal w(kSmall, 2);
  for (int i = 0; i < 30; ++i) w.append(100 + 8 * i, 0);
  // Client 1's records start mid-page, after client 0's.
  for (int i = 0; i < 30; ++i) w.append(300, 1);
  auto st = make_memory_storage(kSmall);
  w.write_to(*st, 1024);
  const TestWal::Rec& first1 = w.recs[30];
  REQUIRE(first1.start.value % 1024 > 40);  // mid-page: the page's contrecord state is unknown
  VerifyExpect e{first1.start, w.end(), {0, 30}, 30};
  const VerifyResult r = verify_wal(*st, kSmall, e);
  INFO(r.error);
  CHECK(r.ok);
  CHECK(r.records == 30);
  // From the beginning the same expectation fails on client 0's records.
  e.start = kSmall.bytepos_to_lsn(BytePos{0});
  const VerifyResult r0 = verify_wal(*st, kSmall, e);
  CHECK_FALSE(r0.ok);
  CHECK(r0.error == at(e.start) + "client 0 seq 0 beyond the 0 records expected");
}

// ---------------------------------------------------------------------------------------------
// Corruption: each case is detected, at the right LSN, after the right number of records.

TEST_CASE("verifier detects corrupted WAL at the right LSN", "[wal]") {
  const WalGeometry& g = kSmall;
  TestWal w = standard_wal(g, 4, 200);
  auto st = make_memory_storage(g);
  w.write_to(*st, 4096);
  require_ok(verify_wal(*st, g, w.expect()), w);  // the control

  // The first record spanning at least three pages, not the first record.
  size_t big = 0;
  for (size_t i = 1; i < w.recs.size() && big == 0; ++i)
    if (w.recs[i].tot_len > 2 * g.page_size) big = i;
  REQUIRE(big > 0);
  const TestWal::Rec& rb = w.recs[big];
  // A page that record continues onto (its second page).
  const Lsn cont_page = Lsn{(g.page_number(rb.start) + 1) * g.page_size};
  const uint64_t cont_first = g.lsn_to_bytepos(cont_page).value;
  const uint32_t cont_rem = static_cast<uint32_t>(rb.bp + rb.tot_len - cont_first);

  SECTION("flipped payload byte") {
    flip(*st, g.bytepos_to_lsn(BytePos{rb.bp + rb.tot_len - 5}));
    const VerifyResult r = verify_wal(*st, g, w.expect());
    CHECK_FALSE(r.ok);
    CHECK_THAT(r.error, StartsWith(at(rb.start) + "incorrect resource manager data checksum"));
    CHECK(r.records == big);
    CHECK(r.bytes == rb.start.value - w.expect().start.value);
  }
  SECTION("flipped filler byte of a record") {
    const TestWal::Rec& rec = w.recs[big + 1];
    flip(*st, g.bytepos_to_lsn(BytePos{rec.bp + rec.tot_len - 1}), 0x80);
    const VerifyResult r = verify_wal(*st, g, w.expect());
    CHECK_THAT(r.error, StartsWith(at(rec.start) + "incorrect resource manager data checksum"));
    CHECK(r.records == big + 1);
  }
  SECTION("flipped header byte (xid)") {
    flip(*st, g.bytepos_to_lsn(BytePos{rb.bp + 5}));
    const VerifyResult r = verify_wal(*st, g, w.expect());
    CHECK_THAT(r.error, StartsWith(at(rb.start) + "incorrect resource manager data checksum"));
  }
  SECTION("tot_len zeroed, huge, or past the end") {
    const Lsn where = rb.start;
    patch_field<uint32_t>(*st, where, 0, 10);
    VerifyResult r = verify_wal(*st, g, w.expect());
    CHECK(r.error == at(where) + "invalid record length: expected at least 36, got 10");
    patch_field<uint32_t>(*st, where, 0, 0xFFFFFFFF);
    r = verify_wal(*st, g, w.expect());
    CHECK_THAT(r.error, StartsWith(at(where) + "invalid record length 4294967295"));
    patch_field<uint32_t>(*st, where, 0, static_cast<uint32_t>(w.curr() - rb.bp + 8));
    r = verify_wal(*st, g, w.expect());
    CHECK_THAT(r.error, StartsWith(at(where) + "record length"));
    CHECK_THAT(r.error, Contains("extends past the end of WAL " + lsn_to_string(w.end())));
    CHECK(r.records == big);
  }
  SECTION("bad resource manager id") {
    const TestWal::Rec& rec = w.recs[3];
    patch_field<uint8_t>(*st, rec.start, 17, 99);
    const VerifyResult r = verify_wal(*st, g, w.expect());
    CHECK(r.error == at(rec.start) + "invalid resource manager ID 99");
  }
  SECTION("main data header that does not fill the record, or a bad block id (valid CRC)") {
    const TestWal::Rec* rec = nullptr;  // a record within one page, to patch it in place
    for (size_t i = 3; i < w.recs.size() && rec == nullptr; ++i)
      if (g.page_number(w.recs[i].start) ==
          g.page_number(g.bytepos_to_end_lsn(BytePos{w.recs[i].bp + w.recs[i].tot_len})) &&
          w.recs[i].tot_len < 200)
        rec = &w.recs[i];
    REQUIRE(rec != nullptr);
    std::vector<uint8_t> bytes(rec->tot_len);
    st->read(rec->start, bytes.data(), bytes.size());
    REQUIRE(bytes[24] == kBlockIdDataShort);
    auto rewrite = [&] {
      const uint32_t crc = compute_record_crc(bytes.data(), rec->tot_len);
      std::memcpy(bytes.data() + kRecordCrcOffset, &crc, sizeof crc);
      st->write(rec->start, bytes.data(), bytes.size());
      return verify_wal(*st, g, w.expect());
    };
    bytes[25] -= 1;
    CHECK(rewrite().error == at(rec->start) + "main data length " + std::to_string(bytes[25]) +
                                 " (short header) does not fill the record's " +
                                 std::to_string(rec->tot_len - 24) + " bytes after its header");
    bytes[25] += 1;
    bytes[24] = 7;
    CHECK(rewrite().error == at(rec->start) +
                                 "invalid block_id 7: expected the main data's (255 or 254)");
    bytes[24] = kBlockIdDataShort;
    CHECK(rewrite().ok);  // the control: restored
  }
  SECTION("bad magic, mid-segment page and segment start page") {
    const Lsn p5{5 * 1024};
    patch_field<uint16_t>(*st, p5, 0, 0xD117);
    VerifyResult r = verify_wal(*st, g, w.expect());
    CHECK(r.error == at(p5) + "invalid magic number D117 in page header");
    CHECK(r.error == "at 0/00001400: invalid magic number D117 in page header");
    const Lsn seg1{4096};
    patch_field<uint16_t>(*st, seg1, 0, 0);
    r = verify_wal(*st, g, w.expect());
    CHECK(r.error == "at 0/00001000: invalid magic number 0000 in page header");
    // The records before the page were walked; none after it.
    uint64_t before = 0;
    for (const auto& rec : w.recs) before += rec.start < seg1 ? 1 : 0;
    CHECK(r.records <= before);
    CHECK(r.records + 1 >= before);
  }
  SECTION("stale pageaddr (a recycled page)") {
    const Lsn p6{6 * 1024};
    patch_field<uint64_t>(*st, p6, 8, p6.value - g.segment_size);
    const VerifyResult r = verify_wal(*st, g, w.expect());
    CHECK(r.error == at(p6) + "unexpected pageaddr 0/00000800 in page header");
  }
  SECTION("long header: flag, system id, sizes") {
    const Lsn seg2{2 * 4096};
    SECTION("flag missing") {
      patch_field<uint16_t>(*st, seg2, 2, 0);
      CHECK_THAT(verify_wal(*st, g, w.expect()).error,
                 StartsWith(at(seg2) + "first page of a segment lacks the long header flag"));
    }
    SECTION("flag on a page that does not start a segment") {
      const Lsn p{2 * 4096 + 1024};
      uint16_t info;
      st->read(Lsn{p.value + 2}, reinterpret_cast<uint8_t*>(&info), 2);
      patch_field<uint16_t>(*st, p, 2, static_cast<uint16_t>(info | kPageLongHeader));
      CHECK_THAT(verify_wal(*st, g, w.expect()).error,
                 StartsWith(at(p) + "unexpected long header flag"));
    }
    SECTION("system id") {
      patch_field<uint64_t>(*st, seg2, 24, 42);
      CHECK_THAT(verify_wal(*st, g, w.expect()).error,
                 StartsWith(at(seg2) + "WAL file is from a different system"));
    }
    SECTION("segment size") {
      patch_field<uint32_t>(*st, seg2, 32, 8192);
      CHECK(verify_wal(*st, g, w.expect()).error ==
            at(seg2) + "incorrect segment size 8192 in page header, expected 4096");
    }
    SECTION("page size") {
      patch_field<uint32_t>(*st, seg2, 36, 2048);
      CHECK(verify_wal(*st, g, w.expect()).error ==
            at(seg2) + "incorrect page size 2048 in page header, expected 1024");
    }
  }
  SECTION("unknown info bits and wrong timeline") {
    const Lsn p{3 * 1024};
    SECTION("info") {
      patch_field<uint16_t>(*st, p, 2, 0x0010);
      CHECK(verify_wal(*st, g, w.expect()).error ==
            at(p) + "invalid info bits 0010 in page header");
    }
    SECTION("timeline") {
      patch_field<uint32_t>(*st, p, 4, 2);
      CHECK(verify_wal(*st, g, w.expect()).error == at(p) + "unexpected timeline 2 in page header");
    }
  }
  SECTION("wrong rem_len") {
    patch_field<uint32_t>(*st, cont_page, 16, cont_rem + 8);
    const VerifyResult r = verify_wal(*st, g, w.expect());
    CHECK(r.error == at(cont_page) + "invalid contrecord length " + std::to_string(cont_rem + 8) +
                         " (expected " + std::to_string(cont_rem) + ")");
    CHECK(r.records == big);
  }
  SECTION("missing contrecord flag") {
    patch_field<uint16_t>(*st, cont_page, 2, 0);
    CHECK_THAT(verify_wal(*st, g, w.expect()).error,
               StartsWith(at(cont_page) + "there is no contrecord flag"));
  }
  SECTION("contrecord flag or rem_len on a page no record continues onto") {
    // A page whose first usable byte starts a record (the record before ended on the boundary).
    std::optional<Lsn> fresh;
    for (size_t i = 1; i < w.recs.size() && !fresh; ++i)
      if (w.recs[i].start.value % g.page_size == g.header_size(g.page_start(w.recs[i].start)))
        fresh = g.page_start(w.recs[i].start);
    REQUIRE(fresh.has_value());
    SECTION("flag") {
      patch_field<uint16_t>(*st, *fresh, 2,
                            static_cast<uint16_t>(g.is_segment_start(*fresh) ? 3 : 1));
      CHECK_THAT(verify_wal(*st, g, w.expect()).error,
                 StartsWith(at(*fresh) + "unexpected contrecord flag"));
    }
    SECTION("rem_len") {
      patch_field<uint32_t>(*st, *fresh, 16, 8);
      CHECK(verify_wal(*st, g, w.expect()).error ==
            at(*fresh) + "invalid contrecord length 8 (expected 0)");
    }
  }
  SECTION("end of WAL beyond what was written") {
    VerifyExpect e = w.expect();
    e.end = g.bytepos_to_end_lsn(BytePos{w.curr() + 64});
    const VerifyResult r = verify_wal(*st, g, e);
    CHECK(r.error == at(g.bytepos_to_lsn(BytePos{w.curr()})) +
                         "invalid record length: expected at least 36, got 0");
    CHECK(r.records == w.recs.size());
  }
  SECTION("end of WAL cutting the last record") {
    VerifyExpect e = w.expect();
    const TestWal::Rec& last = w.recs.back();
    e.end = g.bytepos_to_end_lsn(BytePos{max_align(last.bp + last.tot_len) - 8});
    CHECK_THAT(verify_wal(*st, g, e).error, StartsWith(at(last.start) + "record length"));
  }
  SECTION("expected counts do not match") {
    VerifyExpect e = w.expect();
    SECTION("a client expects one more record") {
      e.records_per_client[2] += 1;
      e.total_records += 1;
      CHECK(verify_wal(*st, g, e).error ==
            at(w.end()) + "end of WAL reached with " + std::to_string(w.next_seq(2)) +
                " records of client 2, expected " + std::to_string(w.next_seq(2) + 1));
    }
    SECTION("one more record in total") {
      e.total_records += 1;
      CHECK(verify_wal(*st, g, e).error ==
            at(w.end()) + "end of WAL reached after " + std::to_string(w.recs.size()) +
                " records, expected " + std::to_string(w.recs.size() + 1));
    }
    SECTION("a client expects one record fewer") {
      e.records_per_client[1] -= 1;
      const TestWal::Rec* last1 = nullptr;
      for (const auto& rec : w.recs)
        if (rec.client == 1) last1 = &rec;
      REQUIRE(last1 != nullptr);
      CHECK_THAT(verify_wal(*st, g, e).error,
                 StartsWith(at(last1->start) + "client 1 seq " + std::to_string(last1->seq) +
                            " beyond the"));
    }
    SECTION("fewer clients than tags") {
      e.records_per_client.resize(3);
      const TestWal::Rec* first3 = nullptr;
      for (const auto& rec : w.recs)
        if (rec.client == 3 && first3 == nullptr) first3 = &rec;
      REQUIRE(first3 != nullptr);
      CHECK_THAT(verify_wal(*st, g, e).error,
                 StartsWith(at(first3->start) + "record tagged with client 3"));
    }
  }
  SECTION("start or end inside a page header, or not aligned") {
    VerifyExpect e = w.expect();
    e.start = Lsn{10};
    CHECK(verify_wal(*st, g, e).error == "at 0/0000000A: start position lies inside a page header");
    e = w.expect();
    e.end = Lsn{1024 + 8};
    CHECK(verify_wal(*st, g, e).error == "at 0/00000408: end position lies inside a page header");
    e = w.expect();
    e.end = Lsn{w.end().value - 4};  // a usable byte, but not a MAXALIGNed position
    CHECK_THAT(verify_wal(*st, g, e).error, Contains("not MAXALIGNed"));
  }
}

TEST_CASE("verifier detects records written wrongly by the writer", "[wal]") {
  const WalGeometry& g = kSmall;
  TestWal w(g, 3);
  for (int i = 0; i < 40; ++i) w.append(kMinRecordSize + 37 * (i % 11), static_cast<uint32_t>(i % 3));
  // The next record's header is split across pages; it is the one we get wrong below.
  w.append_leaving(16, 0);
  const size_t k = w.recs.size();
  const Lsn prev_ok = w.recs[k - 1].start;
  const Lsn prev_bad = w.recs[k - 2].start;

  SECTION("wrong prev link") {
    const Lsn bad = w.append(200, 1, {}, prev_bad);
    REQUIRE(w.header_splits == 1);
    for (int i = 0; i < 10; ++i) w.append(90, 2);
    auto st = make_memory_storage(g);
    w.write_to(*st, 4096);
    const VerifyResult r = verify_wal(*st, g, w.expect());
    CHECK(r.error == at(bad) + "record's prev link " + lsn_to_string(prev_bad) +
                         " does not match previous record " + lsn_to_string(prev_ok));
    CHECK(r.records == k);
  }
  SECTION("first record's prev link not 0") {
    TestWal w2(g, 1);
    w2.append(50, 0, {}, Lsn{0x28});
    auto st = make_memory_storage(g);
    w2.write_to(*st, 4096);
    CHECK(verify_wal(*st, g, w2.expect()).error ==
          "at 0/00000028: record's prev link 0/00000028 does not match previous record 0/00000000");
  }
  SECTION("missing record: a reservation never copied") {
    const Lsn gap = w.append(500, 1, {}, {}, /*skip_copy=*/true);
    for (int i = 0; i < 10; ++i) w.append(90, 2);
    auto st = make_memory_storage(g);
    w.write_to(*st, 4096);
    const VerifyResult r = verify_wal(*st, g, w.expect());
    CHECK(r.error == at(gap) + "invalid record length: expected at least 36, got 0");
    CHECK(r.records == k);
  }
  SECTION("missing record: a seq skipped") {
    const uint64_t s = w.next_seq(1);
    const Lsn skipped = w.append(120, 1, s + 1);
    auto st = make_memory_storage(g);
    w.write_to(*st, 4096);
    CHECK(verify_wal(*st, g, w.expect()).error ==
          at(skipped) + "out of order or missing record: client 1 seq " + std::to_string(s + 1) +
              " where seq " + std::to_string(s) + " was expected");
  }
  SECTION("duplicated tag") {
    const uint64_t s = w.next_seq(1);
    w.append(120, 1, s);
    w.append(kMinRecordSize, 2);
    const Lsn dup = w.append(120, 1, s);
    w.append(kMinRecordSize, 0);
    auto st = make_memory_storage(g);
    w.write_to(*st, 4096);
    const VerifyResult r = verify_wal(*st, g, w.expect());
    CHECK(r.error == at(dup) + "duplicate record: client 1 seq " + std::to_string(s) +
                         " already seen (expected seq " + std::to_string(s + 1) + ")");
    CHECK(r.records == k + 2);
  }
  SECTION("out-of-order seq") {
    const uint64_t s = w.next_seq(2);
    const Lsn first = w.append(64, 2, s + 1);
    w.append(64, 2, s);
    auto st = make_memory_storage(g);
    w.write_to(*st, 4096);
    CHECK(verify_wal(*st, g, w.expect()).error ==
          at(first) + "out of order or missing record: client 2 seq " + std::to_string(s + 1) +
              " where seq " + std::to_string(s) + " was expected");
  }
  SECTION("file storage: corruption written through another handle") {
    for (int i = 0; i < 10; ++i) w.append(90, 2);
    TempDir dir;
    auto st = make_file_storage(g, dir.path, true);
    w.write_to(*st, 2048);
    st->sync();
    require_ok(verify_wal(*st, g, w.expect()), w);
    const TestWal::Rec& rec = w.recs[k + 3];
    {
      auto other = make_file_storage(g, dir.path, false);
      flip(*other, g.bytepos_to_lsn(BytePos{rec.bp + 30}), 0x10);
    }
    const VerifyResult r = verify_wal(*st, g, w.expect());
    CHECK_THAT(r.error,
               StartsWith(at(rec.start) + "incorrect resource manager data checksum in record"));
    CHECK(r.records == k + 3);
  }
}

TEST_CASE("verifier survives garbage", "[wal]") {
  const WalGeometry& g = kSmall;
  TestWal w = standard_wal(g, 2, 60);
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    auto st = make_memory_storage(g);
    std::vector<uint8_t> img = w.image();
    uint64_t x = seed * 0x9E3779B97F4A7C15ull;
    auto rnd = [&] {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      return x;
    };
    if (seed <= 10) {
      for (auto& b : img) b = static_cast<uint8_t>(rnd());  // all garbage
    } else {
      // Valid page headers, garbage in a stretch of records, or random bytes hit.
      const size_t n = seed <= 20 ? 1 : 40;
      for (size_t i = 0; i < n; ++i) img[rnd() % img.size()] ^= static_cast<uint8_t>(rnd() | 1);
    }
    st->write(Lsn{0}, img.data(), img.size());
    const VerifyResult r = verify_wal(*st, g, w.expect());
    INFO("seed " << seed << ": " << r.error);
    // A flip that only hits alignment padding is harmless; otherwise it must be caught.
    if (seed <= 10 || seed > 20) CHECK_FALSE(r.ok);
    if (!r.ok) CHECK_THAT(r.error, StartsWith("at "));
    CHECK(r.records <= w.recs.size());
  }
}

TEST_CASE("verifier refuses an invalid geometry instead of crashing", "[wal]") {
  auto st = make_memory_storage(kSmall);
  const VerifyResult r = verify_wal(*st, WalGeometry{0, 0}, VerifyExpect{Lsn{40}, Lsn{0}, {}, 0});
  CHECK_FALSE(r.ok);
  CHECK_THAT(r.error, Contains("invalid WAL geometry"));
}

// ---------------------------------------------------------------------------------------------
// Ring storage and the streaming verifier (issue 11): the same WAL, written by a thread in
// pieces through a ring far smaller than it, checked while it is written.

namespace {

// A WAL of many laps of kSmall's smallest ring (4 pages of 1 KiB): records of 36 B to 3 KiB
// from 3 clients, crossing pages and segments.
TestWal many_laps_wal() {
  TestWal w(kSmall, 3);
  uint64_t x = 12345;
  for (int i = 0; i < 3000; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    w.append(kMinRecordSize + static_cast<uint32_t>((x >> 33) % 3000), static_cast<uint32_t>(i % 3));
  }
  return w;
}

// Writes [0, end) of the image in pieces of `piece` bytes, as XLogWrite does: in order, contiguous.
void write_streamed(const TestWal& w, StreamedStorage& st, size_t piece) {
  const std::vector<uint8_t> img = w.image();
  const uint64_t end = w.end().value;
  for (uint64_t off = 0; off < end; off += piece)
    st.write(Lsn{off}, img.data() + off, static_cast<size_t>(std::min<uint64_t>(piece, end - off)));
}

}  // namespace

TEST_CASE("streaming verifier checks a WAL many times the ring's size while it is written",
          "[wal][stream]") {
  const TestWal w = many_laps_wal();
  auto st = make_ring_storage(kSmall, 0, /*reader=*/true);  // rounded up to 4 chunks
  REQUIRE(st->stats().ring_bytes == 4 * kSmall.page_size);
  REQUIRE(w.end().value > 100 * st->stats().ring_bytes);  // the ring is reused 100+ times
  StreamingVerifier verifier(*st, kSmall, kSmall.bytepos_to_lsn(BytePos{0}), 3);
  std::thread writer([&] { write_streamed(w, *st, 777); });
  writer.join();
  const VerifyResult r = verifier.finish(w.expect());
  INFO(r.error);
  CHECK(r.ok);
  CHECK(r.records == w.recs.size());
  CHECK(r.bytes == w.end().value - w.expect().start.value);
  CHECK(r.streamed);
  CHECK(r.ring_bytes == 4 * kSmall.page_size);
  CHECK(r.max_lag_bytes <= r.ring_bytes);  // the writer never overran the reader
  CHECK(st->bytes_written() == w.end().value);
}

TEST_CASE("streaming verifier names the LSN of a record corrupted mid-run, and the writer "
          "finishes", "[wal][stream]") {
  const TestWal w = many_laps_wal();
  const TestWal::Rec& victim = w.recs[w.recs.size() / 2];  // dozens of laps into the run
  auto st = make_ring_storage(kSmall, 0, /*reader=*/true);
  st->plant_corruption(victim.start.value + kRecordCrcOffset);  // a byte of the stored CRC
  StreamingVerifier verifier(*st, kSmall, kSmall.bytepos_to_lsn(BytePos{0}), 3);
  std::thread writer([&] { write_streamed(w, *st, 1000); });
  writer.join();  // the verifier stopped at the bad record; the writer must not wait for it
  const VerifyResult r = verifier.finish(w.expect());
  CHECK_FALSE(r.ok);
  CHECK_THAT(r.error, StartsWith("at " + lsn_to_string(victim.start) +
                                 ": incorrect resource manager data checksum"));
  CHECK(r.records == w.recs.size() / 2);  // every record before it passed
}

TEST_CASE("streaming verifier: a run whose end is inside a record, and an empty WAL",
          "[wal][stream]") {
  SECTION("declared end short of the written record") {
    TestWal w(kSmall, 1);
    w.append(2000, 0);
    auto st = make_ring_storage(kSmall, 0, true);
    StreamingVerifier verifier(*st, kSmall, kSmall.bytepos_to_lsn(BytePos{0}), 1);
    const std::vector<uint8_t> img = w.image();
    st->write(Lsn{0}, img.data(), 1500);  // the run stopped before the record was written whole
    VerifyExpect ex = w.expect();
    ex.end = Lsn{1528};  // a valid, MAXALIGNed position inside the record
    const VerifyResult r = verifier.finish(ex);
    CHECK_FALSE(r.ok);
    CHECK_THAT(r.error, Contains("extends past the end of WAL"));
  }
  SECTION("nothing inserted: the end is LSN 0") {
    auto st = make_ring_storage(kSmall, 0, true);
    StreamingVerifier verifier(*st, kSmall, kSmall.bytepos_to_lsn(BytePos{0}), 2);
    const VerifyResult r =
        verifier.finish(VerifyExpect{kSmall.bytepos_to_lsn(BytePos{0}),
                                     kSmall.bytepos_to_end_lsn(BytePos{0}), {0, 0}, 0});
    INFO(r.error);
    CHECK(r.ok);
    CHECK(r.records == 0);
  }
  SECTION("abandoned without finish (a failed run): the destructor ends the walk") {
    const TestWal w = many_laps_wal();
    auto st = make_ring_storage(kSmall, 0, true);
    {
      StreamingVerifier verifier(*st, kSmall, kSmall.bytepos_to_lsn(BytePos{0}), 3);
      write_streamed(w, *st, 4096);
    }  // must not hang
    SUCCEED();
  }
}

TEST_CASE("ring storage: bytes of a reused chunk cannot be read, and a writer without a reader "
          "never waits", "[wal][stream]") {
  const TestWal w = many_laps_wal();
  auto st = make_ring_storage(kSmall, 0, /*reader=*/false);
  write_streamed(w, *st, 3000);
  CHECK(st->stats().writer_waits == 0);
  uint8_t b[16];
  CHECK_THROWS_WITH(st->read(Lsn{0}, b, sizeof b), Contains("was recycled"));
  // The last lap is still there, and reads as the WAL did.
  const std::vector<uint8_t> img = w.image();
  const uint64_t last = w.end().value - sizeof b;
  st->read(Lsn{last}, b, sizeof b);
  CHECK(std::memcmp(b, img.data() + last, sizeof b) == 0);
  // A write that does not continue the WAL is a bug, not a silent hole.
  CHECK_THROWS_WITH(st->write(Lsn{w.end().value + 8}, b, 8), Contains("does not continue"));
}

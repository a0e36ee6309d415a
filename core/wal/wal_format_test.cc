// Tests of the WAL geometry (BytePos <-> LSN), CRC-32C and the page/record format.
#include <catch2/catch.hpp>

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <isa-l/crc.h>

#include "core/wal/crc32c.h"
#include "core/wal/format.h"
#include "core/wal/geometry.h"

using namespace walbench;

namespace {

// REQUIRE is slow in a loop of millions: test cheaply, and only hand a failure to Catch.
#define FAST_REQUIRE(expr, context) \
  do {                              \
    if (!(expr)) {                  \
      INFO(context);                \
      REQUIRE(expr);                \
    }                               \
  } while (0)

// An independent model of the layout: walk the LSN space byte by byte and count usable bytes.
// Returns, for every LSN in [0, limit), the BytePos of the byte at that LSN or -1 inside a header.
std::vector<int64_t> brute_force_positions(const WalGeometry& g, uint64_t limit) {
  std::vector<int64_t> pos(limit, -1);
  int64_t next = 0;
  for (uint64_t l = 0; l < limit; ++l) {
    const uint64_t off = l % g.page_size;
    const uint64_t hdr = (l % g.segment_size) < g.page_size ? 40 : 24;
    if (off >= hdr) pos[l] = next++;
  }
  return pos;
}

// Check every LSN in [0, limit) against the brute-force model, both directions, both flavours.
void check_against_model(const WalGeometry& g, uint64_t limit) {
  const std::vector<int64_t> pos = brute_force_positions(g, limit);
  uint64_t checked = 0;
  for (uint64_t l = 0; l < limit; ++l) {
    const uint64_t off = l % g.page_size;
    if (pos[l] >= 0) {
      const BytePos p{static_cast<uint64_t>(pos[l])};
      const bool first_usable = l == 0 || pos[l - 1] < 0;  // first usable byte of its page
      FAST_REQUIRE(g.bytepos_to_lsn(p) == Lsn{l}, "lsn " << l);
      FAST_REQUIRE(g.lsn_to_bytepos(Lsn{l}) == p, "lsn " << l);
      // End flavour: an end exactly on a page boundary stays at the page start.
      FAST_REQUIRE(g.bytepos_to_end_lsn(p) == (first_usable ? Lsn{l - off} : Lsn{l}), "lsn " << l);
      FAST_REQUIRE(g.is_valid_position(Lsn{l}), "lsn " << l);
      ++checked;
    } else if (off == 0) {
      // A page start (end flavour) names the position of the page's first usable byte.
      const uint64_t first = l + g.header_size(Lsn{l});
      const auto want = static_cast<uint64_t>(pos[first]);
      FAST_REQUIRE(g.lsn_to_bytepos(Lsn{l}).value == want, "lsn " << l);
      FAST_REQUIRE(g.is_valid_position(Lsn{l}), "lsn " << l);
    } else {
      FAST_REQUIRE(!g.is_valid_position(Lsn{l}), "lsn " << l);
    }
  }
  REQUIRE(checked > 0);
}

// Round trips over every position within `radius` of page and segment boundaries.
void check_round_trips_near_boundaries(const WalGeometry& g, uint64_t segments, uint64_t radius) {
  uint64_t checked = 0;
  for (uint64_t seg = 0; seg < segments; ++seg) {
    for (uint64_t page = 0; page < g.pages_per_segment(); ++page) {
      const bool near_seg_edge = page < 3 || page + 3 >= g.pages_per_segment();
      if (!near_seg_edge && page % 97 != 0) continue;  // keep big geometries fast
      const Lsn ps{seg * g.segment_size + page * g.page_size};
      const uint64_t first = g.lsn_to_bytepos(ps).value;
      const uint64_t lo = first >= radius ? first - radius : 0;
      for (uint64_t b = lo; b < first + radius; ++b) {
        const BytePos p{b};
        const Lsn s = g.bytepos_to_lsn(p);
        const Lsn e = g.bytepos_to_end_lsn(p);
        FAST_REQUIRE(g.lsn_to_bytepos(s) == p, "bytepos " << b);
        FAST_REQUIRE(g.lsn_to_bytepos(e) == p, "bytepos " << b);
        // A start position never points into a page header.
        FAST_REQUIRE(s.value % g.page_size >= g.header_size(g.page_start(s)), "bytepos " << b);
        // The flavours differ exactly at a page boundary, by the header.
        const bool on_boundary = e.value % g.page_size == 0 && s == e + g.header_size(e);
        FAST_REQUIRE((e == s || on_boundary), "bytepos " << b);
        // Consecutive positions are consecutive bytes, except across a page header.
        if (b > lo) {
          const Lsn before = g.bytepos_to_lsn(BytePos{b - 1});
          FAST_REQUIRE((s == before + 1 || (e == before + 1 && on_boundary)), "bytepos " << b);
        }
        ++checked;
      }
    }
  }
  REQUIRE(checked > 0);
}

}  // namespace

TEST_CASE("geometry constants match PostgreSQL", "[wal]") {
  const WalGeometry g;
  CHECK(g.page_size == 8192);
  CHECK(g.segment_size == 16u << 20);
  CHECK(g.usable_per_page() == 8168);
  CHECK(g.pages_per_segment() == 2048);
  CHECK(g.usable_per_segment() == 16728048);
  CHECK(WalGeometry::kShortHeader == 24);
  CHECK(WalGeometry::kLongHeader == 40);
  CHECK_NOTHROW(g.validate());

  const WalGeometry small{1024, 4096};
  CHECK(small.usable_per_page() == 1000);
  CHECK(small.usable_per_segment() == 4 * 1000 - 16);
}

TEST_CASE("bytepos <-> lsn at known default positions", "[wal]") {
  const WalGeometry g;
  const uint64_t seg = 16u << 20;
  // BytePos 0 is the first usable byte of segment 0.
  CHECK(g.bytepos_to_lsn(BytePos{0}) == Lsn{40});
  CHECK(g.bytepos_to_end_lsn(BytePos{0}) == Lsn{0});
  CHECK(g.lsn_to_bytepos(Lsn{40}) == BytePos{0});
  CHECK(g.lsn_to_bytepos(Lsn{0}) == BytePos{0});
  // Last usable byte of the first page, then the page boundary.
  CHECK(g.bytepos_to_lsn(BytePos{8151}) == Lsn{8191});
  CHECK(g.bytepos_to_lsn(BytePos{8152}) == Lsn{8192 + 24});
  CHECK(g.bytepos_to_end_lsn(BytePos{8152}) == Lsn{8192});
  CHECK(g.lsn_to_bytepos(Lsn{8192}) == BytePos{8152});
  CHECK(g.lsn_to_bytepos(Lsn{8192 + 24}) == BytePos{8152});
  // Second page to third.
  CHECK(g.bytepos_to_lsn(BytePos{8152 + 8168}) == Lsn{2 * 8192 + 24});
  CHECK(g.bytepos_to_end_lsn(BytePos{8152 + 8168}) == Lsn{2 * 8192});
  // Segment boundary.
  CHECK(g.bytepos_to_lsn(BytePos{16728048}) == Lsn{seg + 40});
  CHECK(g.bytepos_to_end_lsn(BytePos{16728048}) == Lsn{seg});
  CHECK(g.bytepos_to_lsn(BytePos{16728047}) == Lsn{seg - 1});
  CHECK(g.bytepos_to_end_lsn(BytePos{16728047}) == Lsn{seg - 1});
  CHECK(g.lsn_to_bytepos(Lsn{seg}) == BytePos{16728048});
  CHECK(g.lsn_to_bytepos(Lsn{seg + 40}) == BytePos{16728048});
  CHECK(g.lsn_to_bytepos(Lsn{seg + 8192 + 24}) == BytePos{16728048 + 8152});
  // Far away: segment 1000, page 7, offset 100.
  const uint64_t far = 1000 * seg + 7 * 8192 + 100;
  const uint64_t far_pos = 1000ull * 16728048 + 8152 + 6 * 8168 + (100 - 24);
  CHECK(g.lsn_to_bytepos(Lsn{far}) == BytePos{far_pos});
  CHECK(g.bytepos_to_lsn(BytePos{far_pos}) == Lsn{far});

  CHECK(g.page_number(Lsn{8192 * 5 + 3}) == 5);
  CHECK(g.page_start(Lsn{8192 * 5 + 3}) == Lsn{8192 * 5});
  CHECK(g.is_segment_start(Lsn{seg * 3}));
  CHECK_FALSE(g.is_segment_start(Lsn{seg * 3 + 8192}));
  CHECK(g.header_size(Lsn{seg * 3}) == 40);
  CHECK(g.header_size(Lsn{seg * 3 + 8192}) == 24);
  CHECK(g.segment_number(Lsn{seg * 3 + 5}) == 3);
}

TEST_CASE("bytepos <-> lsn against a brute-force model of small geometries", "[wal]") {
  SECTION("page 1024, segment 4096") { check_against_model(WalGeometry{1024, 4096}, 5 * 4096); }
  SECTION("page 64, segment 128 (smallest)") {
    check_against_model(WalGeometry{64, 128}, 20 * 128);
  }
  SECTION("page 256, segment 4096") { check_against_model(WalGeometry{256, 4096}, 3 * 4096); }
  SECTION("default, first 3 MiB") { check_against_model(WalGeometry{}, 3u << 20); }
}

TEST_CASE("bytepos -> lsn -> bytepos round trips near every boundary", "[wal]") {
  SECTION("page 1024, segment 4096") { check_round_trips_near_boundaries({1024, 4096}, 6, 48); }
  SECTION("page 64, segment 256") { check_round_trips_near_boundaries({64, 256}, 6, 48); }
  SECTION("default") { check_round_trips_near_boundaries(WalGeometry{}, 3, 64); }
  SECTION("page 32 KiB, segment 1 GiB") {
    check_round_trips_near_boundaries({32768, uint64_t{1} << 30}, 2, 64);
  }
}

TEST_CASE("geometry validation", "[wal]") {
  auto validate = [](uint32_t page, uint64_t seg) { WalGeometry{page, seg}.validate(); };
  CHECK_NOTHROW(validate(1024, 4096));
  CHECK_NOTHROW(validate(64, 128));
  CHECK_NOTHROW(validate(65536, uint64_t{1} << 30));
  CHECK_THROWS_AS(validate(1000, 4096), std::invalid_argument);  // not a power of two
  CHECK_THROWS_AS(validate(32, 4096), std::invalid_argument);    // smaller than a long header
  CHECK_THROWS_AS(validate(0, 4096), std::invalid_argument);
  CHECK_THROWS_AS(validate(1024, 1024), std::invalid_argument);  // one page per segment
  CHECK_THROWS_AS(validate(1024, 512), std::invalid_argument);
  CHECK_THROWS_AS(validate(1024, 5000), std::invalid_argument);
  CHECK_THROWS_AS(validate(8192, uint64_t{1} << 31), std::invalid_argument);
  CHECK_THROWS_WITH(validate(1000, 4096), Catch::Contains("page_size 1000"));
  CHECK_THROWS_WITH(validate(1024, 1024), Catch::Contains("segment_size 1024"));
}

TEST_CASE("crc32c: the short-buffer SSE4.2 path computes what ISA-L computes", "[wal]") {
  std::vector<unsigned char> buf(512);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<unsigned char>(i * 131 + 7);
  for (size_t off = 0; off < 8; ++off)
    for (size_t n = 0; n <= 2 * kCrc32cShortBytes; ++n) {
      INFO("offset " << off << ", " << n << " bytes");
      REQUIRE(crc32c_update(0x12345678u, buf.data() + off, n) ==
              crc32_iscsi(buf.data() + off, static_cast<int>(n), 0x12345678u));
    }
  if (have_crc32c_sse42()) CHECK(kCrc32cSse42);
}

TEST_CASE("crc32c check value and incremental use", "[wal]") {
  const char* s = "123456789";
  CHECK(crc32c(s, 9) == 0xE3069283u);
  auto* b = reinterpret_cast<unsigned char*>(const_cast<char*>(s));
  CHECK(crc32c(s, 9) == ~crc32_iscsi(b, 9, 0xFFFFFFFF));
  uint32_t st = crc32c_init();
  st = crc32c_update(st, s, 4);
  st = crc32c_update(st, s + 4, 5);
  CHECK(crc32c_final(st) == 0xE3069283u);
  CHECK(crc32c(s, 0) == 0u);
  CHECK(crc32c("a", 1) != crc32c("b", 1));
}

TEST_CASE("lsn_to_string prints like PostgreSQL", "[wal]") {
  CHECK(lsn_to_string(Lsn{0}) == "0/00000000");
  CHECK(lsn_to_string(Lsn{0x0100A0C8}) == "0/0100A0C8");
  CHECK(lsn_to_string(Lsn{0x1F00000028ull}) == "1F/00000028");
  CHECK(lsn_to_string(kMaxLsn) == "FFFFFFFF/FFFFFFFF");
}

TEST_CASE("record build, finish and CRC round trip", "[wal]") {
  const uint32_t tot_len = 100;
  std::vector<uint8_t> buf(tot_len, 0xEE);
  const uint32_t st = build_record(buf.data(), tot_len, Xid{1234}, kRmHeap, 0x40, ClientId{7}, 42);
  // The returned state is the CRC state of the bytes after the header alone.
  CHECK(st == crc32c_update(crc32c_init(), buf.data() + 24, tot_len - 24));
  finish_record(buf.data(), st, Lsn{0x0100A060});

  const RecordHeader h = load_record_header(buf.data());
  CHECK(h.tot_len == tot_len);
  CHECK(h.xid == 1234);
  CHECK(h.prev == 0x0100A060);
  CHECK(h.info == 0x40);
  CHECK(h.rmid == kRmHeap);
  CHECK(h.pad == 0);
  // The short data header, then the main data: filler, the tag in the last 10 bytes.
  CHECK(buf[24] == kBlockIdDataShort);
  CHECK(buf[25] == tot_len - 26);
  MainData md{};
  REQUIRE(parse_main_data(buf.data(), tot_len, &md));
  CHECK(md.offset == 26);
  CHECK(md.length == tot_len - 26);
  const RecordTag t = record_tag(buf.data(), tot_len);
  CHECK(t.client == 7);
  CHECK(t.seq == 42);
  for (uint32_t i = 26; i < tot_len - kTagSize; ++i) REQUIRE(buf[i] == '0');

  // The CRC covers the bytes after the header, then the header bytes before the CRC (prev set).
  std::vector<uint8_t> covered(buf.begin() + 24, buf.end());
  covered.insert(covered.end(), buf.begin(), buf.begin() + 20);
  CHECK(h.crc == crc32c(covered.data(), covered.size()));
  CHECK(h.crc == compute_record_crc(buf.data(), tot_len));
  CHECK(record_crc_ok(buf.data()));
  CHECK(record_crc_ok(buf.data(), buf.size()));
  CHECK_FALSE(record_crc_ok(buf.data(), tot_len - 1));  // shorter than tot_len: refused

  // A different prev gives a different CRC.
  std::vector<uint8_t> other = buf;
  finish_record(other.data(), st, Lsn{0x0100A058});
  CHECK(load_record_header(other.data()).crc != h.crc);
  CHECK(record_crc_ok(other.data()));

  // The smallest record: header, short data header, tag.
  std::vector<uint8_t> small(kMinRecordSize);
  finish_record(small.data(),
                build_record(small.data(), kMinRecordSize, Xid{5}, kRmHeap2, 0x10, ClientId{0}, 0),
                Lsn{40});
  CHECK(kMinRecordSize == 36);
  CHECK(record_crc_ok(small.data(), small.size()));
  CHECK(small[25] == kTagSize);
}

TEST_CASE("the data header is short up to 255 bytes of main data, long beyond", "[wal]") {
  std::vector<uint8_t> buf(400);
  for (uint32_t tot_len = kMinRecordSize; tot_len < 400; ++tot_len) {
    INFO("tot_len " << tot_len);
    build_record(buf.data(), tot_len, Xid{1}, kRmBtree, 0, ClientId{1}, tot_len);
    MainData md{};
    REQUIRE(parse_main_data(buf.data(), tot_len, &md));
    // 24 + 2 + 255 = 281 is the last short one; 282..284 cannot be short: long, 253..255 bytes.
    CHECK(buf[24] == (tot_len <= 281 ? kBlockIdDataShort : kBlockIdDataLong));
    CHECK(md.offset + md.length == tot_len);
    CHECK(record_tag(buf.data(), tot_len).seq == tot_len);
    CHECK_FALSE(parse_main_data(buf.data(), tot_len + 1, &md));  // lengths must add up
  }
  CHECK(data_header_size(255) == 2);
  CHECK(data_header_size(256) == 5);
}

TEST_CASE("a logical message record is PostgreSQL 15's, byte for byte", "[wal]") {
  // pg_logical_emit_message(true, 'test', <16 bytes>): 71 bytes on PG 15 (wal_cell.h).
  CHECK(message_record_size(16) == 71);
  CHECK(message_record_size(226) == 281);
  CHECK(message_record_size(227) == 285);  // the long data header from here on
  CHECK(message_record_size(256) == 314);
  std::vector<uint8_t> buf(message_record_size(16));
  const uint32_t st =
      build_message_record(buf.data(), 16, /*transactional=*/true, Xid{900}, ClientId{2}, 5);
  finish_record(buf.data(), st, Lsn{0x28});
  const uint8_t want[] = {
      71, 0, 0, 0,                    // xl_tot_len
      0x84, 0x03, 0, 0,               // xl_xid 900
      0x28, 0, 0, 0, 0, 0, 0, 0,      // xl_prev
      0x00, 21, 0, 0,                 // xl_info XLOG_LOGICAL_MESSAGE, xl_rmid RM_LOGICALMSG_ID, pad
      0, 0, 0, 0,                     // xl_crc (compared apart)
      255, 45,                        // XLR_BLOCK_ID_DATA_SHORT, 45 bytes of main data
      5, 0, 0, 0, 1, 0, 0, 0,         // dbId 5, transactional, padding
      5, 0, 0, 0, 0, 0, 0, 0,         // prefix_size 5
      16, 0, 0, 0, 0, 0, 0, 0,        // message_size 16
      't', 'e', 's', 't', 0,          // the prefix with its NUL
      '0', '0', '0', '0', '0', '0',   // the message: filler, then the tag
      2, 0, 5, 0, 0, 0, 0, 0, 0, 0};
  REQUIRE(sizeof want == buf.size());
  for (size_t i = 0; i < buf.size(); ++i) {
    if (i >= 20 && i < 24) continue;
    INFO("byte " << i);
    CHECK(buf[i] == want[i]);
  }
  CHECK(record_crc_ok(buf.data(), buf.size()));

  // A long one: the data header is FE and a uint32 length.
  std::vector<uint8_t> big(message_record_size(1000));
  build_message_record(big.data(), 1000, false, Xid{0}, ClientId{9}, 77);
  CHECK(big.size() == 1058);
  CHECK(big[24] == kBlockIdDataLong);
  MainData md{};
  REQUIRE(parse_main_data(big.data(), static_cast<uint32_t>(big.size()), &md));
  CHECK(md.length == 24 + 5 + 1000);
  CHECK(big[md.offset + 4] == 0);  // nontransactional
  CHECK(record_tag(big.data(), static_cast<uint32_t>(big.size())).seq == 77);
}

TEST_CASE("a commit record is PostgreSQL 15's followed by the tag", "[wal]") {
  CHECK(commit_record_size(0) == 44);  // PG 15: 34
  CHECK(commit_record_size(3) == 64);  // PG 15: 54
  std::vector<uint8_t> buf(commit_record_size(0));
  build_commit_record(buf.data(), Xid{700}, {}, ClientId{1}, 3);
  const RecordHeader h = load_record_header(buf.data());
  CHECK(h.rmid == kRmXact);
  CHECK(h.info == kInfoXactCommit);
  CHECK(h.xid == 700);
  CHECK(buf[24] == kBlockIdDataShort);
  CHECK(buf[25] == 8 + kTagSize);
  for (int i = 26; i < 34; ++i) CHECK(buf[i] == 0);  // xact_time
  CHECK(record_tag(buf.data(), 44).client == 1);
  CHECK(record_tag(buf.data(), 44).seq == 3);

  const Xid subs[] = {Xid{701}, Xid{702}, Xid{703}};
  std::vector<uint8_t> sub(commit_record_size(3));
  build_commit_record(sub.data(), Xid{700}, subs, ClientId{1}, 8);
  const RecordHeader hs = load_record_header(sub.data());
  CHECK(hs.info == (kInfoXactCommit | kInfoXactHasInfo));
  CHECK(sub[25] == 8 + 4 + 4 + 12 + kTagSize);
  uint32_t xinfo, n, x2;
  std::memcpy(&xinfo, sub.data() + 34, 4);
  std::memcpy(&n, sub.data() + 38, 4);
  std::memcpy(&x2, sub.data() + 42 + 4, 4);
  CHECK(xinfo == kXactXinfoHasSubxacts);
  CHECK(n == 3);
  CHECK(x2 == 702);
  CHECK(record_tag(sub.data(), 64).seq == 8);
}

TEST_CASE("corrupting any single byte of a record is detected", "[wal]") {
  const uint32_t tot_len = 61;
  // Room beyond the record so that a corrupted tot_len stays in bounds when it shrinks or grows
  // a little; larger values are refused by the bounds check.
  std::vector<uint8_t> good(512, 0);
  finish_record(good.data(),
                build_record(good.data(), tot_len, Xid{9}, kRmHeap, 1, ClientId{3}, 1000),
                Lsn{0x12345678});
  REQUIRE(record_crc_ok(good.data(), good.size()));
  uint64_t detected = 0;
  for (uint32_t i = 0; i < tot_len; ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::vector<uint8_t> bad = good;
      bad[i] ^= static_cast<uint8_t>(1u << bit);
      INFO("byte " << i << " bit " << bit);
      REQUIRE_FALSE(record_crc_ok(bad.data(), bad.size()));
      ++detected;
    }
    std::vector<uint8_t> bad = good;
    bad[i] = static_cast<uint8_t>(~bad[i]);
    INFO("byte " << i << " inverted");
    REQUIRE_FALSE(record_crc_ok(bad.data(), bad.size()));
  }
  CHECK(detected == tot_len * 8);
}

TEST_CASE("tag round trip and byte layout", "[wal]") {
  uint8_t p[kTagSize];
  write_tag(p, ClientId{0x1234}, 0x0102030405060708ull);
  const uint8_t want[kTagSize] = {0x34, 0x12, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01};
  CHECK(std::memcmp(p, want, kTagSize) == 0);
  const RecordTag t = read_tag(p);
  CHECK(t.client == 0x1234);
  CHECK(t.seq == 0x0102030405060708ull);

  for (uint32_t c : {0u, 1u, 65535u}) {
    for (uint64_t s : {uint64_t{0}, uint64_t{1}, ~uint64_t{0}}) {
      write_tag(p, ClientId{c}, s);
      const RecordTag r = read_tag(p);
      CHECK(r.client == c);
      CHECK(r.seq == s);
    }
  }
}

TEST_CASE("page header round trip", "[wal]") {
  const WalGeometry g{1024, 4096};
  std::vector<uint8_t> page(g.page_size, 0xAB);

  SECTION("segment start: long header") {
    const Lsn at{3 * 4096};
    init_page_header(page.data(), at, g);
    const LongPageHeader l = load_long_page_header(page.data());
    CHECK(l.std.magic == kPageMagic);
    CHECK(l.std.info == kPageLongHeader);
    CHECK(l.std.timeline == kTimeline);
    CHECK(l.std.pageaddr == at.value);
    CHECK(l.std.rem_len == 0);
    CHECK(l.std.pad == 0);
    CHECK(l.system_id == kSystemId);
    CHECK(l.seg_size == 4096);
    CHECK(l.page_size == 1024);
    CHECK(page[0] == 0x10);  // little-endian magic 0xD110 (PG 15)
    CHECK(page[1] == 0xD1);
    CHECK(page[40] == 0xAB);  // only the header is written
  }
  SECTION("other pages: short header, then a continuation") {
    const Lsn at{3 * 4096 + 2 * 1024};
    init_page_header(page.data(), at, g);
    PageHeader h = load_page_header(page.data());
    CHECK(h.magic == kPageMagic);
    CHECK(h.info == 0);
    CHECK(h.pageaddr == at.value);
    CHECK(h.rem_len == 0);
    CHECK(page[24] == 0xAB);
    set_page_contrecord(page.data(), 777);
    h = load_page_header(page.data());
    CHECK(h.info == kPageFirstIsContRecord);
    CHECK(h.rem_len == 777);
    CHECK(h.pageaddr == at.value);
  }
  SECTION("store/load round trip") {
    const PageHeader h{kPageMagic, kPageFirstIsContRecord, 1, 0xDEADBEEF00, 12345, 0};
    store_page_header(page.data(), h);
    const PageHeader r = load_page_header(page.data());
    CHECK(std::memcmp(&h, &r, sizeof h) == 0);
    const RecordHeader rh{100, 7, 0x28, 3, kRmBtree, 0, 0xCAFEBABE};
    store_record_header(page.data() + 100, rh);
    const RecordHeader rr = load_record_header(page.data() + 100);
    CHECK(std::memcmp(&rh, &rr, sizeof rh) == 0);
  }
}

TEST_CASE("the worked example of format.h", "[wal]") {
  const WalGeometry g;
  CHECK(g.bytepos_to_lsn(BytePos{0}) == Lsn{0x28});
  CHECK(commit_record_size(0) == 44);
  CHECK(max_align(commit_record_size(0)) == 48);
  CHECK(g.bytepos_to_lsn(BytePos{48}) == Lsn{0x58});
  CHECK(message_record_size(8942) == 9000);
  std::vector<uint8_t> rec(9000);
  build_message_record(rec.data(), 8942, true, Xid{3}, ClientId{0}, 1);
  CHECK(rec[24] == kBlockIdDataLong);
  uint32_t main_len;
  std::memcpy(&main_len, rec.data() + 25, 4);
  CHECK(main_len == 8971);
  const BytePos big{96};
  CHECK(g.bytepos_to_lsn(big) == Lsn{0x88});
  CHECK(8192 - 0x88 == 8056);
  CHECK(9000 - 8056 == 944);
  CHECK(g.bytepos_to_end_lsn(BytePos{96 + 9000}) == Lsn{0x23C8});
  CHECK(max_align(96 + 9000) == 9096);
  CHECK(g.bytepos_to_lsn(BytePos{9096}) == Lsn{0x23C8});
}

TEST_CASE("known resource managers", "[wal]") {
  for (uint8_t r : {kRmXlog, kRmXact, kRmHeap2, kRmHeap, kRmBtree, kRmLogicalMsg})
    CHECK(is_known_rmid(r));
  CHECK(kPageMagic == 0xD110);
  CHECK_FALSE(is_known_rmid(2));
  CHECK_FALSE(is_known_rmid(255));
}

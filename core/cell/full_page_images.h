// Full-page images of the pgbench workloads (workload.full_page_writes; core/cell/wal_cell.h).
//
// PostgreSQL (xloginsert.c XLogRecordAssemble, PG 9.5+; XLogCheckBuffer in 9.2's xlog.c): with
// full_page_writes on (the default), the first modification of a data page after a checkpoint
// began attaches the whole page to its WAL record: a block reference needs an image when the
// page's LSN is at or before RedoRecPtr, the redo pointer of the last checkpoint
// (`*page_lsn <= RedoRecPtr`, doPageWrites). The image is BLCKSZ (8 KiB) minus the "hole"
// between pd_lower and pd_upper (the page's free space, not logged), after a 5-byte
// XLogRecordBlockImageHeader (length, hole_offset, bimg_info; the hole's length follows from
// the length). The record's other block-reference bytes are already in the steady-state sizes
// (PROTOCOLS.md section 7, pg_waldump with fpw off).
//
// Which touch is the first since the checkpoint. pgbench picks rows uniformly at random, so the
// modified pages of a table of N pages form a Poisson stream of rate r (touches per second)
// spread uniformly over the pages. A touch u seconds after the redo pointer is its page's first
// since then with probability exp(-r u / N). Checkpoints start every checkpoint_timeout T
// (checkpoint_timeout, default 5 min since 8.3) and a run's transactions are spread uniformly
// over the cycle, so the probability that a touch carries an image, averaged over the cycle, is
//     p(N, r, T) = (N / (r T)) (1 - exp(-r T / N))
// which tends to 1 when r T << N (every touch of the run is "right after a checkpoint": a large
// table at low rate) and to N / (r T) when r T >> N (each page is imaged once per cycle: N
// images per cycle). The rate is the run's own: all clients' touches of the table since the
// first client started, over that time (core/cell/wal_cell.h page_image), so the image share
// falls as throughput grows.
//
// pgbench's tables at scale s (pgbench.c initCreateTables / initGenerateData): accounts 100000 s
// rows, tellers 10 s, branches s, history append-only. Rows per 8 KiB page from the tuple sizes
// (23-byte header MAXALIGNed to 24, the columns, MAXALIGN, plus a 4-byte line pointer; 8168
// usable bytes after the 24-byte page header), fillfactor 100 as pgbench creates them:
//   accounts  aid, bid, abalance int4 + filler char(84) (85 B): 24 + 12 + 85 = 121 -> 128 + 4
//             = 132 B per row -> 61 rows per page (pgbench_accounts at scale 1 is 1640 pages);
//             hole 8168 - 61 x 132 = 116 B.
//   accounts_pkey leaf  int4 key: IndexTuple 8 + 4 -> 16 + 4 = 20 B, leaves built at
//             fillfactor 90: 8152 usable (16-byte btree special) x 0.9 / 20 = 366 keys per leaf;
//             hole 8152 - 366 x 20 = 832 B.
//   tellers   tid, bid, tbalance int4, filler NULL (the null bitmap fits the header's 24 B):
//             24 + 12 -> 40 + 4 = 44 B -> 185 rows per page.
//   branches  bid, bbalance int4, filler NULL: 24 + 8 = 32 + 4 = 36 B -> 226 rows per page.
//             Both tables' pages are rewritten by HOT updates all the time and stay full:
//             hole 0 B.
//   history   appended: only its last page is modified; on average half full: hole 4084 B.
// A non-HOT accounts update writes the new version into another page (the old one is full):
// a second, independent accounts page of its Heap/UPDATE record.
// Departures: the checkpoint cycle is averaged (the burst of images right after each checkpoint
// and its WAL volume are spread over the run instead of arriving every T seconds); only
// checkpoint_timeout starts checkpoints (a max_wal_size / checkpoint_segments checkpoint is not
// modelled); holes are the steady-state estimates above, not each page's own (HOT-updated
// tellers/branches pages swing between pruned and nearly full: the 0 B hole is their fullest
// state; these pages are imaged about N/T times a second, so it barely matters). Overestimates:
// the non-HOT update's second page is drawn as an independent accounts page, where PostgreSQL
// often reuses the backend's target block or extends the table (a fresh page, logged as
// initialised, never imaged): up to 30% more accounts images; an image is added on top of the
// record's steady-state size, where XLogRecordAssemble drops the block's registered data when it
// includes the image (about 10-130 B per image). The image decision draws from the client's one
// random stream, so cells with full_page_writes on and off do not see the same later draws
// (compare them over several seeds). History pages are appended and logged as initialised; its
// one-page table stands for that. Because of these and the unmodelled volume checkpoints,
// workload.full_page_writes is off by default (spec.h).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace walbench {

constexpr uint32_t kHeapBlockSize = 8192;          // BLCKSZ
constexpr uint32_t kBlockImageHeaderSize = 5;      // SizeOfXLogRecordBlockImageHeader

enum class PgbenchTable : uint8_t { kAccounts, kAccountsPkey, kTellers, kBranches, kHistory };
constexpr uint32_t kNumPgbenchTables = 5;

struct PgbenchTableShape {
  uint64_t rows_per_scale;  // rows (index keys) per scale unit; 0: one page (history)
  uint32_t rows_per_page;
  uint32_t hole_bytes;      // free space between pd_lower and pd_upper, not in the image
};

constexpr PgbenchTableShape pgbench_table_shape(PgbenchTable t) {
  switch (t) {
    case PgbenchTable::kAccounts: return {100000, 61, 116};
    case PgbenchTable::kAccountsPkey: return {100000, 366, 832};
    case PgbenchTable::kTellers: return {10, 185, 0};
    case PgbenchTable::kBranches: return {1, 226, 0};
    case PgbenchTable::kHistory: return {0, 1, 4084};
  }
  return {0, 1, 0};
}

// Pages of a table that modifications land on at pgbench scale `scale`.
constexpr uint64_t pgbench_table_pages(PgbenchTable t, uint32_t scale) {
  const PgbenchTableShape s = pgbench_table_shape(t);
  if (s.rows_per_scale == 0) return 1;
  return (s.rows_per_scale * scale + s.rows_per_page - 1) / s.rows_per_page;
}

// The bytes a full-page image adds to its record.
constexpr uint32_t full_page_image_bytes(PgbenchTable t) {
  return kBlockImageHeaderSize + kHeapBlockSize - pgbench_table_shape(t).hole_bytes;
}

// p(N, r, T) of the header: the cycle-averaged probability that a touch of a table of `pages`
// pages, touched `rate` times per second, is its page's first since the checkpoint.
inline double first_touch_probability(double pages, double rate, double checkpoint_s) {
  const double x = rate * checkpoint_s / pages;  // touches per page per cycle
  if (!(x > 1e-9)) return 1.0;
  return std::min(1.0, -std::expm1(-x) / x);
}

}  // namespace walbench

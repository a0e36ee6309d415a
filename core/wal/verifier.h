// The WAL verifier: walks written WAL from the first record to the end of inserted WAL and proves
// it intact (DESIGN.md section 4, "Verifier"; the format is in format.h).
//
// Checked, in walking order; the first failure stops the walk:
//   page headers   every page the walk enters: magic, no unknown info bits, timeline, pageaddr
//                  equal to the page's LSN; on a segment's first page the long header (flag,
//                  system id, segment and page size), elsewhere no long-header flag;
//                  kPageFirstIsContRecord set and rem_len equal to the bytes of the record still
//                  to come iff a record continues onto the page, else flag clear and rem_len 0.
//   record headers tot_len >= kMinRecordSize and the record ends before `end`; a known rmid;
//                  prev == the previous record's start LSN (0 for the first record of the WAL).
//   CRC            over the bytes after the header, then the header, as finish_record does.
//   data header    the main data's block id (XLR_BLOCK_ID_DATA_SHORT / _LONG) and its length
//                  add up to tot_len, as PostgreSQL's DecodeXLogRecord requires.
//   contiguity     the next record starts at max_align(start bytepos + tot_len): PostgreSQL
//                  reserves MAXALIGN(tot_len) usable bytes; page headers are skipped.
//   tags           every record's (client, seq) (its last 10 bytes, format.h "The tag"):
//                  client < records_per_client.size(), and each client's seqs are 0, 1, 2, ...
//                  exactly once, in order.
//   counts         at the end: each client has records_per_client[c] records, and the total is
//                  total_records.
// Error messages name the LSN like pg_waldump ("%X/%08X"):
//   "at 0/0100A0C8: record's prev link 0/0100A058 does not match previous record 0/0100A060"
// Never crashes on garbage: every length read from the WAL is bounds-checked before use, and
// records (up to 1 GiB) are streamed page by page, never buffered whole.
//
// If `start` is not the beginning of the WAL (BytePos 0) the first record's prev link and the
// contrecord state of the first page (when start is mid-page) cannot be known and are not
// checked; seqs are still expected to start at 0.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/wal/geometry.h"
#include "core/wal/storage.h"
#include "core/wal/types.h"
#include "core/wal/verify_result.h"

namespace walbench {

struct VerifyExpect {
  Lsn start;  // LSN of the first record (bytepos_to_lsn(BytePos{0}) normally)
  Lsn end;    // end of inserted WAL (bytepos_to_end_lsn(final CurrBytePos))
  std::vector<uint64_t> records_per_client;  // client c has seqs 0..n-1 exactly once, in order
  uint64_t total_records = 0;                // all records walked must equal this
};

// records = records that passed every check, record_types = the same by type; bytes = LSN distance from start to the end of the
// last such record (MAXALIGNed), i.e. end - start when ok.
VerifyResult verify_wal(const Storage& storage, const WalGeometry& g, const VerifyExpect& expect);

// The same walk while the run writes (issue 11): on a thread of its own, it follows the written
// frontier of a StreamedStorage, checks every page and record as soon as its bytes are written,
// and releases what it checked so that the storage can reuse the memory. The clients' record
// counts are not known until the run ends, so "beyond the records expected" is found by the
// final count check instead of at the record. On the simulated platform the thread is outside
// the simulation (it charges no virtual time; the simulated WAL writer never waits in virtual
// time for it either).
//   finish(expect)  declares expect.end as the end of WAL, waits for the walk, checks the counts;
//                   the result also says how far the walk lagged behind the writer and whether
//                   it made the writer wait (VerifyResult's streaming fields).
// Destroying it without finish() (a failed run) ends the walk where the WAL stands.
class StreamingVerifier {
 public:
  StreamingVerifier(StreamedStorage& storage, const WalGeometry& g, Lsn start, size_t clients);
  ~StreamingVerifier();
  StreamingVerifier(const StreamingVerifier&) = delete;
  StreamingVerifier& operator=(const StreamingVerifier&) = delete;

  VerifyResult finish(const VerifyExpect& expect);

 private:
  struct State;
  StreamedStorage& storage_;
  const WalGeometry g_;
  const Lsn start_;
  std::unique_ptr<State> state_;
};

}  // namespace walbench

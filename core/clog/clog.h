// The commit log (CLOG, pg_xact since PG 10): two status bits per transaction id in 8 KiB pages,
// cached in an SLRU of `num_buffers` page buffers with LRU replacement and page I/O to a backing
// store, under one control lock. Transaction ids come from XidGen, a counter under XidGenLock.
//
// ORIGIN
//   PostgreSQL access/transam/clog.c and slru.c as of 9.6-16 (PROTOCOLS.md section 6):
//   TransactionIdSetTreeStatus, set_status_by_pages, TransactionIdSetPageStatusInternal,
//   TransactionIdSetStatusBit, TransactionIdGetStatus, ExtendCLOG / ZeroCLOGPage, BootStrapCLOG;
//   SimpleLruReadPage, SimpleLruZeroPage, SlruSelectLRUPage, SlruRecentlyUsed,
//   SlruInternalWritePage / SlruPhysicalWritePage (WAL flushed up to the page's group LSN before
//   the page is written); varsup.c GetNewTransactionId (XidGenLock, ExtendCLOG, the PGPROC subxid
//   cache). Buffers 9.6-16: Min(128, Max(4, NBuffers/512)) (5364b357fb). Our code, not theirs.
//   Which client takes the control lock for a commit, and how, is a ClogStrategy
//   (strategies/clog_exclusive, strategies/clog_group_update); this file is everything else.
//
// FORMAT (worked example, default 8 KiB pages)
//   CLOG_XACTS_PER_PAGE = 8192 x 4 = 32768. xid 70000 lives on page 70000 / 32768 = 2, at index
//   70000 % 32768 = 4464 in the page: byte 4464 / 4 = 1116, bits 2 x (4464 % 4) = 0..1 of it.
//   Status values: IN_PROGRESS 0, COMMITTED 1, ABORTED 2, SUB_COMMITTED 3. Pages are stored as
//   little-endian 64-bit words (32 xids each), which is byte for byte PostgreSQL's layout.
//   Async-commit LSNs: one per CLOG_XACTS_PER_LSN_GROUP = 32 xids (1024 per 8 KiB page).
//
// DESIGN SUMMARY
//   One LWLock (CLogControlLock, tranche XactSLRU) protects the whole SLRU. A page is found in a
//   buffer or brought in: the least recently used buffer (never the latest page) is chosen; if
//   it is dirty it is written to the backing store first, after flushing WAL up to the largest
//   async-commit LSN recorded for it. Setting a transaction tree's status marks the subxids that
//   live on other pages SUB_COMMITTED first, then the parent's page (subxids SUB_COMMITTED, the
//   parent, then the subxids' final state), then the other pages, so that no reader can see a
//   committed parent with a subxid that looks in progress.
//   Page I/O as PostgreSQL does it: the slot is marked READ_IN_PROGRESS (or WRITE_IN_PROGRESS),
//   its buffer lock (tranche "clog", XactBuffer since 13) taken exclusively, the control lock
//   released for the I/O and taken again, exclusively, to mark the slot VALID; who finds a slot
//   in I/O waits on its buffer lock (SimpleLruWaitIO) and looks again. The backing store is
//   memory (the segment files in the OS page cache): a read or write copies the page and charges
//   the file's system calls (open, lseek, read/write, close: 9.6-11's SlruPhysicalReadPage /
//   SlruPhysicalWritePage), reported as IO:SLRURead / IO:SLRUWrite.
//   Departures: the scans test a slot's status before its page number (PostgreSQL compares
//   page_number[] first and reads page_status[] only on a match, so its scans read half the
//   lines; found in review after the 2026-12-05 sim files were made, left for their next rerun);
//   no fsync of the segment after a page write (9.6-13's SlruPhysicalWritePage fsyncs it outside
//   a checkpoint, IO:SLRUSync; 14+ leaves it to the checkpointer, dee663f784); IO:SLRURead and
//   IO:SLRUWrite cover all four system calls where PostgreSQL reports only the read or write;
//   a page read allocates its bytes on the host (a miss path, not a hot one); a status update
//   (set_page_status_locked) waits for a write in progress on its page even for a synchronous
//   commit (PostgreSQL lets it set bits in the page being copied
//   out, a race it tolerates and a race detector would not). The slot state is PostgreSQL's parallel arrays (page_number[],
//   page_status[], page_dirty[], page_lru_count[]) on whole cache lines.
//   History (xid_history): the run may start `first - 3` xids after pgbench -i. The pages of
//   those xids exist in the backing store with every one of them COMMITTED (C7); the page of the
//   last is in a buffer, the latest page, as BootStrapCLOG leaves page 0 (StartupCLOG on a
//   running cluster).
//
// SHARED STATE AND WHAT PROTECTS IT
//   slots_[]: page_number, status, dirty, lru_count; words_ (page bytes); lsns_ (group LSNs);
//   cur_lru_count_, latest_page_; counters_: the control lock, exclusive (get_status reads
//   words_ of a resident page under the shared lock; lru_count and cur_lru_count_ are also
//   written there, racily as in PostgreSQL: relaxed atomics). A slot in READ_IN_PROGRESS: its words_ and
//   lsns_ belong to the client doing the read, under the slot's buffer lock; in
//   WRITE_IN_PROGRESS they are only read (no one changes a page being written). The backing
//   store store_ (the file system): store_mutex_, a host mutex held for no modelled operation.
//   XidGen: cache_.next_xid (ShmemVariableCache->nextXid, core/clog/variable_cache.h: on the
//   line it shares with latestCompletedXid and xactCompletionCount, not on XidGenLock's) under
//   XidGenLock; a client's Proc::xid / subxids are written by the owner
//   under XidGenLock (proc.h says who reads them).
//
// INVARIANTS (checks cite them as // C<n>)
//   C1  A status changes only from IN_PROGRESS, or from SUB_COMMITTED to a final state, or to the
//       value it already has (TransactionIdSetStatusBit's assert).
//   C2  Every xid set by one set_page_status_locked() lies on the page it was called for.
//   C3  The latest page (the one ExtendCLOG zeroed last) is never chosen as a victim.
//   C4  A dirty page is written back before its buffer is reused, and WAL is flushed up to its
//       largest group LSN before it is written (WAL before data).
//   C5  A page not in a buffer exists in the backing store: ExtendCLOG zeroes every page before
//       the first of its xids is handed out.
//   C6  Transaction ids are handed out once each, in increasing order, never wrapping.
//   C7  Every xid below the run's first (the history) is COMMITTED: a lookup of one must say so
//       (core/cell/wal_cell.h tuple_check), and the verifier checks every history page present
//       at the end (in a buffer or written back; one read in and evicted clean is not).
//   C8  A client that marked a slot in I/O finds it, when it takes the control lock again, still
//       holding its page in that state, and a page just read in clean (checked in debug builds
//       only: the loads would cost simulated time).
//
// LOCK ORDER
//   XidGenLock -> CLogControlLock -> a buffer lock (taken exclusively only by the client that
//   marked the slot in I/O, before it releases the control lock; waiters release the control
//   lock before they take it) -> (WAL flush locks, via the flush hook, with the buffer lock held
//   and the control lock released, as SlruPhysicalWritePage). The I/O's owner takes the control
//   lock again while holding the buffer lock; it cannot deadlock (slru.c's argument): nobody
//   waits for a buffer lock while holding the control lock, and a slot in I/O is never chosen
//   for other I/O. Nothing holding a WAL insertion lock waits for the CLOG. A strategy's
//   set_page_status_locked may so release and take the control lock again inside (a page read
//   or a wait for one), as TransactionIdSetPageStatusInternal's SimpleLruReadPage does.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/counter.h"
#include "core/locks/lwlock.h"
#include "core/platform/platform.h"
#include "core/clog/variable_cache.h"
#include "core/proc.h"
#include "core/wal/types.h"
#include "core/wal/verify_result.h"

#define WALBENCH_CLOG_CHECK(cond, inv, what)                                                   \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      std::fprintf(stderr, "walbench: CLOG invariant %s violated at %s:%d: %s\n", inv, __FILE__, \
                   __LINE__, what);                                                            \
      std::abort();                                                                            \
    }                                                                                          \
  } while (0)

namespace walbench {

enum class XidStatus : uint8_t {
  kInProgress = 0,    // TRANSACTION_STATUS_IN_PROGRESS
  kCommitted = 1,     // TRANSACTION_STATUS_COMMITTED
  kAborted = 2,       // TRANSACTION_STATUS_ABORTED
  kSubCommitted = 3,  // TRANSACTION_STATUS_SUB_COMMITTED
};
const char* xid_status_name(XidStatus s);

constexpr uint32_t kClogBitsPerXact = 2;         // CLOG_BITS_PER_XACT
constexpr uint32_t kClogXactsPerByte = 4;        // CLOG_XACTS_PER_BYTE
constexpr uint32_t kClogXactsPerLsnGroup = 32;   // CLOG_XACTS_PER_LSN_GROUP
constexpr uint32_t kClogDefaultPageSize = 8192;  // BLCKSZ: 32768 xids per page
constexpr uint32_t kClogDefaultBuffers = 128;    // Min(128, Max(4, NBuffers/512)), NBuffers >= 64 Ki
constexpr uint32_t kClogMinPageSize = 16;        // the model's floor: 64 xids, two LSN groups
constexpr uint32_t kClogMinBuffers = 2;          // one for the latest page (C3) and one more
constexpr uint32_t kClogGroupThreshold = 5;      // THRESHOLD_SUBTRANS_CLOG_OPT

// Where an xid's two bits live.
struct ClogGeometry {
  uint32_t page_size = kClogDefaultPageSize;  // bytes; a power of two >= kClogMinPageSize
  uint32_t xacts_per_page() const { return page_size * kClogXactsPerByte; }
  uint32_t page_of(Xid x) const { return x.value / xacts_per_page(); }       // TransactionIdToPage
  uint32_t index_of(Xid x) const { return x.value % xacts_per_page(); }      // TransactionIdToPgIndex
  uint32_t words_per_page() const { return page_size / 8; }
  uint32_t lsn_groups_per_page() const { return xacts_per_page() / kClogXactsPerLsnGroup; }
};

// Model-level counters (instrumentation, written under the control lock, read after the run).
// Under the control lock (core/counter.h: may be snapshot while clients run).
struct ClogCounters {
  Counter page_hits;    // SimpleLruReadPage found the page in a buffer
  Counter page_reads;   // pages read from the backing store (a miss)
  Counter page_writes;  // dirty pages written to the backing store
  Counter page_zeroes;  // pages created by ExtendCLOG (and BootStrapCLOG)
  Counter wal_flushes;  // WAL flushes forced by writing a page with async commits (C4)
  Counter status_sets;  // status bits set
  Counter latest_page;  // latest_page_, mirrored for readers outside the control lock
};

// A copy of the whole CLOG after a run, what the verifier reads: page p's bytes, or empty when
// the page exists nowhere.
struct ClogImage {
  ClogGeometry geom;
  std::vector<std::vector<uint8_t>> pages;  // pages 0 .. latest; empty: never read or written
  Xid first = kFirstNormalXid;              // the run's first xid: those below are the history
  // IN_PROGRESS for xids on missing pages, but COMMITTED for a history xid on a page of the
  // history that was never read or written (it is in the backing store as the history left it).
  XidStatus status(Xid x) const;
};

// The bytes of history page `pageno` as the backing store holds it before the run: xids
// [kFirstNormalXid, first) COMMITTED, every other xid IN_PROGRESS.
std::vector<uint8_t> clog_history_page(const ClogGeometry& geom, uint32_t pageno, Xid first);

struct ClogExpect {
  Xid first = kFirstNormalXid;  // first xid XidGen handed out (those below it: the history, C7)
  Xid next = kFirstNormalXid;   // XidGen's next xid after the run
  uint64_t assigned = 0;        // xids the clients counted (must be next - first: C6)
  uint64_t top_level = 0;       // of which top-level transactions (for the counts)
};

// After a run in which every transaction committed: every xid in [3, next) is COMMITTED (the
// history below `first` and the run's; subtransactions included: SUB_COMMITTED is only ever
// transient), every other xid on every page is IN_PROGRESS (xids 0-2, xids not yet handed out),
// the pages 0 .. page_of(next - 1) all exist and no later one does; a history page (wholly
// below the page of first - 1) that was never read or written may be missing (it is the
// backing store's, untouched). Error messages name the xid, page and byte. On success
// clog_xids counts the xids checked (history xids on the pages present included) and
// clog_committed the run's committed ones (xids from first on).
VerifyResult verify_clog(const ClogImage& image, const ClogExpect& expect);

template <class P>
class Clog {
 public:
  // Called before a page whose largest async-commit LSN is `upto` is written
  // (SlruPhysicalWritePage's XLogFlush): the control lock released, the page's buffer lock held,
  // and XidGenLock too when ExtendCLOG evicted the page. ctx is the hook's own state.
  using FlushHook = void (*)(void* ctx, Proc<P>& me, Lsn upto);

  // first: the run's first xid (XidGen's, the same); the xids below it are the history (C7).
  Clog(ProcTable<P>& procs, uint32_t num_buffers, uint32_t page_size = kClogDefaultPageSize,
       Xid first = kFirstNormalXid)
      : geom_{page_size},
        num_buffers_(num_buffers),
        first_(first),
        control_lock_(&procs, WaitEvent::kXactSlru),
        slots_(num_buffers),
        words_(size_t{num_buffers} * geom_.words_per_page()),
        lsns_(size_t{num_buffers} * geom_.lsn_groups_per_page()) {
    WALBENCH_CLOG_CHECK(page_size >= kClogMinPageSize && (page_size & (page_size - 1)) == 0,
                        "C2", "the CLOG page size must be a power of two >= 16 bytes");
    WALBENCH_CLOG_CHECK(num_buffers >= kClogMinBuffers, "C3", "the CLOG needs >= 2 buffers");
    WALBENCH_CLOG_CHECK(first.value >= kFirstNormalXid.value, "C6", "the first xid is below 3");
    for (uint32_t b = 0; b < num_buffers; ++b) buffer_locks_.emplace_back(&procs);
    // BootStrapCLOG (StartupCLOG after a history): the page of the last xid before the run in
    // buffer 0 (no client runs yet: plain initialisation).
    const uint32_t boot_page = geom_.page_of(Xid{first.value - 1});
    zero_slot(0, boot_page);
    if (first == kFirstNormalXid) ++counters_.page_zeroes;  // BootStrapCLOG zeroed it
    if (first != kFirstNormalXid) {
      const std::vector<uint8_t> bytes = clog_history_page(geom_, boot_page, first);
      for (uint32_t w = 0; w < geom_.words_per_page(); ++w) {
        uint64_t v;
        std::memcpy(&v, bytes.data() + size_t{w} * 8, 8);
        words_[w].set(v);
      }
    }
  }
  Clog(const Clog&) = delete;
  Clog& operator=(const Clog&) = delete;

  const ClogGeometry& geometry() const { return geom_; }
  uint32_t num_buffers() const { return num_buffers_; }
  Xid first() const { return first_; }
  LWLock<P>& control_lock() { return control_lock_; }
  void set_flush_hook(FlushHook hook, void* ctx) {
    flush_hook_ = hook;
    flush_ctx_ = ctx;
  }

  // ExtendCLOG: called by XidGen under XidGenLock for every xid it hands out; zeroes a fresh
  // page when `newest` is the first xid of one.
  void extend(Proc<P>& me, Xid newest) {
    if (geom_.index_of(newest) != 0) return;
    control_lock_.acquire(me, kLwExclusive);
    zero_page_locked(me, geom_.page_of(newest));
    control_lock_.release(me);
  }

  // TransactionIdSetTreeStatus. `subxids` ascending, all after `xid` (as xact.c passes them).
  // The page-level step is the strategy's: s.set_page_status(me, xid, subxids, status, lsn,
  // pageno, all_xact_same_page), which ends in set_page_status_locked under the control lock.
  // lsn: the commit record's end for an asynchronous commit, kInvalidLsn when it was flushed.
  template <class Strategy>
  void set_tree_status(Strategy& s, Proc<P>& me, Xid xid, std::span<const Xid> subxids,
                       XidStatus status, Lsn lsn) {
    const uint32_t pageno = geom_.page_of(xid);
    size_t on_first = 0;  // subxids on the parent's page come first (they are ascending)
    while (on_first < subxids.size() && geom_.page_of(subxids[on_first]) == pageno) ++on_first;
    if (on_first == subxids.size()) {
      s.set_page_status(me, xid, subxids, status, lsn, pageno, true);
      return;
    }
    // The tree spans pages: subcommit the other pages' subxids first, then the parent's page,
    // then finish the other pages (a crash - or a reader - in between sees SUB_COMMITTED there).
    const std::span<const Xid> rest = subxids.subspan(on_first);
    if (status == XidStatus::kCommitted) set_status_by_pages(s, me, rest, XidStatus::kSubCommitted, lsn);
    s.set_page_status(me, xid, subxids.first(on_first), status, lsn, pageno, false);
    set_status_by_pages(s, me, rest, status, lsn);
  }

  // TransactionIdSetPageStatusInternal. Control lock held exclusively. xid may be kInvalidXid
  // (only subxids on this page are set). NB: the SUB_COMMITTED-first order must match
  // set_tree_status's across pages.
  void set_page_status_locked(Proc<P>& me, Xid xid, std::span<const Xid> subxids,
                              XidStatus status, Lsn lsn, uint32_t pageno) {
    WALBENCH_LOCK_DCHECK(control_lock_.held_by_me_in_mode(me, kLwExclusive), "C2",
                         "set_page_status_locked without the exclusive control lock");
    WALBENCH_CLOG_CHECK(status == XidStatus::kCommitted || status == XidStatus::kAborted ||
                            (status == XidStatus::kSubCommitted && xid == kInvalidXid),
                        "C1", "a tree status must be COMMITTED, ABORTED, or SUB_COMMITTED for subxids only");
    const uint32_t slot = read_page_locked(me, pageno, /*write_ok=*/false);  // departure: header
    if (xid != kInvalidXid) {
      WALBENCH_CLOG_CHECK(geom_.page_of(xid) == pageno, "C2", "xid is not on the page");
      // Subtransactions first (so no one sees the parent committed and a child in progress) ...
      if (status == XidStatus::kCommitted)
        for (const Xid s : subxids) set_bit(s, XidStatus::kSubCommitted, lsn, slot, pageno);
      // ... then the main transaction.
      set_bit(xid, status, lsn, slot, pageno);
    }
    for (const Xid s : subxids) set_bit(s, status, lsn, slot, pageno);
    slots_[slot].dirty.set(1);
  }

  // TransactionIdGetStatus (SimpleLruReadPage_ReadOnly): under the shared lock when the page is
  // in a buffer and not being read in (SlruRecentlyUsed there too), else exclusive to read it
  // in (or wait for the read).
  XidStatus get_status(Proc<P>& me, Xid xid) {
    const uint32_t pageno = geom_.page_of(xid);
    control_lock_.acquire(me, kLwShared);
    for (uint32_t s = 0; s < num_buffers_; ++s) {
      const uint32_t st = slots_[s].status.get();
      if ((st == kSlotValid || st == kSlotWriteInProgress) && slots_[s].page_number.get() == pageno) {
        recently_used(s);
        const XidStatus result = get_bit(xid, s);
        control_lock_.release(me);
        return result;
      }
    }
    control_lock_.release(me);
    control_lock_.acquire(me, kLwExclusive);
    const XidStatus result = get_bit(xid, read_page_locked(me, pageno, /*write_ok=*/true));
    control_lock_.release(me);
    return result;
  }

  // After the run (no client active): the page images, buffers taking precedence over the
  // backing store.
  ClogImage image() const {
    ClogImage img;
    img.geom = geom_;
    img.first = first_;
    img.pages.resize(size_t{latest_page_.get()} + 1);
    for (const auto& [pageno, bytes] : store_)
      if (pageno < img.pages.size()) img.pages[pageno] = bytes;
    for (uint32_t s = 0; s < num_buffers_; ++s) {
      if (slots_[s].status.get() != kSlotValid) continue;
      const uint32_t pageno = slots_[s].page_number.get();
      if (pageno < img.pages.size()) img.pages[pageno] = page_bytes(s);
    }
    return img;
  }

  // Read after the run.
  const ClogCounters& counters() const { return counters_; }
  uint32_t latest_page() const { return latest_page_.get(); }

  // Test hook: when set, every status bit written is appended (xid, status) in write order.
  // Written under the control lock; read by the test after its clients stopped.
  std::vector<std::pair<Xid, XidStatus>>* trace = nullptr;

 private:
  // An array of E (a P::Shared or P::Atomic) on whole 64-byte lines, so that which elements
  // share a cache line does not depend on where the heap put the array (the sim platform prices
  // lines; DETERMINISM RULES in core/platform/sim.h).
  template <class E>
  class LineArray {
    static constexpr size_t kPerLine = 64 / sizeof(E);

   public:
    using Elem = E;
    explicit LineArray(size_t n) : lines_(std::make_unique<Line[]>((n + kPerLine - 1) / kPerLine)) {}
    Elem& operator[](size_t i) { return lines_[i / kPerLine].e[i % kPerLine]; }
    const Elem& operator[](size_t i) const { return lines_[i / kPerLine].e[i % kPerLine]; }

   private:
    struct alignas(64) Line {
      Elem e[kPerLine];
    };
    std::unique_ptr<Line[]> lines_;
  };
  using Word = typename P::template Shared<uint64_t>;
  using WordArray = LineArray<Word>;
  static constexpr uint32_t kSlotEmpty = 0;            // SLRU_PAGE_EMPTY
  static constexpr uint32_t kSlotReadInProgress = 1;   // SLRU_PAGE_READ_IN_PROGRESS
  static constexpr uint32_t kSlotValid = 2;            // SLRU_PAGE_VALID
  static constexpr uint32_t kSlotWriteInProgress = 3;  // SLRU_PAGE_WRITE_IN_PROGRESS
  static constexpr uint32_t kPageFileSyscalls = 4;     // open, lseek, read/write, close

  // The slots' state as PostgreSQL lays it out (SlruSharedData): parallel arrays page_number[],
  // page_status[], page_dirty[], page_lru_count[], so that a scan of page numbers reads 16 slots
  // per line and SlruRecentlyUsed's writes do not land on the lines the scans read.
  using U32 = typename P::template Shared<uint32_t>;
  // SlruRecentlyUsed's counters, plain ints in PostgreSQL (see recently_used): a PlainWord, so
  // --disable-atomics leaves them alone (core/platform/platform.h).
  using A32 = PlainWord<P, uint32_t>;
  struct Slot {  // one slot's four elements
    U32& page_number;
    U32& status;
    U32& dirty;
    A32& lru_count;
  };
  class SlotArrays {
   public:
    explicit SlotArrays(uint32_t n) : page_number_(n), status_(n), dirty_(n), lru_count_(n) {}
    Slot operator[](uint32_t s) { return {page_number_[s], status_[s], dirty_[s], lru_count_[s]}; }
    Slot operator[](uint32_t s) const {
      auto& self = const_cast<SlotArrays&>(*this);  // Shared's get() is const; the refs are not
      return self[s];
    }

   private:
    LineArray<U32> page_number_, status_, dirty_;  // kSlotEmpty = 0 initially
    LineArray<A32> lru_count_;
  };
  struct alignas(64) BufferLock {  // shared->buffer_locks[slot]: held during the slot's I/O
    explicit BufferLock(ProcTable<P>* procs) : lock(procs, WaitEvent::kClogBuffer) {}
    LWLock<P> lock;
  };

  template <class Strategy>
  void set_status_by_pages(Strategy& s, Proc<P>& me, std::span<const Xid> subxids,
                           XidStatus status, Lsn lsn) {
    size_t offset = 0;
    while (offset < subxids.size()) {
      const uint32_t pageno = geom_.page_of(subxids[offset]);
      size_t n = 1;
      while (offset + n < subxids.size() && geom_.page_of(subxids[offset + n]) == pageno) ++n;
      s.set_page_status(me, kInvalidXid, subxids.subspan(offset, n), status, lsn, pageno, false);
      offset += n;
    }
  }

  // TransactionIdSetStatusBit.
  void set_bit(Xid xid, XidStatus status, Lsn lsn, uint32_t slot, uint32_t pageno) {
    WALBENCH_CLOG_CHECK(geom_.page_of(xid) == pageno, "C2", "subxid is not on the page being set");
    const uint32_t index = geom_.index_of(xid);
    Word& w = words_[size_t{slot} * geom_.words_per_page() + index / 32];
    const uint32_t shift = (index % 32) * kClogBitsPerXact;
    const uint64_t word = w.get();
    const auto cur = static_cast<XidStatus>((word >> shift) & 3);
    WALBENCH_CLOG_CHECK(cur == XidStatus::kInProgress || cur == status ||
                            (cur == XidStatus::kSubCommitted && status != XidStatus::kInProgress),
                        "C1", "illegal transaction status transition");
    w.set((word & ~(uint64_t{3} << shift)) | (uint64_t{static_cast<uint8_t>(status)} << shift));
    if (lsn != kInvalidLsn) {  // asynchronous commit: remember the LSN for C4
      Word& g = lsns_[size_t{slot} * geom_.lsn_groups_per_page() + index / kClogXactsPerLsnGroup];
      if (g.get() < lsn.value) g.set(lsn.value);
    }
    ++counters_.status_sets;
    if (trace != nullptr) trace->emplace_back(xid, status);
  }

  XidStatus get_bit(Xid xid, uint32_t slot) const {
    const uint32_t index = geom_.index_of(xid);
    const uint64_t word = words_[size_t{slot} * geom_.words_per_page() + index / 32].get();
    return static_cast<XidStatus>((word >> ((index % 32) * kClogBitsPerXact)) & 3);
  }

  // SlruRecentlyUsed. PostgreSQL runs it under the shared lock too (SimpleLruReadPage_ReadOnly),
  // racing readers' plain int stores; relaxed atomics here (a plain mov on x86, buffered on the
  // sim), so the race is the same and a race detector accepts it.
  void recently_used(uint32_t slot) {
    uint32_t c = cur_lru_count_.load();
    if (c != slots_[slot].lru_count.load()) {
      cur_lru_count_.store(++c, std::memory_order_relaxed);
      slots_[slot].lru_count.store(c, std::memory_order_relaxed);
    }
  }

  // SlruSelectLRUPage (control lock exclusive; released and taken again while it waits for or
  // does I/O): the buffer holding pageno (in any state), else an empty one, else the least
  // recently used valid page other than the latest (C3), written back first if dirty (C4);
  // when every candidate is in I/O, wait for the least recently used one's and look again.
  uint32_t select_lru_page(Proc<P>& me, uint32_t pageno) {
    for (;;) {
      for (uint32_t s = 0; s < num_buffers_; ++s)
        if (slots_[s].status.get() != kSlotEmpty && slots_[s].page_number.get() == pageno) return s;
      const uint32_t cur_count = cur_lru_count_.load();
      cur_lru_count_.store(cur_count + 1, std::memory_order_relaxed);
      int64_t best_valid_delta = -1, best_invalid_delta = -1;
      uint32_t best_valid = 0, best_valid_page = 0, best_invalid = 0, best_invalid_page = 0;
      for (uint32_t s = 0; s < num_buffers_; ++s) {
        const Slot sl = slots_[s];
        const uint32_t status = sl.status.get();
        if (status == kSlotEmpty) return s;
        int32_t delta = static_cast<int32_t>(cur_count - sl.lru_count.load());
        if (delta < 0) {  // counter wrapped past this slot's: treat it as just used
          sl.lru_count.store(cur_count, std::memory_order_relaxed);
          delta = 0;
        }
        const uint32_t page = sl.page_number.get();
        if (page == latest_page_.get()) continue;  // C3
        int64_t& best_delta = status == kSlotValid ? best_valid_delta : best_invalid_delta;
        uint32_t& best = status == kSlotValid ? best_valid : best_invalid;
        uint32_t& best_page = status == kSlotValid ? best_valid_page : best_invalid_page;
        if (delta > best_delta || (delta == best_delta && page < best_page)) {
          best_delta = delta;
          best = s;
          best_page = page;
        }
      }
      if (best_valid_delta < 0) {  // every other buffer is in I/O: wait for one, look again
        WALBENCH_CLOG_CHECK(best_invalid_delta >= 0, "C3", "no CLOG buffer can be evicted");
        wait_io(me, best_invalid);
        continue;
      }
      if (slots_[best_valid].dirty.get() == 0) return best_valid;
      write_page(me, best_valid);  // C4; then look again, as PostgreSQL does
    }
  }

  // SimpleLruWaitIO (control lock exclusive, released while waiting): wait until the client
  // doing the slot's I/O releases its buffer lock.
  void wait_io(Proc<P>& me, uint32_t slot) {
    control_lock_.release(me);
    LWLock<P>& io = buffer_locks_[slot].lock;
    io.acquire(me, kLwShared);
    io.release(me);
    control_lock_.acquire(me, kLwExclusive);
  }

  // SlruInternalWritePage / SlruPhysicalWritePage (control lock exclusive; released for the
  // write, buffer lock held): WAL flushed up to the page's largest group LSN first (C4).
  void write_page(Proc<P>& me, uint32_t slot) {
    const Slot sl = slots_[slot];
    const uint32_t pageno = sl.page_number.get();
    while (sl.status.get() == kSlotWriteInProgress && sl.page_number.get() == pageno) wait_io(me, slot);
    if (sl.dirty.get() == 0 || sl.status.get() != kSlotValid || sl.page_number.get() != pageno)
      return;  // someone else wrote it (or it was replaced) meanwhile
    sl.status.set(kSlotWriteInProgress);
    sl.dirty.set(0);
    LWLock<P>& io = buffer_locks_[slot].lock;
    io.acquire(me, kLwExclusive);
    control_lock_.release(me);
    uint64_t max_lsn = 0;
    for (uint32_t g = 0; g < geom_.lsn_groups_per_page(); ++g)
      max_lsn = std::max(max_lsn, lsns_[size_t{slot} * geom_.lsn_groups_per_page() + g].get());
    const bool flushes = max_lsn != 0 && flush_hook_ != nullptr;
    if (flushes) flush_hook_(flush_ctx_, me, Lsn{max_lsn});  // C4: WAL before data
    std::vector<uint8_t> bytes = page_bytes(slot);
    me.set_wait(WaitEvent::kSlruWrite);
    charge_syscalls<P>(kPageFileSyscalls);
    me.clear_wait();
    {
      const std::lock_guard<std::mutex> fs(store_mutex_);  // shared-state-lint: allow the file system (host memory), charged by charge_syscalls; no P op inside
      store_[pageno] = std::move(bytes);
    }
    control_lock_.acquire(me, kLwExclusive);
    WALBENCH_LOCK_DCHECK(sl.page_number.get() == pageno && sl.status.get() == kSlotWriteInProgress,
                         "C8", "a slot changed while its page was being written");
    sl.status.set(kSlotValid);
    io.release(me);
    ++counters_.page_writes;
    if (flushes) ++counters_.wal_flushes;
  }

  // SimpleLruReadPage (control lock exclusive on entry and exit; released for the read, buffer
  // lock held). write_ok: a page being written out may be used as it is (a reader); otherwise
  // wait for the write (a status update, see the departure in the header).
  uint32_t read_page_locked(Proc<P>& me, uint32_t pageno, bool write_ok) {
    for (;;) {
      const uint32_t slot = select_lru_page(me, pageno);
      const Slot sl = slots_[slot];
      const uint32_t status = sl.status.get();
      if (status != kSlotEmpty && sl.page_number.get() == pageno) {
        if (status == kSlotReadInProgress || (status == kSlotWriteInProgress && !write_ok)) {
          wait_io(me, slot);
          continue;
        }
        ++counters_.page_hits;
        recently_used(slot);
        return slot;
      }
      // An empty slot or a clean victim: read the page into it.
      sl.page_number.set(pageno);
      sl.status.set(kSlotReadInProgress);
      sl.dirty.set(0);
      LWLock<P>& io = buffer_locks_[slot].lock;
      io.acquire(me, kLwExclusive);
      control_lock_.release(me);
      std::vector<uint8_t> bytes;
      {
        const std::lock_guard<std::mutex> fs(store_mutex_);  // shared-state-lint: allow the file system (host memory), charged by charge_syscalls; no P op inside
        const auto it = store_.find(pageno);
        if (it != store_.end()) bytes = it->second;
      }
      if (bytes.empty() && pageno < geom_.page_of(Xid{first_.value - 1}))
        bytes = clog_history_page(geom_, pageno, first_);  // C7: a page the run never wrote
      WALBENCH_CLOG_CHECK(!bytes.empty(), "C5", "CLOG page read before it was zeroed");
      me.set_wait(WaitEvent::kSlruRead);
      charge_syscalls<P>(kPageFileSyscalls);
      me.clear_wait();
      for (uint32_t w = 0; w < geom_.words_per_page(); ++w) {
        uint64_t v;
        std::memcpy(&v, bytes.data() + size_t{w} * 8, 8);
        words_[size_t{slot} * geom_.words_per_page() + w].set(v);
      }
      for (uint32_t g = 0; g < geom_.lsn_groups_per_page(); ++g)
        lsns_[size_t{slot} * geom_.lsn_groups_per_page() + g].set(0);  // SimpleLruZeroLSNs
      control_lock_.acquire(me, kLwExclusive);
      WALBENCH_LOCK_DCHECK(sl.page_number.get() == pageno && sl.status.get() == kSlotReadInProgress &&
                               sl.dirty.get() == 0,
                           "C8", "a slot changed while its page was being read");
      sl.status.set(kSlotValid);
      io.release(me);
      ++counters_.page_reads;
      recently_used(slot);
      return slot;
    }
  }

  // SimpleLruZeroPage via ZeroCLOGPage (the zero-page WAL record is not modelled).
  void zero_page_locked(Proc<P>& me, uint32_t pageno) {
    WALBENCH_CLOG_CHECK(pageno > latest_page_.get(), "C6", "CLOG page zeroed twice");
    const uint32_t slot = select_lru_page(me, pageno);
    zero_slot(slot, pageno);
    ++counters_.page_zeroes;
  }

  void zero_slot(uint32_t slot, uint32_t pageno) {
    for (uint32_t w = 0; w < geom_.words_per_page(); ++w)
      words_[size_t{slot} * geom_.words_per_page() + w].set(0);
    for (uint32_t g = 0; g < geom_.lsn_groups_per_page(); ++g)
      lsns_[size_t{slot} * geom_.lsn_groups_per_page() + g].set(0);
    const Slot sl = slots_[slot];
    sl.page_number.set(pageno);
    sl.status.set(kSlotValid);
    sl.dirty.set(1);
    recently_used(slot);
    latest_page_.set(pageno);  // "Assume this page is now the latest active page"
    counters_.latest_page = pageno;
  }

  std::vector<uint8_t> page_bytes(uint32_t slot) const {
    std::vector<uint8_t> out(geom_.page_size);
    for (uint32_t w = 0; w < geom_.words_per_page(); ++w) {
      const uint64_t v = words_[size_t{slot} * geom_.words_per_page() + w].get();
      std::memcpy(out.data() + size_t{w} * 8, &v, 8);
    }
    return out;
  }

  const ClogGeometry geom_;
  const uint32_t num_buffers_;
  const Xid first_;  // the run's first xid: below it, the history (C7)
  alignas(64) LWLock<P> control_lock_;  // CLogControlLock (XactSLRULock in 13+)
  SlotArrays slots_;
  WordArray words_;  // num_buffers_ pages of words_per_page words
  WordArray lsns_;   // num_buffers_ x lsn_groups_per_page group LSNs
  alignas(64) A32 cur_lru_count_{0};
  typename P::template Shared<uint32_t> latest_page_{0};
  std::deque<BufferLock> buffer_locks_;  // one per slot
  std::mutex store_mutex_;  // shared-state-lint: allow the file system (host memory), charged by charge_syscalls; no P op inside
  std::unordered_map<uint32_t, std::vector<uint8_t>> store_;  // the "disk": page -> bytes
  ClogCounters counters_;
  FlushHook flush_hook_ = nullptr;
  void* flush_ctx_ = nullptr;
};

// GetNewTransactionId: the xid counter (ShmemVariableCache->nextXid) under XidGenLock. A
// top-level xid is stored in Proc::xid; a subtransaction's in the Proc's subxid cache (or the
// cache overflows past kMaxCachedSubxids, as PGPROC's does).
template <class P>
class XidGen {
 public:
  // first: the first xid handed out (kFirstNormalXid, or later after a history: Clog's first).
  explicit XidGen(ProcTable<P>& procs, Xid first = kFirstNormalXid)
      : lock_(&procs, WaitEvent::kXidGen), next_mirror_{first.value}, cache_(first) {}
  XidGen(const XidGen&) = delete;
  XidGen& operator=(const XidGen&) = delete;

  // clog may be nullptr (no CLOG modelled: nothing to extend). pgxact_xid: where a ProcArray
  // (core/clog/proc_array.h) advertises a top-level xid to snapshots (MyPgXact->xid, or PG 14+'s
  // ProcGlobal->xids[pgxactoff]), or nullptr; subxid_status: PG 14+'s
  // ProcGlobal->subxidStates[pgxactoff] (count | overflowed << 8), or nullptr. Both stored under
  // XidGenLock as GetNewTransactionId does.
  Xid assign(Proc<P>& me, Clog<P>* clog, bool subtransaction,
             PlainWord<P, uint32_t>* pgxact_xid = nullptr,
             PlainWord<P, uint16_t>* subxid_status = nullptr) {
    lock_.acquire(me, kLwExclusive);
    const Xid xid{cache_.next_xid.get()};
    WALBENCH_CLOG_CHECK(xid.value >= kFirstNormalXid.value, "C6", "the xid counter wrapped");
    if (clog != nullptr) clog->extend(me, xid);  // ExtendCLOG before advancing nextXid
    cache_.next_xid.set(xid.value + 1);
    next_mirror_ = xid.value + 1;
    if (!subtransaction) {
      me.xid.store(xid.value);
      if (pgxact_xid != nullptr) pgxact_xid->store(xid.value);
    } else {
      const uint32_t n = me.nsubxids.get();
      if (n < kMaxCachedSubxids) {
        me.subxids[n].set(xid.value);
        me.nsubxids.set(n + 1);
        if (subxid_status != nullptr) subxid_status->store(static_cast<uint16_t>(n + 1));
      } else {
        me.subxids_overflowed.set(1);
        if (subxid_status != nullptr) subxid_status->store(static_cast<uint16_t>(n | 1u << 8));
      }
    }
    lock_.release(me);
    return xid;
  }

  // ProcArrayEndTransaction's part that concerns the Proc's xids (owner only).
  static void end_transaction(Proc<P>& me) {
    me.xid.store(0);
    me.nsubxids.set(0);
    me.subxids_overflowed.set(0);
  }

  // After the run.
  Xid next() const { return Xid{cache_.next_xid.get()}; }

  // ShmemVariableCache, whose latestCompletedXid and xactCompletionCount a ProcArray keeps
  // (core/clog/proc_array.h) beside this nextXid.
  VariableCache<P>& variable_cache() { return cache_; }

  // nextXid as last published, readable without the lock at no modelled cost: what a workload
  // uses to pick the xid a tuple it visits was stamped with (the xmin of a row updated earlier,
  // whose value the real system reads from the heap page, not from here). Every xid below it
  // has its CLOG page zeroed (C5).
  Xid recent_next() const { return Xid{static_cast<uint32_t>(next_mirror_.get())}; }

 private:
  alignas(64) LWLock<P> lock_;  // XidGenLock
  Counter next_mirror_{kFirstNormalXid.value};  // written under XidGenLock (instrumentation-like)
  VariableCache<P> cache_;  // its own line (alignas(64)): nextXid, and the ProcArray's two
};

}  // namespace walbench

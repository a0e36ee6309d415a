// XID LOCK TABLE: the heavyweight lock every transaction holds on its own xid, in PostgreSQL's
// shared lock table (XactLockTableInsert at xid assignment, LockReleaseAll at the end).
//
// ORIGIN (PostgreSQL 9.6-17, the layout below; facts read in 15.18's lmgr.c, lock.c and
// dynahash.c, not code. The xid lock and the 16 partitions are older, 8.1-8.2; the 32 freelists
// per partitioned table came in 9.6, 44ca4022f3: see DEPARTURES for 9.2-9.5)
//   - AssignTransactionId (xact.c), after GetNewTransactionId, calls XactLockTableInsert(xid):
//     LockAcquire(LOCKTAG_TRANSACTION(xid), ExclusiveLock), for every xid a backend assigns, a
//     subtransaction's included. Other transactions take ShareLock on it to wait for its end
//     (XactLockTableWait: core/cell/row_locks.h models those waits).
//   - Never the fast path: EligibleForRelationFastPath admits relation locks only. So
//     LockAcquireExtended hashes the 16-byte LOCKTAG (hashcode), takes partition
//     hashcode % NUM_LOCK_PARTITIONS (16) of the LockManager LWLocks (MainLWLockArray, each
//     LWLockPadded: a 128-byte slot) exclusively, and in SetupLockInTable enters a LOCK in the
//     "LOCK hash" and a PROCLOCK in the "PROCLOCK hash" (the PROCLOCK's hashcode is the LOCK's
//     XORed with the PGPROC's address shifted left 4 bits: the same partition and freelist),
//     links them, grants the lock (GrantLock) and releases the partition lock.
//   - Both tables are partitioned dynahash tables in shared memory. A HASH_ENTER reads
//     freeList[0].nentries (the expansion test, made before the partitioned check), walks the
//     bucket's chain, and on a miss takes an element from freeList[hashcode % NUM_FREELISTS (32)]
//     under that freelist's spinlock (pop, nentries++), and links it at the chain's end; an empty
//     freelist allocates more elements from shared memory's reserve, and failing that borrows
//     one from the next freelist that has one, under that freelist's spinlock (get_hash_entry).
//     A HASH_REMOVE walks the chain and, under the spinlock of the freelist its hashcode names,
//     unlinks the element and pushes it there (nentries--). The 32 FreeListData {slock_t mutex; long nentries; HASHELEMENT *freeList} are
//     24 bytes each, packed at the head of the table's HASHHDR (ShmemInitStruct: 128-byte
//     aligned), so two or three share a 64-byte line. Elements are preallocated per freelist in
//     one chunk each (element_alloc; ShmemAlloc, 128-byte aligned): NLOCKENTS() =
//     max_locks_per_transaction (64) x MaxBackends (max_connections + 22 at PG 15's defaults:
//     autovacuum workers and launcher, worker processes, WAL senders), the LOCK table's initial
//     size NLOCKENTS() / 2 (168-byte elements with their HASHELEMENT), the PROCLOCK table's
//     NLOCKENTS() (80 bytes): at max_connections 100, 3,904 and 7,808, 122 and 244 a freelist;
//     a run of N clients needs max_connections >= N, so the model sizes them for
//     max(N, 100). Elements are
//     recycled last-in first-out by whichever backend's hash lands on the freelist next.
//     Buckets: next_pow2 of the element counts, 4,096 and 8,192 8-byte chain heads.
//   - LockReleaseAll (ProcReleaseLocks, at commit and abort): marks each PROCLOCK's releaseMask
//     (the owner's word, no lock), then for each partition in which the backend holds a
//     PROCLOCK (MyProc->myProcLocks[p]) takes that partition's lock exclusively once, ungrants
//     (UnGrantLock), unlinks (CleanUpLock) and removes the PROCLOCK and, nobody else requesting
//     it, the LOCK, and releases the partition lock.
//   Sizes and offsets: PostgreSQL 15.18 on x86-64 (LOCK 152 bytes, PROCLOCK 64, HASHELEMENT 16,
//   PGPROC 880), measured on a probe compiled against its headers (results/README.md "What
//   PostgreSQL 15 does in shared memory per transaction that the model leaves out").
//
// SHARED STATE (all of it modelled memory; which lock protects each word)
//   partitions_[p]         LWLock:LockManager partition p (its own 128-byte slot).
//   FreeLists::list[i]     per table, 32 x {mutex, nentries, head} at PostgreSQL's 24-byte
//                          stride: head and nentries of list i under its mutex (X2), which its
//                          partition i % 16 takes (only xids of that partition hash to it) and a
//                          borrower from another partition; list[0].nentries is also read
//                          without any lock by every HASH_ENTER.
//   buckets (two arrays)   chain heads, element id + 1 (0: empty); bucket b belongs to partition
//                          b % 16 (the bucket is the hashcode's low bits) and is written under it.
//   element words          each element's bytes as 8-byte words at PostgreSQL's offsets: word 0
//                          the chain / freelist link (element id + 1), word 1 the hashcode, word
//                          2 (and 3) the key; the rest of the LOCK or PROCLOCK is written a line
//                          at a time where PostgreSQL writes it. Under the element's partition,
//                          except a PROCLOCK's releaseMask word (its owner only).
//   Client-local (plain; PostgreSQL's LOCALLOCK hash and MyProc->myProcLocks): each client's
//   list of the xid locks it holds, with their elements.
//
// INVARIANTS (checked; a broken one aborts with its id)
//   X1  An element is on exactly one list: its freelist or one bucket chain; a freelist's
//       nentries counts its elements in use.
//   X2  A freelist's words change only under its mutex; its head and nentries only under its
//       partition's lock too, except when another partition borrows an element from it.
//   X3  After LockReleaseAll the client holds no xid lock; a held lock's LOCK and PROCLOCK are on
//       their bucket chains; after a run whose transactions all ended, the tables are empty
//       (WalCell::verify).
//
// DEPARTURES (named)
//   - The hashcode is a 32-bit mix of the xid (PostgreSQL: hash_bytes over the LOCKTAG), as
//     uniform over partitions, freelists and buckets; the PGPROC address in the PROCLOCK's is the
//     client's index x 880 (PostgreSQL's stride; the base address's bits are not known).
//   - A chain walk reads each element's hashcode word; PostgreSQL also compares the key of an
//     element whose hashcode matches (the same line).
//   - A LOCK's or PROCLOCK's fields are written a line at a time (one store per 64-byte line a
//     step writes), not field by field; what a step writes on a line it already holds costs a hit.
//   - The freelist mutex is a TAS word, spun on with SPIN_DELAY when taken (only a borrow from
//     another partition's freelist can meet its owner there), without s_lock's sleeps, its
//     statistics or a wait event.
//   - An empty freelist borrows at once; PostgreSQL first allocates more elements from the
//     shared memory its size estimate reserved (rare either way: the tables hold one LOCK per
//     assigned xid of the running transactions, far below their size).
//   - PostgreSQL 9.2-9.5 (the 2011 table's 9.2) had one freelist and one spinlock per table,
//     taken by every partition; the model lays out 9.6+'s 32 for every version. MaxBackends is
//     PG 15's (9.2 added 4 to max_connections, not 22).
//   - LOCALLOCK, the resource owner and MyProc->myProcLocks are client-local or the client's own
//     line, unpriced; the table's read-only header fields and directory are not modelled.
//   - Aborts never happen here; a row-lock waiter's ShareLock on another xid is
//     core/cell/row_locks.h's per-client LWLock, not a PROCLOCK in this table.
//   Shared WAL only: ideal's private streams (each client its own xids) have no lock table.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/aligned_array.h"
#include "core/counter.h"
#include "core/locks/lwlock.h"
#include "core/locks/spinlock.h"
#include "core/platform/line_names.h"
#include "core/platform/platform.h"
#include "core/proc.h"
#include "core/wal/types.h"

#define WALBENCH_XIDLOCK_CHECK(cond, id, msg)                                                    \
  do {                                                                                           \
    if (!(cond)) {                                                                               \
      std::fprintf(stderr, "%s:%d: xid lock table invariant %s violated: %s\n", __FILE__,        \
                   __LINE__, id, msg);                                                           \
      std::abort();                                                                              \
    }                                                                                            \
  } while (0)

namespace walbench {

template <class P>
class XidLockTable {
 public:
  static constexpr uint32_t kPartitions = 16;   // NUM_LOCK_PARTITIONS
  static constexpr uint32_t kFreeLists = 32;    // NUM_FREELISTS
  static constexpr uint32_t kPgprocBytes = 880;  // sizeof(PGPROC), PostgreSQL 15 x86-64

  struct Counters {
    Counter inserts;                 // xid locks entered (XactLockTableInsert)
    Counter releases;                // xid locks removed (LockReleaseAll)
    Counter partition_acquisitions;  // LockManager partition locks taken by these two
  };

  XidLockTable(ProcTable<P>& procs, uint32_t clients)
      : lock_table_(lock_entries_for(clients) / 2, kLockElementBytes, "LOCK hash"),
        proclock_table_(lock_entries_for(clients), kProcLockElementBytes, "PROCLOCK hash"),
        held_(clients) {
    for (uint32_t p = 0; p < kPartitions; ++p)
      partitions_.push_back(std::make_unique<PaddedLock>(&procs));
    for (auto& h : held_) h.reserve(8);  // no allocation per transaction (at most 1 + kSavepoints)
  }

  // NLOCKENTS(): max_locks_per_transaction x MaxBackends, for a server whose max_connections
  // admits the clients (PostgreSQL 15's defaults otherwise).
  static uint32_t lock_entries_for(uint32_t clients) {
    return kMaxLocksPerTransaction * (std::max(clients, kDefaultMaxConnections) + kAuxiliaryBackends);
  }
  XidLockTable(const XidLockTable&) = delete;
  XidLockTable& operator=(const XidLockTable&) = delete;

  // XactLockTableInsert(xid): LockAcquire(LOCKTAG_TRANSACTION(xid), ExclusiveLock).
  void insert(Proc<P>& me, Xid xid) {
    const uint32_t hash = hashcode(xid);
    const uint32_t me_index = client_index(me);
    const uint32_t proclock_hash = hash ^ (me_index * kPgprocBytes << 4);
    LWLock<P>& partition = partition_lock(hash);
    partition.acquire(me, kLwExclusive);
    // SetupLockInTable: the LOCK, then the PROCLOCK that links this backend to it.
    const uint32_t lock = lock_table_.enter(hash, xid.value);
    lock_table_.touch(lock, 32, kLockElementBytes);  // LOCK init: masks, queues, requested, granted
    const uint32_t proclock = proclock_table_.enter(proclock_hash, lock + 1);
    proclock_table_.touch(proclock, 32, kProcLockElementBytes);  // PROCLOCK init, both links
    partition.release(me);
    held_[me_index].push_back({xid.value, hash, proclock_hash, lock, proclock});
    ++counters_of(me_index).inserts;
    ++counters_of(me_index).partition_acquisitions;
  }

  // LockReleaseAll(DEFAULT_LOCKMETHOD): every xid lock the client holds, a partition at a time.
  void release_all(Proc<P>& me) {
    const uint32_t me_index = client_index(me);
    std::vector<Held>& mine = held_[me_index];
    if (mine.empty()) return;
    for (const Held& h : mine)  // releaseMask: the owner's word, no lock
      proclock_table_.touch(h.proclock, kReleaseMaskOffset, kReleaseMaskOffset + 8);
    for (uint32_t p = 0; p < kPartitions; ++p) {
      bool taken = false;
      for (const Held& h : mine) {
        if (h.hash % kPartitions != p) continue;
        if (!taken) {
          partitions_[p]->lock.acquire(me, kLwExclusive);
          taken = true;
          ++counters_of(me_index).partition_acquisitions;
        }
        // UnGrantLock + CleanUpLock: the LOCK's counts and masks and its PROCLOCK list head,
        // the PROCLOCK's masks and links; then both elements leave their tables.
        lock_table_.touch(h.lock, 32, kLockElementBytes);
        proclock_table_.touch(h.proclock, 32, kProcLockElementBytes);
        proclock_table_.remove(h.proclock_hash, h.proclock);
        lock_table_.remove(h.hash, h.lock);
        ++counters_of(me_index).releases;
      }
      if (taken) partitions_[p]->lock.release(me);
    }
    mine.clear();  // X3
  }

  // Locks held now, over every client (after a run: 0 when every transaction ended; not while
  // clients run).
  uint64_t held() const {
    uint64_t n = 0;
    for (const auto& h : held_) n += h.size();
    return n;
  }
  Counters totals() const {
    Counters t;
    for (const auto& c : counters_) {
      t.inserts += c.inserts;
      t.releases += c.releases;
      t.partition_acquisitions += c.partition_acquisitions;
    }
    return t;
  }
  // May be called while clients run (Counters only).
  nlohmann::json stats() const {
    const Counters t = totals();
    return {{"inserts", t.inserts.get()},
            {"releases", t.releases.get()},
            {"partition_acquisitions", t.partition_acquisitions.get()}};
  }
  // A 32-bit mix of the xid (DEPARTURES: PostgreSQL hashes the LOCKTAG's 16 bytes).
  // Public for tests: which partition (% 16) and freelist (% 32) an xid's lock uses.
  static uint32_t hashcode(Xid xid) {
    uint64_t z = (static_cast<uint64_t>(xid.value) << 8 | 4 /* LOCKTAG_TRANSACTION */) + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return static_cast<uint32_t>(z ^ (z >> 31));
  }
  // Elements in use per table, from the freelists' nentries (outside a run: no cost).
  int64_t lock_entries() const { return lock_table_.entries(); }
  int64_t proclock_entries() const { return proclock_table_.entries(); }

 private:
  // PostgreSQL 15's defaults: max_locks_per_transaction 64, max_connections 100, and 22 more
  // backends in MaxBackends (autovacuum_max_workers 3 + its launcher, max_worker_processes 8,
  // max_wal_senders 10); max_prepared_transactions 0.
  static constexpr uint32_t kMaxLocksPerTransaction = 64;
  static constexpr uint32_t kDefaultMaxConnections = 100;
  static constexpr uint32_t kAuxiliaryBackends = 22;
  static constexpr uint32_t kLockElementBytes = 168;   // HASHELEMENT 16 + LOCK 152
  static constexpr uint32_t kProcLockElementBytes = 80;  // HASHELEMENT 16 + PROCLOCK 64
  static constexpr uint32_t kReleaseMaskOffset = 16 + 28;  // PROCLOCK.releaseMask: tag 16, groupLeader 8, holdMask 4

  using Word = PlainWord<P, uint64_t>;

  // FreeListData: slock_t mutex (its 8-byte slot), long nentries, HASHELEMENT *freeList.
  struct FreeListData {
    alignas(8) SpinLockWordT<P> mutex;
    Word nentries;
    Word head;  // element id + 1; 0: empty
  };
  static_assert(sizeof(FreeListData) == 24, "FreeListData is PostgreSQL's 24 bytes");
  struct alignas(128) FreeLists {
    FreeListData list[kFreeLists];
  };

  // One partitioned dynahash table: its freelists, buckets and elements.
  class Table {
   public:
    // elements: the table's initial size, preallocated kFreeLists ways; as many buckets as the
    // next power of two (dynahash's fill factor 1).
    Table(uint32_t elements, uint32_t element_bytes, const char* name)
        : element_bytes_(element_bytes),
          per_list_(elements / kFreeLists),
          chunk_words_(round_up(per_list_ * element_bytes, 128) / 8),
          buckets_(next_pow2(elements)),
          bucket_heads_(make_aligned_array<Word>(buckets_, 128)),
          words_(make_aligned_array<Word>(static_cast<size_t>(chunk_words_) * kFreeLists, 128)),
          free_lists_(std::make_unique<FreeLists>()),
          name_(name) {
      if constexpr (runs_in_virtual_time<P>()) {  // `walbench run --top-lines` (line_names.h)
        line_names::add(free_lists_.get(), sizeof(FreeLists), name_.freelists.c_str());
        line_names::add(bucket_heads_.get(), sizeof(Word) * buckets_, name_.buckets.c_str());
        line_names::add(words_.get(), sizeof(Word) * chunk_words_ * kFreeLists, name_.elements.c_str());
      }
      // element_alloc: each freelist's chunk linked in address order, the last element first.
      for (uint32_t i = 0; i < kFreeLists; ++i) {
        uint32_t head = 0;
        for (uint32_t k = 0; k < per_list_; ++k) {
          const uint32_t e = i * per_list_ + k;
          word(e, 0).store(head, std::memory_order_relaxed);  // outside a run: no cost
          head = e + 1;
        }
        free_lists_->list[i].head.store(head, std::memory_order_relaxed);
      }
    }
    ~Table() {
      if constexpr (runs_in_virtual_time<P>()) {
        line_names::remove(free_lists_.get());
        line_names::remove(bucket_heads_.get());
        line_names::remove(words_.get());
      }
    }
    Table(const Table&) = delete;
    Table& operator=(const Table&) = delete;

    // HASH_ENTER of a key that is not in the table (a new xid): returns the element.
    uint32_t enter(uint32_t hash, uint64_t key) {
      (void)free_lists_->list[0].nentries.load();  // expand_table's test, before IS_PARTITIONED
      Word* link = &bucket_heads_[hash % buckets_];
      for (uint32_t cur = static_cast<uint32_t>(link->load()); cur != 0;) {
        (void)word(cur - 1, 1).load();  // hashvalue: not this key (new xids are never present)
        link = &word(cur - 1, 0);
        cur = static_cast<uint32_t>(link->load());
      }
      const uint32_t e = pop(hash % kFreeLists);
      word(e, 1).store(hash, std::memory_order_release);
      word(e, 2).store(key, std::memory_order_release);
      link->store(e + 1, std::memory_order_release);  // at the chain's end; e's link is 0
      return e;
    }

    // HASH_REMOVE of element e (hashcode hash).
    void remove(uint32_t hash, uint32_t e) {
      Word* link = &bucket_heads_[hash % buckets_];
      for (uint32_t cur = static_cast<uint32_t>(link->load()); cur != e + 1;) {
        WALBENCH_XIDLOCK_CHECK(cur != 0, "X3", "a held lock's element is not on its bucket chain");
        (void)word(cur - 1, 1).load();
        link = &word(cur - 1, 0);
        cur = static_cast<uint32_t>(link->load());
      }
      (void)word(e, 1).load();
      // Under the freelist's spinlock: nentries--, the unlink, the push.
      FreeListData& f = free_lists_->list[hash % kFreeLists];
      lock_free_list(f);
      WALBENCH_XIDLOCK_CHECK(f.nentries.load() > 0, "X1", "a freelist's nentries went negative");
      f.nentries.store(f.nentries.load() - 1, std::memory_order_release);
      link->store(word(e, 0).load(), std::memory_order_release);
      word(e, 0).store(f.head.load(), std::memory_order_release);
      f.head.store(e + 1, std::memory_order_release);
      f.mutex.unlock();
    }

    // One store per 64-byte line of element e's bytes [begin, end).
    void touch(uint32_t e, uint32_t begin, uint32_t end) {
      const size_t first = byte_of(e) + begin, last = byte_of(e) + end - 1;
      for (size_t line = first / 64; line <= last / 64; ++line) {
        const size_t at = std::max(first, line * 64) / 8;
        words_[at].store(0, std::memory_order_release);
      }
    }

    int64_t entries() const {
      int64_t n = 0;
      for (const FreeListData& f : free_lists_->list) n += static_cast<int64_t>(f.nentries.load());
      return n;
    }

   private:
    static uint32_t round_up(uint32_t n, uint32_t to) { return (n + to - 1) / to * to; }
    static uint32_t next_pow2(uint32_t n) {
      uint32_t p = 1;
      while (p < n) p <<= 1;
      return p;
    }
    size_t byte_of(uint32_t e) const {
      return static_cast<size_t>(e / per_list_) * chunk_words_ * 8 +
             static_cast<size_t>(e % per_list_) * element_bytes_;
    }
    Word& word(uint32_t e, uint32_t w) { return words_[byte_of(e) / 8 + w]; }

    // S_LOCK without s_lock's sleeps (DEPARTURES): TAS, and while taken TAS_SPIN with a delay.
    static void lock_free_list(FreeListData& f) {
      while (f.mutex.tas() != 0)
        while (f.mutex.tas_spin() != 0) SpinLockWordT<P>::delay();
    }

    // get_hash_entry: an element off freelist i (its count goes up), or, when i is empty, off
    // the next freelist that has one (borrowed: i's count goes up all the same).
    uint32_t pop(uint32_t i) {
      FreeListData& own = free_lists_->list[i];
      lock_free_list(own);
      uint32_t head = static_cast<uint32_t>(own.head.load());
      if (head != 0) {
        own.head.store(word(head - 1, 0).load(), std::memory_order_release);
        own.nentries.store(own.nentries.load() + 1, std::memory_order_release);
        own.mutex.unlock();
      } else {
        own.mutex.unlock();
        for (uint32_t k = 1; k < kFreeLists && head == 0; ++k) {
          FreeListData& other = free_lists_->list[(i + k) % kFreeLists];
          lock_free_list(other);
          head = static_cast<uint32_t>(other.head.load());
          if (head != 0) other.head.store(word(head - 1, 0).load(), std::memory_order_release);
          other.mutex.unlock();
        }
        WALBENCH_XIDLOCK_CHECK(head != 0, "X1", "every freelist of a lock table is empty");
        lock_free_list(own);
        own.nentries.store(own.nentries.load() + 1, std::memory_order_release);
        own.mutex.unlock();
      }
      word(head - 1, 0).store(0, std::memory_order_release);  // the chain's new end
      return head - 1;
    }

    struct Names {  // for line_names: string literals per table
      explicit Names(const char* table)
          : freelists(std::string(table) + " freelists"), buckets(std::string(table) + " buckets"),
            elements(std::string(table) + " elements") {}
      std::string freelists, buckets, elements;
    };
    const uint32_t element_bytes_, per_list_, chunk_words_, buckets_;
    AlignedArray<Word> bucket_heads_;
    AlignedArray<Word> words_;
    std::unique_ptr<FreeLists> free_lists_;
    Names name_;
  };

  struct alignas(128) PaddedLock {  // LWLockPadded
    explicit PaddedLock(ProcTable<P>* procs) : lock(procs, WaitEvent::kLockManager) {}
    LWLock<P> lock;
  };
  struct Held {
    uint32_t xid, hash, proclock_hash, lock, proclock;
  };
  struct alignas(64) PerClientCounters : Counters {};

  LWLock<P>& partition_lock(uint32_t hash) { return partitions_[hash % kPartitions]->lock; }
  uint32_t client_index(const Proc<P>& me) const {
    const uint32_t i = static_cast<uint32_t>(me.id.value);
    WALBENCH_XIDLOCK_CHECK(i < held_.size(), "X3", "an xid lock for a process that is no client");
    return i;
  }
  Counters& counters_of(uint32_t client) { return counters_[client]; }

  std::vector<std::unique_ptr<PaddedLock>> partitions_;
  Table lock_table_;
  Table proclock_table_;
  std::vector<std::vector<Held>> held_;  // client-local (LOCALLOCK)
  std::vector<PerClientCounters> counters_ = std::vector<PerClientCounters>(held_.size());
};

}  // namespace walbench

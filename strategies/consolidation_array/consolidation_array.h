// consolidation_array: Aether's consolidation array (C-array) on PostgreSQL's WAL.
//
// Origin
//   Johnson, Pandis, Stoica, Athanassoulis, Ailamaki, "Aether: A Scalable Approach to Logging",
//   VLDB 2010 (section 5 and appendix A.2/A.3: the consolidation array, "decoupled buffer fill"
//   and "delegated buffer release"); "Scalability of write-ahead logging on multicore and
//   multisocket hardware", VLDB Journal 2012. Readable code: Shore-MT's successor
//   caetanosauer/zero, src/sm/log_carray.{h,cpp} and log_core::insert (_join_carray,
//   _copy_to_buffer, _leave_carray). Facts: /work/shared/BEYOND.md section 1.
//   Our code, not theirs: Aether's log is not PostgreSQL's, and the mapping below is ours.
//
// What it replaces in PostgreSQL's path (xlog.c XLogInsertRecord)
//   ReserveXLogInsertLocation  once per GROUP instead of once per record: the group's leader
//                              takes insertpos_lck (the spinlock around Insert->CurrBytePos /
//                              PrevBytePos) and reserves the whole group. insertpos_lck is
//                              Aether's "log insert lock": it is the lock that serialises LSN
//                              allocation in PostgreSQL; the WAL insertion locks are not (they
//                              exist for progress tracking, which the release chain replaces).
//   WALInsertLockAcquire/Release, insertingAt
//                              gone: members copy with no lock; completion is published in
//                              reservation order through the exposed end (below), and a client
//                              about to block in GetXLogBuffer publishes its own insertingAt in
//                              a per-client progress word (advertise).
//   WaitXLogInsertionsToFinish reads the exposed end (fast path), else sleeps until the group
//                              that covers its target is exposed (W5); while a client that
//                              advertised is still in flight it may also scan the per-client
//                              progress words (the deadlock escape that insertingAt is in
//                              PostgreSQL).
//
// Design summary
//   K active slots. A client joins one with a CAS on the slot's packed word
//     [closed:1][count:9][last_off:27][bytes:27]   (offsets and sizes in MAXALIGN = 8 B units)
//   adding 1 to count, its MAXALIGNed size to bytes, and setting last_off := old bytes (its own
//   offset). The word read before its CAS gives the member its offset (old bytes) and its
//   predecessor's offset in the group (old last_off): that is how the group carries xl_prev to
//   every member without a size array. The client that found count == 0 is the leader: it grabs a
//   free slot from the pool, takes insertpos_lck, closes its slot (exchange to closed, fixing the
//   group), installs the fresh slot in its place, reserves [base, base + bytes) and takes a group
//   number g, sets PrevBytePos to the group's last record (base + last_off), releases the lock,
//   and publishes (remaining = count, g, end, base) in the slot. Its own xl_prev is the previous
//   PrevBytePos; every other member's is base + its old last_off. Members wait until base is
//   published (W3), then copy in parallel at base + offset (pages and segments crossed by a
//   group are handled by BytePos arithmetic: page headers are outside the byte-position space).
//   Leaving: fetch_sub(remaining); the member that brings it to 0 frees the slot and releases the
//   group in order of g:
//     delegated_release = false  it waits until group g - 1 is exposed (released_ == g; woken by
//                                g - 1's releaser, W2), then exposes the group's end.
//     delegated_release = true   it records (g, end) in the release ring (entry g % R, once group
//                                g - R is exposed: C8); if released_ == g it
//                                claims and exposes it itself, and whoever exposes a group also
//                                claims and exposes the next one if it is recorded (Aether's
//                                delegated release: a finished group waits for the one before
//                                it only when R groups are pending, C8).
//   Oversized records (more than a slot can count, 1 GiB) reserve alone under insertpos_lck as a
//   group of one without a slot.
//
// Shared state (what protects it)
//   insertpos_lck_                   SpinLock (WaitEvent kInsertPosSpin), own cache line
//   curr_byte_pos_, prev_byte_pos_,  protected by insertpos_lck_ (CurrBytePos, PrevBytePos, and
//   next_group_                      the group counter)
//   active_[k]                       Atomic: index of the open slot of active position k
//   slots_[i].word                   Atomic packed word: joins (CAS), close (exchange by the
//                                    leader), open (store 0 by the installing leader)
//   slots_[i].home                   Atomic: the active position it is installed at (set before
//                                    opening)
//   slots_[i].base/group/end/remaining  Atomics written by the leader after the close, base last;
//                                    remaining decremented by members
//   slots_[i].in_use                 Atomic: 0 free, 1 grabbed (CAS by a leader, store 0 by the
//                                    group's last member)
//   exposed_                         Atomic end LSN: every group below it is copied (only grows;
//                                    written only by the client releasing group released_)
//   released_                        Atomic: number of groups exposed (groups 0..released_-1)
//   ring_[g % R].done / .end         Atomics (delegated only): done = g + 1 while group g is
//                                    finished and not yet exposed, 0 otherwise; written only by
//                                    g's last member (C8), cleared by the CAS that claims g
//   ring_[g % R].waiters             Atomic wait list (W1) of clients waiting for group g's
//                                    exposure: pushed by waiters, emptied by g's exposer (W2)
//   slots_[i].waiters                Atomic wait list of the members waiting for base and of
//                                    probers waiting for the slot to open or be replaced (W3)
//   progress_[c].waiters             Atomic wait list of evicting inserters waiting for c's
//                                    progress word to change (C9, C10)
//   waiters_[c].next / .state        Atomics: c's link on the list it is pushed on and its
//                                    kNotQueued / kQueued / kSleeping state (W1, W2)
//   progress_[c]                     Atomic per client, own line: kIdle; joining(i, o) (about
//                                    to join, or joined, slot i at an offset of at least o,
//                                    start not known yet); kUnknown (reserving alone); or an LSN below which c
//                                    has copied all it reserved (its start, then what it
//                                    advertised)
//   advertised_                      Atomic: clients in flight that advertised (enables the scan)
//   clients_[]                       owner-only per client: slot hint, inserting, advertised,
//                                    its last group and that group's end (W5)
//
// Invariants
//   C1 Only the leader of a slot (the client whose CAS saw count == 0) closes it, and it does so
//      under insertpos_lck_, so groups are reserved in the order of g, contiguously:
//      group g + 1 starts where group g ends.
//   C2 A member's offset is the bytes field before its CAS and its predecessor's offset is the
//      last_off field before its CAS; the leader's predecessor is the PrevBytePos it read. Hence
//      every record's xl_prev is the start of the record reserved just before it.
//   C3 A slot is reused (grabbed) only after every member of its group has copied (remaining
//      reached 0) and is opened only after it is installed, so a stale index never joins a
//      closed group nor a slot that is not active.
//   C4 exposed_ only grows, in group order: group g's end is exposed only after groups 0..g-1
//      were exposed and all of g's members copied.
//   C5 progress_[c] is set to joining(i, o) (seq_cst) before its join CASes on slot i, o at
//      most the offset the CAS would give it (kUnknown before reserving alone), and to kIdle
//      only after c copied; so every reservation below a CurrBytePos a flusher read under
//      insertpos_lck_ belongs to a client whose progress it sees non-idle, or is copied.
//   C6 wait_insertions(upto) returns p >= min(upto, reserved end) with every insertion below p
//      finished: p = exposed_ (C4), or, for an evicting inserter (C10), a scan's min over
//      in-flight clients' progress, where a joining(i, o) client counts as slot i's base + o
//      when that base is published, is skipped when slot i is still open (whatever it joins
//      is reserved after the flusher's read), and otherwise (closed, base not yet published:
//      the leader publishes after its insertpos_lck_ section) makes the scan give 0, as a
//      kUnknown one does (C5). Publishing base inside the section instead gave 261k tps for
//      1024 clients of 16 B on 480 vCPU, where twelve seeds of this version give 0.49-1.05M
//      (members read the slot's line). Resolving joining clients is what lets an evicting
//      inserter pass by the scan while hundreds of clients wait in their groups: with an
//      opaque "joined" state every scan failed, and 16 KiB records with 1024 clients (64 vCPU,
//      WAL only) ran 2,660 tps against insert_locks's 53-61k.
//   C7 A client waits (for base, for released_, for a ring entry) only with progress joining(i, o)
//      while the wait cannot depend on a flusher (waiting for base: the leader only takes
//      insertpos_lck_; a prober waiting for a full or closed slot (W3), whose joining word may
//      be stale: that slot's leader likewise), or with progress kIdle; so flushers never wait
//      for a client that waits for them. A flusher held by a prober's stale word waits for that
//      leader's lock section, not for a flush.
//   C8 (delegated) Group g records itself in ring_[g % R] only once released_ > g - R. Then group
//      g - R was claimed (its entry cleared) before it was exposed, and the entry stays g's
//      until g is claimed, since g + R waits for released_ > g. An entry found free is not
//      enough: it is free too while g - R is exposed but g is still copying, and a g + R that
//      took it would wait for g forever (and g for its entry).
//   C9 Every change of a client's progress word (joining, its start known, its copy done, an
//      advertise) is followed by a wake-up of that client's progress_[c].waiters, as
//      LWLockUpdateVar and LWLockReleaseClearVar wake an insertion lock's waiters. No exposure
//      needs to wake them: a scan's minimum rises past upto only when the client that held it
//      down changes its word.
//   C10 Only a client that is itself inserting (it advertised, in GetXLogBuffer's eviction) waits
//      on a progress word: it is the one the insertions it waits for may wait for (the
//      deadlock insertingAt exists for). It sleeps on the list of the client its last scan
//      found lowest (PostgreSQL's LWLockWaitForVar on the first insertion lock still behind),
//      not on one list for all: with 1024 clients of 16 KiB every progress change woke every
//      evicting inserter to scan 1024 words, their scans took the CPUs, and the client they
//      waited for queued for WALBufMappingLock for tens of virtual ms (2,660 tps). Other
//      waiters for insertions (commits, the WAL writer) hold nothing anybody inserting waits
//      for, so they may sleep until their group is exposed.
//
// Wait lists (W; PostgreSQL's PGPROC semaphore, queued like the clog group list)
//   W1 A wait list is a Treiber stack of procno + 1 in one atomic word. A waiter pushes itself
//      (state := kQueued, next := head, CAS head), then rechecks its condition: if it holds, the
//      waker may have come before the push, so it empties the list itself (W2), waking the
//      others too, who recheck theirs. Then it spins on its own state word (a local spin: the
//      waker writes it once) up to a budget (kSpinsBeforeSleep for members and releasers, as
//      Aether's threads spin; none for waits for insertions, as WaitXLogInsertionsToFinish
//      sleeps at once), CASes kQueued -> kSleeping and sleeps on its Proc semaphore until its
//      state is kNotQueued, giving back posts that were not its (LWLock I9). No lost wake-up:
//      the push and the waker's condition store are full barriers, each followed by a read of
//      the other (Dekker).
//   W2 A waker makes the condition true (a seq_cst store), then reads the list word and, if it is
//      not empty, exchanges it with empty and for each client reads next, exchanges its state
//      to kNotQueued and posts its semaphore if the old state was kSleeping. Exactly one post
//      per sleep; a client is on at most one list, and only between its push and its wake-up.
//   W3 The leader publishes base, then wakes its slot's list (members; probers); a leader that
//      installs and opens a fresh slot wakes that slot's list after unlocking. A prober that
//      found every active position closed or full waits on the slot it saw last until it
//      opens, is replaced at its position, or has its base.
//   W4 (delegated_release false) A releaser that slept wakes the releasers asleep behind it
//      (groups g + 2, g + 3, ... while their lists are not empty), so that they spin again
//      while the chain drains: otherwise a chain that fell asleep once pays a semaphore
//      wake-up per group, each longer than a spin phase, and stays asleep (the old convoy).
//   W5 A wait for insertions up to upto sleeps on the list of the group whose exposure covers
//      upto: the caller's own last group if upto lies within it (a commit's flush of its own
//      record), else the last group reserved when it read CurrBytePos. Not the first unexposed
//      group: with many committers every exposure would wake them all (tried: at 256 clients
//      the exposer of a chain of 80 groups posted ~247 sleepers per group and throughput fell
//      to 3.5k tps).
//   W6 A releaser waiting for its predecessor's release (delegated_release false) spins only
//      kReleaseSpinsBeforeSleep (RocksDB's AwaitState: 200 PAUSE loops) before it sleeps: its
//      wait is a whole chain of releases, and with more clients than hardware threads a longer
//      spin holds the CPU its predecessors need (hazard d). Members (a leader's short lock
//      section) and delegated lap waits keep kSpinsBeforeSleep: with 200 the delegated
//      default lost a quarter at 256-1024 clients with asynchronous commit (848k -> 636k).
//
// Insert
//   1-2 progress := joining(slot, offset); join the slot (CAS), trying the next active
//     position on failure (progress again only when the offset it would get fell, C5)
//   3 leader: grab a free slot, insertpos_lck_, close, install, reserve, PrevBytePos, unlock,
//     publish, wake the slot's waiters (W3); member: wait until base is published (W1, W3)
//   4 progress := start; set xl_prev, finish the CRC; copy (GetXLogBuffer may advertise + block)
//   5 progress := kIdle; fetch_sub(remaining); the last one frees the slot and releases (C4)
// Wait (WaitXLogInsertionsToFinish)
//   exposed_ >= upto: return it. Else read CurrBytePos and the group count under insertpos_lck_,
//   clamp upto; loop: exposed_ >= upto: return it; if advertised_ > 0, scan progress_ (C6);
//   sleep on the target group's list (W5), or on the lowest client's progress list (C10).
// Wake paths (W1-W6): every wait sleeps on a wait list after its spin budget and is woken by
//   the client that makes its condition true: the leader (base), the exposer of a group
//   (releasers of the next group, delegated lap waits, waits for insertions), a client whose
//   progress word changes (the evicting inserters waiting on it, C9).
//   Fixed hazards. (c) Reservations in flight spanning the whole ring (64 vCPU, WAL only,
//   1024 clients of 16 KiB in a 16 MiB ring: 2,660 tps against insert_locks's 53-61k; on 480
//   vCPU 110): every page initialisation evicts a page a client is still copying into; the
//   evicting inserters' scans failed on clients that had joined without knowing their start,
//   and every progress change woke all of them to scan again, their scans took the CPUs, and
//   the client they waited for sat in WALBufMappingLock's queue. Fixed by C5/C6 (joining
//   clients resolved through their slot's base) and C10 (sleep on the lowest client's word):
//   42-45k tps on 64 vCPU, 20k on 480 vCPU (insert_locks 40-61k, link_buf 20-54k).
//   (b) With synchronous commit, many clients started slowly (64 vCPU, 16 B,
//   1024 clients: no transaction in the first 10 virtual ms, 97.7k tps in the fourth 10 ms
//   against insert_locks's 333k; a cell took 4.5 minutes of host time): committers polled
//   exposed_ with sleeps, and while a client blocked in GetXLogBuffer (every first insertion
//   into a fresh page at start-up) each poll scanned all 1024 progress words (59078 scans in the
//   first 1.04 ms): the pollers took the CPUs the inserters needed. The suspected cause (join's
//   shared backoff) was not it: no base wait slept in that window; it is fixed anyway (W3).
//   Now 1024 clients run 261k tps in the first 10 ms and the cell takes 7.6 s of host time.
//   (a) delegated_release = false: releasers polled released_; once asleep, each group's
//   exposure waited for its releaser's next wake-up (64 vCPU, 16 B, no transactions: 17k tps
//   at 16-64 clients against insert_locks's 2.6-3.4M). Now 2.2-2.4M at 8-64 clients (W2, W4).
//   (d) delegated_release = false with more clients than hardware threads: releasers spinning
//   1000 PAUSE loops for their turn held the CPUs that the releasers before them, woken but
//   not running, needed (64 vCPU, 16 B, sync commit: 256 clients 4.8k tps against the
//   delegated release's 400k; WAL only 17.8k against 1.11M). W6: 403k and 1.07M. Cost: at
//   exactly one client per hardware thread (64 clients, 16 B, async commit) 1.03M -> 706k
//   (delegated 944k), and 480 vCPU, 256 clients, 1 KiB, WAL only stays at 129k (delegated
//   292k). An adaptive spin that knows whether the predecessor runs could recover both.
// Lock order: only insertpos_lck_, never held while waiting. Copy may take WALBufMappingLock /
//   WALWriteLock through Wal::get_buffer, with progress advertised first.
// Departures: the flushers' view is one exposed pointer plus the per-client progress escape
//   (Aether has no buffer eviction that waits for flushes, so it needs no escape); the group
//   size is capped by the packed word (511 members, 1 GiB), a full slot is skipped like a
//   closed one; Aether's MCS insert lock is PostgreSQL's TAS spinlock here; waits spin, then
//   block on a semaphore (Aether's threads only spin).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/locks/spinlock.h"
#include "core/proc.h"
#include "core/wal/format.h"
#include "core/wal/wal.h"
#include "core/wal/types.h"
#include "strategies/strategy.h"

namespace walbench {

StrategyInfo consolidation_array_info();

struct ConsolidationArrayParams {
  uint32_t slots = 3;  // active slots (Zero: 3 active of 256)
  bool delegated_release = true;
  // Throws std::invalid_argument on a bad value.
  static ConsolidationArrayParams from_json(const nlohmann::json& j);
};

// The packed slot word: [closed:1][count:9][last_off:27][bytes:27], offsets in 8-byte units.
struct CArrayWord {
  static constexpr uint64_t kUnit = kMaxAlign;
  static constexpr int kFieldBits = 27;
  static constexpr uint64_t kFieldMask = (uint64_t{1} << kFieldBits) - 1;
  static constexpr int kCountShift = 2 * kFieldBits;
  static constexpr uint64_t kMaxCount = (uint64_t{1} << 9) - 1;
  static constexpr uint64_t kClosed = uint64_t{1} << 63;
  static constexpr uint64_t kMaxUnits = kFieldMask;

  static uint64_t bytes(uint64_t w) { return w & kFieldMask; }
  static uint64_t last_off(uint64_t w) { return (w >> kFieldBits) & kFieldMask; }
  static uint64_t count(uint64_t w) { return (w >> kCountShift) & kMaxCount; }
  static bool closed(uint64_t w) { return (w & kClosed) != 0; }
  // Can a record of `units` join a group whose word is w?
  static bool fits(uint64_t w, uint64_t units) {
    return !closed(w) && count(w) < kMaxCount && bytes(w) + units <= kMaxUnits;
  }
  // The word after a join of `units`: one more member, its offset becomes last_off (C2).
  static uint64_t joined(uint64_t w, uint64_t units) {
    return ((count(w) + 1) << kCountShift) | (bytes(w) << kFieldBits) | (bytes(w) + units);
  }
};

template <class P>
class ConsolidationArray {
 public:
  static constexpr uint64_t kIdle = ~uint64_t{0};
  static constexpr uint64_t kUnknown = 0;
  // A progress word "joining slot i at offset o" (C5): bit 63, the slot index, the offset in
  // kUnit units. Its start is the slot's base + o once the group is reserved.
  static constexpr uint64_t kJoining = uint64_t{1} << 63;
  static constexpr int kJoinIndexShift = CArrayWord::kFieldBits;
  static uint64_t joining(uint64_t index, uint64_t offset_units) {
    return kJoining | (index << kJoinIndexShift) | offset_units;
  }
  static constexpr uint64_t kNoBase = ~uint64_t{0};
  static constexpr uint64_t kNoPrev = ~uint64_t{0};
  static constexpr uint32_t kSpinsBeforeSleep = 1000;
  // W6: a releaser waiting for its predecessor's release (delegated_release false) spins
  // RocksDB's AwaitState budget (200 PAUSE loops) before it sleeps.
  static constexpr uint32_t kReleaseSpinsBeforeSleep = 200;
  static constexpr uint32_t kNoWaiter = 0;  // an empty wait list; else procno + 1

  ConsolidationArray(ProcTable<P>& procs, const ConsolidationArrayParams& params)
      : params_(params),
        procs_(procs),
        insertpos_lck_(WaitEvent::kInsertPosSpin),
        num_slots_(params.slots + static_cast<uint32_t>(procs.size())),
        slots_(new Slot[num_slots_]),
        active_(new ActiveEntry[params.slots]),
        ring_size_(ring_size_for(static_cast<uint32_t>(procs.size()))),
        ring_(new RingEntry[ring_size_]),
        progress_(new Progress[procs.size()]),
        waiters_(new Waiter[procs.size()]),
        clients_(procs.size()) {
    for (uint32_t k = 0; k < params.slots; ++k) {
      slots_[k].in_use.store(1);
      slots_[k].home.store(k);
      slots_[k].word.store(0);
      active_[k].index.store(k);
    }
    for (uint32_t i = 0; i < procs.size(); ++i) {
      progress_[i].v.store(kIdle);
      clients_[i].position = i % params.slots;
      clients_[i].grab_hint = i % num_slots_;
    }
  }

  BytePos reserved_end() const { return BytePos{curr_byte_pos_.get()}; }

  template <class W>
  typename W::Inserted insert(W& wal, Proc<P>& me, uint8_t* record, uint32_t len,
                              uint32_t payload_crc) {
    ClientState& c = clients_[me.id.value];
    Progress& progress = progress_[me.id.value];
    const WalGeometry& g = wal.geom();
    const uint64_t size = max_align(len);
    const uint64_t units = size / CArrayWord::kUnit;
    c.inserting = true;
    Membership m =
        units > CArrayWord::kMaxUnits ? reserve_alone(me, progress, size) : join(me, c, units);

    c.last_group = m.group;
    c.last_group_end = g.bytepos_to_end_lsn(BytePos{m.group_end}).value;
    const uint64_t start = m.base + m.offset;
    const uint64_t end = start + size;
    const Lsn start_lsn = g.bytepos_to_lsn(BytePos{start});
    set_progress(progress, start_lsn.value);
    const Lsn prev_lsn = m.prev == kNoPrev ? kInvalidLsn : g.bytepos_to_lsn(BytePos{m.prev});
    finish_record(record, payload_crc, prev_lsn);
    wal.copy_record(me, BytePos{start}, BytePos{end}, record, len);

    set_progress(progress, kIdle);  // C5: copied
    c.inserting = false;
    if (c.advertised) {
      advertised_.fetch_sub(1);
      c.advertised = false;
    }
    const bool last = m.slot == nullptr || m.slot->remaining.fetch_sub(1) == 1;
    if (last) {
      if (m.slot != nullptr) m.slot->in_use.store(0, std::memory_order_release);  // C3
      release_group(me, m.group, g.bytepos_to_end_lsn(BytePos{m.group_end}).value);
    }
    return {start_lsn, g.bytepos_to_end_lsn(BytePos{end})};
  }

  // WALInsertLockUpdateInsertingAt, per client: everything this client reserved below pos is
  // copied. A no-op for a client that is not inserting (the WAL writer).
  void advertise(Proc<P>& me, Lsn pos) {
    ClientState& c = clients_[me.id.value];
    if (!c.inserting) return;
    if (!c.advertised) {
      c.advertised = true;
      advertised_.fetch_add(1);
    }
    set_progress(progress_[me.id.value], pos.value);  // LWLockUpdateVar
  }

  // WaitXLogInsertionsToFinish (C6).
  template <class W>
  Lsn wait_insertions(W& wal, Proc<P>& me, Lsn upto) {
    uint64_t exposed = exposed_.load();
    if (upto.value <= exposed) return Lsn{exposed};
    insertpos_lck_.acquire(me);
    const uint64_t reserved_pos = curr_byte_pos_.get();
    const uint64_t groups = next_group_.get();  // every byte below reserved_pos is in 0..groups-1
    insertpos_lck_.release();
    const Lsn reserved = wal.geom().bytepos_to_end_lsn(BytePos{reserved_pos});
    if (upto > reserved) upto = reserved;
    // Done once upto is exposed, or, for an inserter evicting a page (C10), once a scan finds
    // every in-flight client past it (C6). Other waiters wait for the exposure only: their
    // scans would read the hot slot lines for nothing (32 clients, a 64-page ring: 20% fewer
    // records in the first 10 ms when the WAL writer's waits scanned too).
    const ClientState& c = clients_[me.id.value];
    uint64_t done_at = 0;
    Scan scan;
    auto done = [&] {
      scan = Scan{};
      done_at = exposed_.load();
      if (done_at >= upto.value) return true;
      if (!c.inserting || advertised_.load() == 0) return false;
      scan = scan_progress(wal, reserved.value);
      done_at = scan.finished;
      return done_at >= upto.value;
    };
    if (done()) return Lsn{done_at};
    // W5: the group whose exposure covers upto: the caller's own last group when upto lies
    // within it (a commit's flush of its own record), else the last one reserved when
    // reserved_pos was read (exposed > upto - 1 < reserved_pos then).
    const uint64_t target =
        !c.inserting && groups > 0 && c.last_group < groups && upto.value <= c.last_group_end
            ? c.last_group
            : groups - 1;
    WaitAccount account(me);
    while (!done()) {
      if (c.inserting && scan.lowest != kNoClient) {
        // C10: an inserter blocked in GetXLogBuffer (it advertised) evicting a page: the
        // insertions it waits for may wait for it, so it must pass by the scan (C6); it sleeps
        // until the client that held the scan down changes its progress (C9).
        Progress& lowest = progress_[scan.lowest];
        const uint64_t seen = scan.lowest_word;
        wait_on(me, lowest.waiters, account, 0,
                [&] { return lowest.v.load() != seen || exposed_.load() >= upto.value; });
      } else {
        wait_on(me, ring_[target % ring_size_].waiters, account, 0,
                [&] { return released_.load() > target || done(); });
      }
    }
    return Lsn{done_at};
  }

  // Inspection for tests (racy while clients run).
  uint64_t groups_reserved() const { return next_group_.get(); }
  Lsn exposed_end() const { return Lsn{exposed_.load()}; }
  uint32_t release_ring_size() const { return ring_size_; }
  // Delegated releases that found their ring entry a lap ahead of released_ (C8), all clients.
  uint64_t lap_waits() const {
    uint64_t n = 0;
    for (const ClientState& c : clients_) n += c.lap_waits;
    return n;
  }

 private:
  struct alignas(128) Slot {
    typename P::template Atomic<uint64_t> word{CArrayWord::kClosed};
    typename P::template Atomic<uint32_t> waiters{kNoWaiter};  // W1: wait for base
    typename P::template Atomic<uint64_t> home{0};
    typename P::template Atomic<uint64_t> in_use{0};
    typename P::template Atomic<uint64_t> base{kNoBase};
    typename P::template Atomic<uint64_t> group{0};
    typename P::template Atomic<uint64_t> end{0};
    typename P::template Atomic<uint64_t> remaining{0};
  };
  struct alignas(128) ActiveEntry {
    typename P::template Atomic<uint64_t> index{0};
  };
  struct alignas(64) RingEntry {
    typename P::template Atomic<uint64_t> done{0};  // g + 1 while group g waits to be exposed
    typename P::template Atomic<uint64_t> end{0};
    typename P::template Atomic<uint32_t> waiters{kNoWaiter};  // W1: wait for g's exposure
  };
  struct alignas(128) Progress {
    typename P::template Atomic<uint64_t> v{kIdle};
    typename P::template Atomic<uint32_t> waiters{kNoWaiter};  // C10: evicting inserters
  };
  // A scan's result (C6): the minimum, and the client that set it with the word it read
  // (kNoClient: none below `reserved`).
  static constexpr uint32_t kNoClient = ~uint32_t{0};
  struct Scan {
    uint64_t finished = 0;
    uint32_t lowest = kNoClient;
    uint64_t lowest_word = 0;
  };
  // A client's entry in a wait list (W1, W2): next is its successor on the list it is pushed
  // on; state is kQueued from its push, kSleeping once it announced a semaphore sleep, and
  // kNotQueued again when a waker took it off the list (PGPROC's lwWaiting).
  enum : uint32_t { kNotQueued = 0, kQueued = 1, kSleeping = 2 };
  struct alignas(64) Waiter {
    typename P::template Atomic<uint32_t> next{kNoWaiter};
    typename P::template Atomic<uint32_t> state{kNotQueued};
  };
  struct alignas(64) ClientState {
    uint32_t position = 0;   // active position to try first
    uint32_t grab_hint = 0;  // where to start looking for a free slot
    bool inserting = false;
    bool advertised = false;
    uint64_t last_group = ~uint64_t{0};  // the group of its last record (W5) and its end LSN
    uint64_t last_group_end = 0;
    uint64_t lap_waits = 0;  // releases that waited for the group a ring lap before (C8)
  };
  // What a client knows after step 3.
  struct Membership {
    Slot* slot = nullptr;  // nullptr: reserved alone
    uint64_t base = 0, offset = 0, prev = kNoPrev, group = 0, group_end = 0;
  };

  // One wait of a client, accounted to LWLock:wal_insert (the insertion path's tranche):
  // contended += 1 per wait that did not find its condition at once, spins, semaphore sleeps,
  // wait_ns from its start to its end. The wait event is shown only while sleeping.
  class WaitAccount {
   public:
    explicit WaitAccount(Proc<P>& me)
        : st_(me.stats.of(WaitEvent::kWalInsert)), t0_(P::now_ns()) {
      ++st_.contended;
    }
    ~WaitAccount() { st_.wait_ns += P::now_ns() - t0_; }
    LockStats& stats() { return st_; }

   private:
    LockStats& st_;
    const uint64_t t0_;
  };

  // W1: push me on `list` (a Treiber stack of procno + 1, like PostgreSQL's clog group list).
  void push(Proc<P>& me, typename P::template Atomic<uint32_t>& list) {
    Waiter& w = waiters_[me.id.value];
    w.state.store(kQueued);
    uint32_t head = list.load();
    do {
      w.next.store(head);
    } while (!list.compare_exchange(head, me.id.value + 1));
  }

  // W2: take every waiter off `list` and wake each once: read its next, then set its state to
  // kNotQueued (after which it may reuse next), and post its semaphore only if it went to
  // sleep (kSleeping). A load first: a list nobody waits on costs no RMW (the fast path of the
  // leader, the releaser and every progress change).
  void wake_all(typename P::template Atomic<uint32_t>& list) {
    if (list.load() == kNoWaiter) return;
    uint32_t cur = list.exchange(kNoWaiter);
    while (cur != kNoWaiter) {
      Waiter& w = waiters_[cur - 1];
      const uint32_t next = w.next.load();
      if (w.state.exchange(kNotQueued) == kSleeping)
        procs_[static_cast<int32_t>(cur - 1)].sem.post();
      cur = next;
    }
  }

  // W1: queue on `list`, recheck `woken` (the waker's condition, made true before its
  // wake_all: if it holds, nobody may come for us, so we empty the list ourselves, waking the
  // others too, who recheck their own conditions), then wait to be taken off: spin on our own
  // state word up to `spins` times (a local spin: the waker writes it once), then announce the
  // sleep with a CAS (kQueued -> kSleeping; it fails if the waker came first) and sleep on the
  // semaphore (RocksDB's AwaitState: spin, then STATE_LOCKED_WAITING). Posts that are not ours
  // (an LWLock's stray wake-up) are given back afterwards (LWLock I9). Returns whether it slept.
  template <class Woken>
  bool wait_on(Proc<P>& me, typename P::template Atomic<uint32_t>& list, WaitAccount& account,
               uint32_t spins, Woken woken) {
    push(me, list);
    if (woken()) wake_all(list);
    Waiter& w = waiters_[me.id.value];
    for (uint32_t i = 0; i < spins && w.state.load() != kNotQueued; ++i) {
      P::spin_delay();
      ++account.stats().spins;
    }
    uint32_t queued = kQueued;
    if (!w.state.compare_exchange(queued, kSleeping)) return false;  // taken off meanwhile
    me.set_wait(WaitEvent::kWalInsert);
    uint32_t extra = 0;
    for (;;) {
      me.sem.wait();
      if (w.state.load() == kNotQueued) break;
      ++extra;
    }
    me.clear_wait();
    ++account.stats().sleeps;
    while (extra-- > 0) me.sem.post();
    return true;
  }

  // Until ready(): queue on the list that list_of() names and wait to be woken (W1), spinning
  // first (Aether's members spin); again after each wake-up that finds ready() still false.
  // Returns whether it slept.
  template <class Ready, class ListOf>
  bool await(Proc<P>& me, Ready ready, ListOf list_of, uint32_t spins = kSpinsBeforeSleep) {
    if (ready()) return false;
    WaitAccount account(me);
    bool slept = false;
    while (!ready()) slept |= wait_on(me, list_of(), account, spins, ready);
    return slept;
  }

  // C9: a client's progress word moves; the evicting inserters its old word held back may now
  // pass by the scan (PostgreSQL: LWLockUpdateVar and LWLockReleaseClearVar wake the insertion
  // lock's waiters). One load of the client's own line when nobody waits.
  void set_progress(Progress& progress, uint64_t word) {
    progress.v.store(word);
    wake_all(progress.waiters);
  }

  // W4: a releaser that slept wakes the releasers asleep behind it (groups h, h + 1, ... while
  // their lists have sleepers), so that they spin again while the chain drains: otherwise a
  // chain that once fell asleep pays a semaphore wake-up per group, each longer than a spin
  // phase, and stays asleep (the convoy of delegated_release = false).
  void wake_sleeping_successors(uint64_t h) {
    for (uint32_t k = 0; k < ring_size_; ++k, ++h) {
      auto& list = ring_[h % ring_size_].waiters;
      if (list.load() == kNoWaiter) return;
      wake_all(list);
    }
  }

  // Until group `group` is exposed (released_ > group): the releaser of group g waits for
  // g - 1 (delegated_release false), a delegated release for g - R (C8). Woken by expose().
  bool wait_exposed(Proc<P>& me, uint64_t group, uint32_t spins) {
    return await(me, [&] { return released_.load() > group; },
                 [&]() -> auto& { return ring_[group % ring_size_].waiters; }, spins);
  }

  static uint32_t ring_size_for(uint32_t procs) {
    uint32_t n = 16;
    while (n < 2 * procs) n *= 2;
    return n;
  }

  Membership join(Proc<P>& me, ClientState& c, uint64_t units) {
    Progress& progress = progress_[me.id.value];
    for (uint32_t probes = 0;; ++probes) {
      const uint32_t pos = c.position;
      const uint64_t index = active_[pos].index.load();
      Slot& s = slots_[index];
      uint64_t w = s.word.load();
      uint64_t announced = ~uint64_t{0};  // the offset in progress_ for this slot
      while (CArrayWord::fits(w, units)) {
        // C5, before the CAS. Other joins only raise the offset it will get, so it is announced
        // again only if it fell (the slot was reused meanwhile): it stays a lower bound.
        if (CArrayWord::bytes(w) < announced) {
          announced = CArrayWord::bytes(w);
          set_progress(progress, joining(index, announced));
        }
        if (!s.word.compare_exchange(w, CArrayWord::joined(w, units))) continue;
        Membership m;
        m.slot = &s;
        m.offset = CArrayWord::bytes(w) * CArrayWord::kUnit;
        if (CArrayWord::count(w) == 0) {
          lead(me, c, s, m);
        } else {
          // W3: the leader publishes base right after its insertpos_lck_ section.
          await(me, [&] { return s.base.load() != kNoBase; },
                [&]() -> auto& { return s.waiters; });
          m.base = s.base.load();
          m.prev = m.base + CArrayWord::last_off(w) * CArrayWord::kUnit;  // C2
          m.group = s.group.load();
          m.group_end = s.end.load();
        }
        return m;
      }
      // Closed or full: try the next active position (Aether probes a few slots). After a
      // whole round of them, wait on this one until it opens, is replaced at its position, or
      // its group has its base (by then its leader installed a fresh slot): W3.
      c.position = (pos + 1) % params_.slots;
      if ((probes + 1) % params_.slots == 0)
        await(me,
              [&] {
                return CArrayWord::fits(s.word.load(), units) || s.base.load() != kNoBase ||
                       active_[pos].index.load() != index;
              },
              [&]() -> auto& { return s.waiters; });
    }
  }

  // The leader's step 3 for slot s, which it joined first.
  void lead(Proc<P>& me, ClientState& c, Slot& s, Membership& m) {
    const uint64_t fresh = grab_free_slot(me, c);
    const uint64_t home = s.home.load();
    insertpos_lck_.acquire(me);
    const uint64_t w = s.word.exchange(CArrayWord::kClosed);  // close: the group is fixed (C1)
    slots_[fresh].home.store(home);
    active_[home].index.store(fresh);
    slots_[fresh].word.store(0);  // open (C3: installed first)
    const uint64_t base = curr_byte_pos_.get();
    const uint64_t end = base + CArrayWord::bytes(w) * CArrayWord::kUnit;
    const uint64_t prev = prev_byte_pos_.get();
    const uint64_t group = next_group_.get();
    curr_byte_pos_.set(end);
    prev_byte_pos_.set(base + CArrayWord::last_off(w) * CArrayWord::kUnit);
    next_group_.set(group + 1);
    insertpos_lck_.release();
    wake_all(slots_[fresh].waiters);  // W3: probers that found it installed but not yet open
    s.remaining.store(CArrayWord::count(w));
    s.group.store(group);
    s.end.store(end);
    s.base.store(base);  // publish: members may copy
    wake_all(s.waiters);  // W3
    m.base = base;
    m.prev = prev;
    m.group = group;
    m.group_end = end;
  }

  // A free slot, reset and marked in use (C3). One always exists: the pool has one slot per
  // client beyond the active ones, and a slot is busy only while it is active or some member of
  // its group is still copying.
  uint64_t grab_free_slot(Proc<P>& me, ClientState& c) {
    (void)me;
    uint64_t i = c.grab_hint;
    for (uint64_t probes = 1;; ++probes, i = (i + 1) % num_slots_) {
      uint64_t free = 0;
      if (slots_[i].in_use.load() == 0 && slots_[i].in_use.compare_exchange(free, 1)) {
        slots_[i].word.store(CArrayWord::kClosed);
        slots_[i].base.store(kNoBase);
        c.grab_hint = static_cast<uint32_t>((i + 1) % num_slots_);
        return i;
      }
      if (probes % num_slots_ == 0) P::spin_delay();  // a whole lap: slots free up behind us
    }
  }

  // A record too large for a slot's word: a group of one, no slot.
  Membership reserve_alone(Proc<P>& me, Progress& progress, uint64_t size) {
    set_progress(progress, kUnknown);  // C5, before the reservation
    Membership m;
    insertpos_lck_.acquire(me);
    m.base = curr_byte_pos_.get();
    m.prev = prev_byte_pos_.get();
    m.group = next_group_.get();
    m.group_end = m.base + size;
    curr_byte_pos_.set(m.group_end);
    prev_byte_pos_.set(m.base);
    next_group_.set(m.group + 1);
    insertpos_lck_.release();
    return m;
  }

  // Step 5, by the last member of group `group` (progress kIdle, C7).
  void release_group(Proc<P>& me, uint64_t group, uint64_t end_lsn) {
    if (!params_.delegated_release) {
      // Woken by group - 1's releaser (W2); a short spin (W6).
      const bool slept = group > 0 && wait_exposed(me, group - 1, kReleaseSpinsBeforeSleep);
      WALBENCH_CHECK(released_.load() == group, "C4");
      expose(group, end_lsn);  // wakes group + 1's releaser
      if (slept) wake_sleeping_successors(group + 2);  // W4
      return;
    }
    // C8: the entry is this group's once the group a lap before it is exposed (not merely once
    // the entry is free: the first version took free entries, and group 227 of a 128-entry ring
    // took entry 99 while group 99 was still copying; each then waited for the other).
    if (released_.load() + ring_size_ <= group) {
      ++clients_[me.id.value].lap_waits;
      wait_exposed(me, group - ring_size_, kSpinsBeforeSleep);
    }
    RingEntry& e = ring_[group % ring_size_];
    WALBENCH_CHECK(e.done.load() == 0, "C8");  // group - R was claimed before it was exposed
    e.end.store(end_lsn);
    e.done.store(group + 1);  // after end: expose_chain reads end once it sees done
    // Dekker with the releaser of group - 1: it stores released_ then reads done; we store done
    // then read released_. At least one of us sees the other; the CAS on done decides who
    // exposes.
    if (released_.load() == group) expose_chain(group);
  }

  void expose(uint64_t group, uint64_t end_lsn) {
    exposed_.store(end_lsn);
    released_.store(group + 1);
    wake_all(ring_[group % ring_size_].waiters);  // W2: after released_ (seq_cst store)
  }

  // Expose group h if it is recorded and unclaimed, then the ones after it (delegated release).
  void expose_chain(uint64_t h) {
    for (;;) {
      RingEntry& e = ring_[h % ring_size_];
      if (e.done.load() != h + 1) return;     // not finished yet: its last member exposes it
      const uint64_t end_lsn = e.end.load();  // written before done; kept until done is 0
      uint64_t done = h + 1;
      if (!e.done.compare_exchange(done, 0)) return;  // claimed by another releaser
      expose(h, end_lsn);
      ++h;
    }
  }

  // The min over in-flight clients' progress, capped at `reserved`; 0 while a client reserving
  // alone has not published its start, or a joining client's slot is closed with its base not
  // yet published (C5, C6). `lowest` is the client that set the result.
  template <class W>
  Scan scan_progress(const W& wal, uint64_t reserved) const {
    Scan scan;
    scan.finished = reserved;
    for (uint32_t i = 0; i < clients_.size(); ++i) {
      const uint64_t word = progress_[i].v.load();
      uint64_t v = word;
      if (v == kIdle) continue;
      if (v == kUnknown) return {0, i, word};
      if ((v & kJoining) != 0) {
        // Joining slot `index` at `offset` or later: from base + offset once the group's base
        // is published (C6).
        const uint64_t index = (v & ~kJoining) >> kJoinIndexShift;
        const uint64_t base = slots_[index].base.load();
        if (base == kNoBase) {
          // Not published: if the slot is still open, whatever the client joins is reserved
          // after the caller read CurrBytePos; if closed, its group may be reserved below it
          // with base not yet published (or the slot is being reused): wait for the client.
          if (!CArrayWord::closed(slots_[index].word.load())) continue;
          return {0, i, word};
        }
        const uint64_t offset = (v & CArrayWord::kFieldMask) * CArrayWord::kUnit;
        v = wal.geom().bytepos_to_lsn(BytePos{base + offset}).value;
      }
      if (v < scan.finished) scan = {v, i, word};
    }
    return scan;
  }

  const ConsolidationArrayParams params_;
  ProcTable<P>& procs_;
  alignas(128) SpinLock<P> insertpos_lck_;
  typename P::template Shared<uint64_t> curr_byte_pos_{0};
  typename P::template Shared<uint64_t> prev_byte_pos_{kNoPrev};
  typename P::template Shared<uint64_t> next_group_{0};
  const uint32_t num_slots_;
  std::unique_ptr<Slot[]> slots_;
  std::unique_ptr<ActiveEntry[]> active_;
  const uint32_t ring_size_;
  std::unique_ptr<RingEntry[]> ring_;
  alignas(128) typename P::template Atomic<uint64_t> exposed_{0};
  typename P::template Atomic<uint64_t> released_{0};
  alignas(128) typename P::template Atomic<uint64_t> advertised_{0};
  std::unique_ptr<Progress[]> progress_;
  std::unique_ptr<Waiter[]> waiters_;
  std::vector<ClientState> clients_;
};

}  // namespace walbench

// write_group: RocksDB's WriteThread as a WAL insertion strategy. Clients push themselves on a
// lock-free stack; the one that finds it empty leads a group: it reserves the whole group's WAL
// space once, chains the members' xl_prev, has the records copied (by itself or by each member)
// and hands leadership to the next waiting client.
//
// Origin
//   RocksDB db/write_thread.{h,cc} and db/db_impl/db_impl_write.cc (WriteImpl):
//   JoinBatchGroup / LinkOne (CAS onto newest_writer_; the writer that found it empty leads),
//   AwaitState (about 200 PAUSE loops, then a yield loop of at most write_thread_max_yield_usec
//   = 100 us, abandoned after 3 yields slower than write_thread_slow_yield_usec = 3 us and used
//   only while an adaptive per-call-site credit is not negative, then a mutex + condition
//   variable: STATE_LOCKED_WAITING), EnterAsBatchGroupLeader (the stack becomes a list; compatible
//   followers up to max_write_batch_group_size_bytes = 1 MiB, or the leader's size + 1/8 of it
//   when the leader's own batch is at most 1/8), ExitAsBatchGroupLeader (the next writer after
//   the group becomes leader; the group's followers are completed). The leader makes one WAL
//   append for the group; memtable inserts are the leader's (copy "leader") or each follower's in
//   a parallel phase (allow_concurrent_memtable_write, STATE_PARALLEL_MEMTABLE_WRITER; copy
//   "parallel"). Facts: /work/shared/BEYOND.md section 3. Our code.
//   Not modelled: incompatible writers (sync vs no-sync, disableWAL: every WAL record here is
//   compatible), pipelined write and two write queues (one group is in flight at a time, as in
//   RocksDB's default write path), the write stall and the "last writer finishes the group" of
//   CompleteParallelMemTableWriter (here the leader waits for its followers, W5).
//   Departures: a yield is the shortest P::sleep_ns (P has no yield; kYieldNs). On real threads
//   that sleep lasts at least the kernel's timer slack (about 50 us), longer than
//   slow_yield_us, so every yield counts as slow: the yield phase ends after 3 yields and the
//   adaptive credit falls, i.e. AwaitState acts as spin-then-block there; a comparison with
//   RocksDB's figures must allow for it. Flushers poll
//   the progress words (spin_count spins, then yields) where PostgreSQL's sleep on the insertion
//   lock's variable; with copy "leader" the leader reads each follower's record from the
//   follower's memory (charged on the sim through P::touch_range), as RocksDB's leader reads the
//   followers' WriteBatches.
//
// What it replaces in PostgreSQL's path (XLogInsertRecord)
//   - WALInsertLockAcquire / the insertion locks: no insertion lock exists. A client joins a
//     group; only a leader touches the reservation.
//   - ReserveXLogInsertLocation under insertpos_lck: kept, but taken once per group by its
//     leader (CurrBytePos += the group's bytes, PrevBytePos := its last member's start), not once
//     per record. The members' xl_prev are chained by the leader, which knows their sizes and
//     order (W2).
//   - CopyXLogRecordToWAL under an insertion lock: by the leader for everyone (copy "leader") or
//     by each member at its assigned offset (copy "parallel"), under no lock.
//   - insertingAt (WALInsertLockUpdateInsertingAt) and WaitXLogInsertionsToFinish: a progress
//     word per copier position in the group (progress_[k]: k = 0 the leader's / the one copier,
//     k = member index in "parallel"), kMaxLsn when idle; a flusher reads CurrBytePos under
//     insertpos_lck, then waits until every progress word in use is >= its target (W3, W4).
//
// Shared state (what protects it)
//   newest_writer_       P::Atomic<uint32_t>: procno + 1 of the newest waiting writer, 0 = none
//                        (newest_writer_); pushed by CAS (LinkOne), cleared by the leader's CAS
//                        in exit when nobody joined.
//   writers_[procno]     Writer: record pointer, length, payload CRC, link_older (P::Shared):
//                        written by the owner before the CAS that pushes it, read by a leader
//                        after it loaded newest_writer_ (ordered by those RMWs); start/end/prev
//                        (P::Shared): written by the leader before the state store that hands
//                        them over. state (P::Atomic): W1.
//   insertpos_lck_       SpinLock, as insert_locks: curr_byte_pos_, prev_byte_pos_ (P::Shared).
//   progress_[k]         P::Atomic<uint64_t> per copier position, one cache line each (W3).
//   progress_used_       P::Atomic<uint32_t>: how many progress words a group ever used (grows).
//   group_pending_       P::Atomic<uint32_t>: followers of the current group still copying
//                        (copy "parallel").
//   Owner-only: clients_[procno] (which progress word it advertises into, the yield credit,
//   counters), the leader's member list.
//
// Invariants (checks cite them)
//   W1 A writer's state goes kWaiting (set by its owner before it pushes itself) -> [kLocked-
//      Waiting, only by its owner's CAS] -> kLeader | kCopyOwn | kCompleted, stored by exactly one
//      leader (or the CAS of whoever found the stack empty). A leader touches a writer's fields
//      only while that writer waits (before the store that releases it).
//   W2 Group order is join order: the leader takes the oldest writers of the stack, itself first;
//      member i's start is the group start plus the sizes of members 0..i-1, its xl_prev the
//      start of member i-1 (member 0: PrevBytePos). Every record's xl_prev is its predecessor's
//      start, across groups too, since groups reserve in leadership order under insertpos_lck.
//   W3 A progress word in use says: every byte the group assigned to that copier below it is
//      copied; it starts at the copier's first byte (bytepos_to_end_lsn of its start), only grows
//      (advertise), and becomes kMaxLsn when the copier is done. The leader sets the group's words
//      and progress_used_ before it moves CurrBytePos, so a flusher that read a CurrBytePos
//      covering the group sees them (every access is seq_cst).
//   W4 At most one group is in flight: leadership passes on only after every member's copy is
//      done (W5), so the progress words are never shared by two groups. A word reused by a later
//      group starts at or above the earlier group's end.
//   W5 copy "parallel": the leader stores group_pending_ = followers before it releases them;
//      each follower decrements it after its copy (and its kMaxLsn); the one that reaches 0 wakes
//      the leader (its state kMembersDone). Only then does the leader exit.
//   W7 A member returns only after the leader's exit (kCompleted, also after a parallel copy,
//      as CompleteParallelMemTableWriter's AwaitState(STATE_COMPLETED)): a member that pushed
//      itself again before the exit would break the exit's CAS (ABA on the group's last writer)
//      and its walk for the writer whose link_older is the last.
//   W6 Progress: the copier with the smallest unfinished start waits for nobody: everything below
//      its start is finished, and get_buffer advertises its position before it evicts, so the
//      eviction's wait_insertions target (a page end at or below that position) is met (as
//      insertion_locks.h L2). Waiting writers and the waiting leader hold no progress word below
//      anything unfinished.
//
// Insert
//   1 JoinBatchGroup: fill in writers_[me]; state := kWaiting; link_older := newest; CAS
//     newest_writer_ newest -> me. Found it empty: leader. Else AwaitState until not waiting.
//   2 kCompleted: return the {start, end} the leader stored. kCopyOwn: copy own record at the
//     assigned range (finish_record with the assigned prev), progress := kMaxLsn, decrement
//     group_pending_ (last: wake the leader), wait for kCompleted (W7), return.
//   3 Leader (EnterAsBatchGroupLeader): walk newest_writer_ -> link_older down to itself, take
//     the oldest members while the group fits the byte cap (small-leader rule); set progress
//     words (W3); under insertpos_lck: start = CurrBytePos, CurrBytePos += group bytes, prev :=
//     PrevBytePos, PrevBytePos := last member's start.
//   4 copy "leader": finish and copy each member's record in order (advertising into word 0),
//     word 0 := kMaxLsn. copy "parallel": hand each follower its range and prev (kCopyOwn), copy
//     own, wait for kMembersDone (W5).
//   5 ExitAsBatchGroupLeader: CAS newest_writer_ last -> empty; if that fails, find the writer
//     whose link_older is the group's last, cut its link and make it leader (kLeader). Then
//     complete the followers (kCompleted; copy "leader": with their {start, end} stored).
// Wait (WaitXLogInsertionsToFinish): reserved = CurrBytePos under insertpos_lck; clamp upto;
//   for each progress word in use: poll (spin, then yield) until it is >= upto. Returns upto.
// Wake paths: SetState: the leader exchanges a writer's state; if it was kLockedWaiting, it
//   posts the writer's semaphore. The blocked writer absorbs stray posts (left by LWLock wake-
//   ups on the same Proc semaphore) and re-posts them, as clog_group_update does.
// Lock order: insertpos_lck_ is a leaf. Copiers may take WALBufMappingLock and wait for
//   WALWriteLock in get_buffer (nothing of ours held but progress words). Flushers poll.
// Hazards
//   - A member whose copy evicts a page of its own group would wait for itself without W3's
//     advertising (the 4-page ring with 16 KiB records hits it), and for a member not yet
//     released if that member's word started below the member's first byte (W3: it starts at
//     it; write_group_test's larger-than-the-ring case deadlocked before).
//   - Followers inherit the leader's latency; the leader serialises all reservation (and, with
//     copy "leader", all copying). Spinning and yielding burn CPU when clients outnumber cores:
//     the adaptive credit turns the yield phase off where it does not pay.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/locks/spinlock.h"
#include "core/platform/platform.h"
#include "core/proc.h"
#include "core/wal/format.h"
#include "core/wal/geometry.h"
#include "core/wal/types.h"
#include "core/wal/wal.h"
#include "strategies/strategy.h"

namespace walbench {

StrategyInfo write_group_info();

enum class GroupCopy { kLeader, kParallel };

struct WriteGroupParams {
  uint64_t max_group_bytes = 1 << 20;  // max_write_batch_group_size_bytes
  GroupCopy copy = GroupCopy::kLeader;
  uint32_t spin_count = 200;           // AwaitState's PAUSE loops
  uint32_t max_yield_us = 100;         // write_thread_max_yield_usec (0: no yield phase)
  uint32_t slow_yield_us = 3;          // write_thread_slow_yield_usec
  bool adaptive_yield = true;          // enable_write_thread_adaptive_yield
  static WriteGroupParams from_json(const nlohmann::json& j);
};

template <class P>
class WriteGroup {
 public:
  WriteGroup(ProcTable<P>& procs, const WriteGroupParams& params)
      : params_(params),
        procs_(procs),
        insertpos_lck_(WaitEvent::kInsertPosSpin),
        writers_(procs.size()),
        progress_(std::max<size_t>(1, procs.size())),
        clients_(procs.size()) {}

  BytePos reserved_end() const { return BytePos{curr_byte_pos_.get()}; }

  template <class W>
  typename W::Inserted insert(W& wal, Proc<P>& me, uint8_t* record, uint32_t len,
                              uint32_t payload_crc) {
    const uint32_t self = static_cast<uint32_t>(me.id.value);
    Writer& w = writers_[self];
    ClientState& c = clients_[self];
    // 1 JoinBatchGroup / LinkOne.
    w.record.set(reinterpret_cast<uintptr_t>(record));
    w.len.set(len);
    w.crc.set(payload_crc);
    P::touch_range(record, len, RangeAccess::kWrite);  // built by us; a leader may read it
    w.state.store(kWaiting);
    uint32_t newest = newest_writer_.load();
    for (;;) {
      w.link_older.set(newest);
      if (newest_writer_.compare_exchange(newest, self + 1)) break;
    }
    if (newest != 0) {
      const uint32_t s = await_state(me, w, c, kWaiting);
      if (s != kLeader) ++c.followers;
      if (s == kCompleted) return {Lsn{w.start_lsn.get()}, Lsn{w.end_lsn.get()}};
      if (s == kCopyOwn) return copy_own(wal, me, w, c, record, len, payload_crc);
      WALBENCH_CHECK(s == kLeader, "W1");
    }
    return lead(wal, me, w, c);
  }

  // WALInsertLockUpdateInsertingAt: a copier about to block in get_buffer at pos (W3, W6).
  void advertise(Proc<P>& me, Lsn pos) {
    const ClientState& c = clients_[static_cast<uint32_t>(me.id.value)];
    if (c.progress_word == kNoWord) return;  // the WAL writer, or a writer not copying
    progress_[c.progress_word].value.store(std::max(pos.value, c.progress_floor),
                                          std::memory_order_release);
  }

  // XLogFlush / XLogWrite in their PG 17 form (atomic LogwrtResult).
  bool logwrt_before_pg17() const { return false; }

  // WaitXLogInsertionsToFinish (W3, W4).
  template <class W>
  Lsn wait_insertions(W& wal, Proc<P>& me, Lsn upto) {
    insertpos_lck_.acquire(me);
    const uint64_t reserved_pos = curr_byte_pos_.get();
    insertpos_lck_.release();
    const Lsn reserved = wal.geom().bytepos_to_end_lsn(BytePos{reserved_pos});
    if (upto > reserved) upto = reserved;
    const uint32_t used = progress_used_.load();
    LockStats& st = me.stats.of(WaitEvent::kWalInsert);
    for (uint32_t k = 0; k < used; ++k) {
      auto& word = progress_[k].value;
      if (word.load() >= upto.value) continue;
      ++st.contended;
      const uint64_t t0 = P::now_ns();
      me.set_wait(WaitEvent::kWalInsert);
      uint32_t spins = 0;
      while (word.load() < upto.value) {
        if (spins < params_.spin_count) {
          P::spin_delay();
          ++spins;
          ++st.spins;
        } else {
          P::sleep_ns(kYieldNs);  // nobody posts a flusher: the copier only stores progress
          ++st.sleeps;
        }
      }
      me.clear_wait();
      st.wait_ns += P::now_ns() - t0;
    }
    ++st.acquisitions;
    return upto;
  }

  // Counters summed over clients; read only when no client runs (tests).
  struct Totals {
    uint64_t groups = 0, members = 0, largest = 0, followers = 0, blocked = 0, yields = 0;
  };
  Totals totals() const {
    Totals t;
    for (const auto& c : clients_) {
      t.groups += c.groups;
      t.members += c.members_total;
      t.largest = std::max(t.largest, c.largest);
      t.followers += c.followers;
      t.blocked += c.blocked;
      t.yields += c.yields;
    }
    return t;
  }

 private:
  static constexpr uint32_t kNoWord = ~uint32_t{0};
  enum : uint32_t {
    kWaiting = 1,        // STATE_INIT
    kLockedWaiting,      // STATE_LOCKED_WAITING: blocked on its semaphore
    kLeader,             // STATE_GROUP_LEADER
    kCopyOwn,            // STATE_PARALLEL_MEMTABLE_WRITER
    kCompleted,          // STATE_COMPLETED
    kAwaitingMembers,    // a parallel leader waiting for its followers (W5)
    kMembersDone,
  };
  // P has no yield: a yield is the shortest sleep (threads: nanosleep, at least the kernel's
  // timer slack, ~50 us; sim: sleep_slack_ns). P::sleep_ns(0) would return without yielding.
  static constexpr uint64_t kYieldNs = 1;
  // RocksDB's yield credit: sampled 1 in 256 when negative; decays by 1/1024 per update.
  static constexpr int64_t kCreditStep = 131072;

  struct alignas(64) Writer {
    typename P::template Atomic<uint32_t> state{kCompleted};
    typename P::template Shared<uint32_t> link_older{0};  // procno + 1, 0 = none
    typename P::template Shared<uint64_t> record{0};
    typename P::template Shared<uint32_t> len{0};
    typename P::template Shared<uint32_t> crc{0};
    typename P::template Shared<uint64_t> start{0};       // assigned usable byte position
    typename P::template Shared<uint64_t> prev_lsn{0};
    typename P::template Shared<uint32_t> word{0};        // progress word (copy "parallel")
    typename P::template Shared<uint64_t> start_lsn{0};   // the result (copy "leader")
    typename P::template Shared<uint64_t> end_lsn{0};
  };
  struct alignas(64) ProgressWord {
    typename P::template Atomic<uint64_t> value{kMaxLsn.value};
  };
  struct alignas(64) ClientState {
    uint32_t progress_word = kNoWord;  // where advertise stores, while copying
    uint64_t progress_floor = 0;       // advertise never goes below the first byte (W3)
    int64_t yield_credit = 0;
    std::vector<uint32_t> members;     // the leader's group, oldest (itself) first
    std::vector<uint32_t> chain;       // scratch: the stack, newest first
    uint64_t groups = 0, members_total = 0, largest = 0, followers = 0, blocked = 0, yields = 0;
  };

  // AwaitState: spin, maybe yield, then block until the state differs from `from`.
  uint32_t await_state(Proc<P>& me, Writer& w, ClientState& c, uint32_t from) {
    uint32_t s = w.state.load();
    if (s != from) return s;
    LockStats& st = me.stats.of(WaitEvent::kWalInsert);
    ++st.contended;
    const uint64_t t0 = P::now_ns();
    me.set_wait(WaitEvent::kWalInsert);
    for (uint32_t i = 0; i < params_.spin_count; ++i) {
      P::spin_delay();
      ++st.spins;
      if ((s = w.state.load()) != from) return finish_wait(me, st, t0, s);
    }
    const bool try_yield = params_.max_yield_us > 0 &&
                           (!params_.adaptive_yield || c.yield_credit >= 0 ||
                            me.next_random() % 256 == 0);
    if (try_yield) {
      const uint64_t y0 = P::now_ns();
      uint32_t slow = 0;
      bool done = false;
      for (;;) {
        const uint64_t before = P::now_ns();
        P::sleep_ns(kYieldNs);  // std::this_thread::yield() (see kYieldNs)
        ++c.yields;
        const uint64_t after = P::now_ns();
        if ((s = w.state.load()) != from) {
          done = true;
          break;
        }
        if (after - before >= uint64_t{params_.slow_yield_us} * 1000 && ++slow >= 3) break;
        if (after - y0 >= uint64_t{params_.max_yield_us} * 1000) break;
      }
      if (params_.adaptive_yield)
        c.yield_credit = c.yield_credit - c.yield_credit / 1024 + (done ? kCreditStep : -kCreditStep);
      if (done) return finish_wait(me, st, t0, s);
    }
    // Block: announce it with a CAS; the waker posts when it replaces kLockedWaiting.
    uint32_t expected = from;
    if (!w.state.compare_exchange(expected, kLockedWaiting)) return finish_wait(me, st, t0, expected);
    ++c.blocked;
    uint32_t extra = 0;
    for (;;) {
      me.sem.wait();
      ++st.sleeps;
      if ((s = w.state.load()) != kLockedWaiting) break;
      ++extra;  // a stray post (LWLock wake-up): give it back afterwards
    }
    while (extra-- > 0) me.sem.post();
    return finish_wait(me, st, t0, s);
  }

  uint32_t finish_wait(Proc<P>& me, LockStats& st, uint64_t t0, uint32_t s) {
    me.clear_wait();
    st.wait_ns += P::now_ns() - t0;
    ++st.acquisitions;
    return s;
  }

  // SetState: hand a waiting writer its new state; wake it if it blocked.
  void set_state(uint32_t procno, uint32_t s) {
    if (writers_[procno].state.exchange(s) == kLockedWaiting)
      procs_[static_cast<int32_t>(procno)].sem.post();
  }

  template <class W>
  typename W::Inserted copy_own(W& wal, Proc<P>& me, Writer& w, ClientState& c, uint8_t* record,
                                uint32_t len, uint32_t payload_crc) {
    const WalGeometry& g = wal.geom();
    const uint64_t start = w.start.get();
    const uint64_t end = start + max_align(len);
    c.progress_word = w.word.get();
    c.progress_floor = g.bytepos_to_end_lsn(BytePos{start}).value;
    finish_record(record, payload_crc, Lsn{w.prev_lsn.get()});
    wal.copy_record(me, BytePos{start}, BytePos{end}, record, len);
    progress_[c.progress_word].value.store(kMaxLsn.value);  // W3: done
    c.progress_word = kNoWord;
    if (group_pending_.fetch_sub(1) == 1) set_state(leader_of_group_.get(), kMembersDone);  // W5
    // W7: stay off the stack until the leader has handed leadership on.
    const uint32_t s = await_state(me, w, c, kCopyOwn);
    WALBENCH_CHECK(s == kCompleted, "W7");
    return {g.bytepos_to_lsn(BytePos{start}), g.bytepos_to_end_lsn(BytePos{end})};
  }

  template <class W>
  typename W::Inserted lead(W& wal, Proc<P>& me, Writer& w, ClientState& c) {
    const uint32_t self = static_cast<uint32_t>(me.id.value);
    const WalGeometry& g = wal.geom();
    // 3 EnterAsBatchGroupLeader: the stack from the newest writer down to us.
    c.chain.clear();
    for (uint32_t x = newest_writer_.load(); x != self + 1;) {
      WALBENCH_CHECK(x != 0, "W2");  // we are on the stack, below every newer writer
      c.chain.push_back(x - 1);
      x = writers_[x - 1].link_older.get();
    }
    const uint64_t own = max_align(w.len.get());
    uint64_t cap = params_.max_group_bytes;
    if (own <= cap / 8) cap = own + cap / 8;  // the small-leader rule
    c.members.clear();
    c.members.push_back(self);
    uint64_t bytes = own;
    for (auto it = c.chain.rbegin(); it != c.chain.rend(); ++it) {
      const uint64_t size = max_align(writers_[*it].len.get());
      if (bytes + size > cap) break;
      bytes += size;
      c.members.push_back(*it);
    }
    const uint32_t n = static_cast<uint32_t>(c.members.size());
    const bool parallel = params_.copy == GroupCopy::kParallel;
    const uint32_t words = parallel ? n : 1;
    ++c.groups;
    c.members_total += n;
    c.largest = std::max<uint64_t>(c.largest, n);

    // W3: the progress words before CurrBytePos moves, each at its copier's first byte. Only
    // leaders write CurrBytePos, one at a time (W4), so the group's start is known before the
    // spinlock. A word must not start lower: a copier evicting a page of its own group waits
    // for every word below the page's end, and nobody would raise it.
    const uint64_t before = curr_byte_pos_.get();
    {
      uint64_t pos = before;
      for (uint32_t k = 0; k < words; ++k) {
        progress_[k].value.store(g.bytepos_to_end_lsn(BytePos{pos}).value);
        pos += max_align(writers_[c.members[k]].len.get());
      }
    }
    if (progress_used_.load() < words) progress_used_.store(words);

    // ReserveXLogInsertLocation, once for the group.
    insertpos_lck_.acquire(me);
    const uint64_t start = curr_byte_pos_.get();
    const uint64_t prev = prev_byte_pos_.get();
    uint64_t last_start = start;
    {
      uint64_t pos = start;
      for (uint32_t i = 0; i < n; ++i) {
        last_start = pos;
        pos += max_align(writers_[c.members[i]].len.get());
      }
      curr_byte_pos_.set(pos);
    }
    prev_byte_pos_.set(last_start);
    insertpos_lck_.release();
    WALBENCH_CHECK(start == before, "W4");

    // 4: chain xl_prev (W2) and copy.
    typename W::Inserted mine{};
    uint64_t pos = start;
    uint64_t prev_pos = prev;
    if (parallel && n > 1) {
      group_pending_.store(n - 1);
      leader_of_group_.set(self);
      w.state.store(kAwaitingMembers);
    }
    // copy "parallel": release the followers first (LaunchParallelMemTableWriters), then copy
    // our own record; copy "leader": every record in group order.
    auto copy_one = [&](Writer& m, uint64_t at, Lsn prev_lsn, bool follower) {
      const uint32_t len = m.len.get();
      const uint64_t end = at + max_align(len);
      uint8_t* rec = reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(m.record.get()));
      if (follower) P::touch_range(rec, len, RangeAccess::kRead);  // the follower's record
      c.progress_floor = g.bytepos_to_end_lsn(BytePos{at}).value;
      progress_[0].value.store(c.progress_floor);
      finish_record(rec, m.crc.get(), prev_lsn);
      wal.copy_record(me, BytePos{at}, BytePos{end}, rec, len);
      m.start_lsn.set(g.bytepos_to_lsn(BytePos{at}).value);
      m.end_lsn.set(g.bytepos_to_end_lsn(BytePos{end}).value);
    };
    const Lsn own_prev = prev == kNoPrev ? kInvalidLsn : g.bytepos_to_lsn(BytePos{prev});
    c.progress_word = 0;
    for (uint32_t i = 0; i < n; ++i) {
      Writer& m = writers_[c.members[i]];
      const uint64_t end = pos + max_align(m.len.get());
      const Lsn prev_lsn = prev_pos == kNoPrev ? kInvalidLsn : g.bytepos_to_lsn(BytePos{prev_pos});
      if (i == 0) {
        mine = {g.bytepos_to_lsn(BytePos{pos}), g.bytepos_to_end_lsn(BytePos{end})};
        if (!parallel) copy_one(m, pos, prev_lsn, false);
      } else if (parallel) {
        m.start.set(pos);
        m.prev_lsn.set(prev_lsn.value);
        m.word.set(i);
        set_state(c.members[i], kCopyOwn);
      } else {
        copy_one(m, pos, prev_lsn, true);
      }
      prev_pos = pos;
      pos = end;
    }
    if (parallel) copy_one(w, start, own_prev, false);
    progress_[0].value.store(kMaxLsn.value);  // W3: the leader's copies are done
    c.progress_word = kNoWord;
    if (parallel && n > 1) {
      const uint32_t s = await_state(me, w, c, kAwaitingMembers);  // W5
      WALBENCH_CHECK(s == kMembersDone, "W5");
    }

    // 5 ExitAsBatchGroupLeader.
    const uint32_t last = c.members.back();
    uint32_t expected = last + 1;
    if (!newest_writer_.compare_exchange(expected, 0)) {
      uint32_t x = newest_writer_.load();
      for (;;) {
        WALBENCH_CHECK(x != 0, "W1");
        const uint32_t older = writers_[x - 1].link_older.get();
        if (older == last + 1) break;
        x = older;
      }
      writers_[x - 1].link_older.set(0);
      set_state(x - 1, kLeader);
    }
    for (uint32_t i = 1; i < n; ++i) set_state(c.members[i], kCompleted);  // W7
    return mine;
  }

  static constexpr uint64_t kNoPrev = ~uint64_t{0};

  const WriteGroupParams params_;
  ProcTable<P>& procs_;
  alignas(128) typename P::template Atomic<uint32_t> newest_writer_{0};
  alignas(128) SpinLock<P> insertpos_lck_;
  typename P::template Shared<uint64_t> curr_byte_pos_{0};
  typename P::template Shared<uint64_t> prev_byte_pos_{kNoPrev};
  alignas(128) typename P::template Atomic<uint32_t> group_pending_{0};
  typename P::template Shared<uint32_t> leader_of_group_{0};
  alignas(128) typename P::template Atomic<uint32_t> progress_used_{0};
  std::vector<Writer> writers_;
  std::vector<ProgressWord> progress_;
  std::vector<ClientState> clients_;
};

}  // namespace walbench

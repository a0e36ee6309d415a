// The fetch_add reservation and the xl_prev handover of the lock-free reservation designs, as
// pieces a strategy composes: lockfree_reserve (copy under insertion locks, progress through
// insertingAt) and link_buf (unlocked copy, progress through a ring of completion links) use
// them; per_client_progress may too. Their protocol (origin, invariants I2-I4, N1-N5, T1-T6,
// hazards) is described once, in the protocol block of strategies/lockfree_reserve/
// lockfree_reserve.h; the comments here cite it.
//
//   FetchAddReservation<P>  curr_byte_pos_ and ReserveXLogInsertLocation as one fetch_add (I1)
//   PrevLinkTable<P, kOffset>   Sokolov's lock-free link table (hash_table, hash_table_offset)
//   PrevLinks<P>            the three prev_link mechanisms behind one before_copy / after_copy
//                           pair, with the per-client advertise cap of I4
//
// What the owning strategy must provide (NB: next_header's N3 and N5 rely on it):
//   - advertise(me, pos) clamps pos to PrevLinks::cap(me) (I4), and a pos it publishes means
//     "everything I reserved below pos is copied" to whatever answers WaitXLogInsertionsToFinish;
//   - a client blocked in read_own_link (next_header) or in the table's wait loop holds its
//     reservation unfinished, and nothing older than its start waits for it (I3).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <new>
#include <source_location>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/locks/spinlock.h"
#include "core/proc.h"
#include "core/wal/format.h"
#include "core/wal/geometry.h"
#include "core/wal/types.h"
#include "core/wal/wal.h"  // WALBENCH_CHECK
#include "strategies/strategy.h"

namespace walbench {

enum class PrevLink { kNextHeader, kHashTable, kHashTableOffset };

// Reads the "prev_link" key when present (default when absent); throws std::invalid_argument
// naming `strategy` on an unknown value.
PrevLink parse_prev_link(const nlohmann::json& j, const char* strategy, PrevLink default_value);
// The ParamSpec of prev_link, for a strategy's StrategyInfo.
ParamSpec prev_link_param_spec(const std::string& default_value);

// ---------------------------------------------------------------------------------------------
// The link table (hash_table, hash_table_offset).

// A link: the record that reserved [start, end) tells its successor (the record at `end`) that
// its xl_prev is `start`. Keyed by `end`.
struct PrevLinkEntry {
  BytePos end;
  BytePos start;
};

// Murmur-style 32-bit finaliser (the avalanche step of MurmurHash3, written out here).
constexpr uint32_t murmur_fmix32(uint32_t h) {
  h ^= h >> 16;
  h *= 0x85EBCA6Bu;
  h ^= h >> 13;
  h *= 0xC2B2AE35u;
  h ^= h >> 16;
  return h;
}

// The 32-bit key of a position (T5), also what the bucket hash is computed from in both modes.
constexpr uint32_t link_key32(uint64_t pos) { return static_cast<uint32_t>(pos ^ (pos >> 32)); }

using LinkHash = uint32_t (*)(uint32_t key32);

// kOffset = false: 64-bit entries {key = end, value = start}.
// kOffset = true:  32-bit entries {key32, hi, dist = end - start}.
template <class P, bool kOffset>
class PrevLinkTable {
 public:
  static constexpr uint32_t kBucketSlots = 4;  // one 64-byte line of 16-byte entries
  static constexpr uint32_t kCandidates = 8;   // two buckets
  static constexpr uint32_t kSwapOneIn = 128;  // the random-swap probability, 1/128 per round

  // capacity: 2 x num_locks in the strategy (T4), a power of two. hash: bucket hash of key32
  // (tests inject colliding ones).
  explicit PrevLinkTable(uint32_t capacity, LinkHash hash = &murmur_fmix32,
                         SpinDelayParams spin = {})
      : capacity_(capacity),
        buckets_(std::max<uint32_t>(1, capacity / kBucketSlots)),
        hash_(hash),
        spin_(spin),
        lines_(new Line[(capacity + kBucketSlots - 1) / kBucketSlots]) {
    WALBENCH_CHECK(capacity >= 1 && (capacity & (capacity - 1)) == 0, "T4");
  }

  uint32_t capacity() const { return capacity_; }

  // The 8 candidate entries of a key: two 4-slot buckets chosen by the hash (distinct when
  // there are two buckets or more). With fewer than 8 entries, candidates repeat.
  std::array<uint32_t, kCandidates> candidates(BytePos key) const {
    // Powers of two: masks, not divisions (this runs twice per record).
    const uint32_t bucket_mask = buckets_ - 1;
    const uint32_t slot_mask = capacity_ - 1;
    const uint32_t h = hash_(link_key32(key.value));
    const uint32_t b1 = h & bucket_mask;
    uint32_t b2 = (h >> 16) & bucket_mask;
    if (b2 == b1 && buckets_ > 1) b2 = (b1 + 1) & bucket_mask;
    std::array<uint32_t, kCandidates> c{};
    for (uint32_t i = 0; i < kBucketSlots; ++i) {
      c[i] = (b1 * kBucketSlots + i) & slot_mask;
      c[kBucketSlots + i] = (b2 * kBucketSlots + i) & slot_mask;
    }
    return c;
  }

  // Consume: remove the link keyed by `key` if one of its candidates holds it (T3).
  bool try_consume(BytePos key, BytePos* prev) {
    for (const uint32_t j : candidates(key))
      if (consume_at(entry(j), key, prev)) return true;
    return false;
  }

  // Insert into the first empty candidate (T1).
  bool try_insert(const PrevLinkEntry& l) {
    for (const uint32_t j : candidates(l.end))
      if (insert_at(entry(j), l)) return true;
    return false;
  }

  // The swap of the random-swap rule: if entry `slot` holds a link and nobody owns it, put `in`
  // there and hand the link it held back in *evicted (T2). False if empty or owned.
  bool try_swap(uint32_t slot, const PrevLinkEntry& in, PrevLinkEntry* evicted) {
    return swap_at(entry(slot), in, evicted);
  }

  struct Outcome {
    BytePos prev;        // valid when asked to consume
    uint32_t swaps = 0;  // random swaps done
    bool waited = false;
  };

  // The wait loop (PROTOCOLS.md section 4, Sokolov): consume the link keyed by `start` (unless
  // consume is false: the first record), insert {end -> start}, swap at random when the
  // candidates are full, spin and retry (T6). Statistics go to kPrevLinkWait.
  Outcome exchange(Proc<P>& me, BytePos start, BytePos end, bool consume) {
    Outcome o;
    bool have_prev = !consume;
    PrevLinkEntry pending{end, start};
    bool have_pending = true;
    LockStats& st = me.stats.of(WaitEvent::kPrevLinkWait);
    if (!have_prev && try_consume(start, &o.prev)) have_prev = true;
    if (try_insert(pending)) have_pending = false;
    if (have_prev && !have_pending) {
      if (consume) ++st.acquisitions;
      return o;
    }
    o.waited = true;
    ++st.contended;
    const uint64_t t0 = P::now_ns();
    me.set_wait(WaitEvent::kPrevLinkWait);
    SpinDelay<P> delay(me, WaitEvent::kPrevLinkWait, spin_, st, std::source_location::current());
    bool slept = false;
    for (;;) {
      if (have_pending) {
        P::spin_delay();  // T6: somebody depends on `pending`: no sleeping
        ++st.spins;
      } else {
        delay.perform();  // may sleep: perform_spin_delay
        me.set_wait(WaitEvent::kPrevLinkWait);
        slept = true;
      }
      if (!have_prev && try_consume(start, &o.prev)) have_prev = true;
      if (have_pending) {
        if (try_insert(pending)) {
          have_pending = false;
        } else if (me.next_random() % kSwapOneIn == 0) {
          const auto c = candidates(pending.end);
          PrevLinkEntry evicted;
          if (try_swap(c[me.next_random() % kCandidates], pending, &evicted)) {
            ++o.swaps;
            if (!have_prev && evicted.end == start) {  // our own link came back to us (T3)
              o.prev = evicted.start;
              have_prev = true;
              have_pending = false;
            } else {
              pending = evicted;  // T2: ours to re-insert now
            }
          }
        }
      }
      if (have_prev && !have_pending) break;
    }
    if (slept) delay.finish();
    me.clear_wait();
    st.wait_ns += P::now_ns() - t0;
    if (consume) ++st.acquisitions;
    return o;
  }

  // Quiescent inspection (tests): is entry j full, and with which link.
  bool holds(uint32_t j, PrevLinkEntry* l) const {
    const Entry& e = entry(j);
    if constexpr (kOffset) {
      const uint32_t d = e.dist.load();
      if (d == 0) return false;
      const uint64_t hi = e.hi.load();
      const uint64_t pos = hi << 32 | (e.key32.load() ^ static_cast<uint32_t>(hi));
      *l = {BytePos{pos}, BytePos{pos - (d & ~1u)}};
    } else {
      const uint64_t v = e.value.load();
      if (v == kEmpty) return false;
      *l = {BytePos{e.key.load() & ~kLockBit}, BytePos{v}};
    }
    return true;
  }
  uint32_t occupied() const {
    uint32_t n = 0;
    PrevLinkEntry l;
    for (uint32_t j = 0; j < capacity_; ++j) n += holds(j, &l) ? 1 : 0;
    return n;
  }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  static constexpr uint64_t kLockBit = 1;

  // CompactAtomic (platform.h): the entries keep 16 bytes under --disable-atomics too.
  struct Entry64 {
    CompactAtomic<P, uint64_t> key{kLockBit};  // T1: empty => locked
    CompactAtomic<P, uint64_t> value{kEmpty};
  };
  struct Entry32 {
    CompactAtomic<P, uint32_t> key32{0};
    CompactAtomic<P, uint32_t> hi{0};
    CompactAtomic<P, uint32_t> dist{0};  // 0 empty, odd owned (T1)
    CompactAtomic<P, uint32_t> pad{0};
  };
  using Entry = std::conditional_t<kOffset, Entry32, Entry64>;
  static_assert(sizeof(Entry) == 16, "16-byte entries, four to a cache line");
  struct alignas(64) Line {
    Entry e[kBucketSlots];
  };

  Entry& entry(uint32_t j) { return lines_[j / kBucketSlots].e[j % kBucketSlots]; }
  const Entry& entry(uint32_t j) const { return lines_[j / kBucketSlots].e[j % kBucketSlots]; }

  static uint32_t distance(const PrevLinkEntry& l) {
    const uint64_t d = l.end.value - l.start.value;
    WALBENCH_CHECK(d != 0 && d < (uint64_t{1} << 32) && (d & 1) == 0, "T5");
    return static_cast<uint32_t>(d);
  }

  bool consume_at(Entry& e, BytePos key, BytePos* prev) {
    if constexpr (kOffset) {
      const uint32_t k32 = link_key32(key.value);
      const uint32_t hi = static_cast<uint32_t>(key.value >> 32);
      if (e.key32.load() != k32 || e.hi.load() != hi) return false;
      uint32_t d = e.dist.load();
      if (d == 0 || (d & 1) != 0) return false;
      if (!e.dist.compare_exchange(d, d | 1)) return false;
      if (e.key32.load() == k32 && e.hi.load() == hi) {  // T3, T5: still ours under the lock
        e.dist.store(0);
        *prev = BytePos{key.value - d};
        return true;
      }
      e.dist.store(d);  // not ours after all: unlock untouched
      return false;
    } else {
      if (e.key.load() != key.value) return false;
      const uint64_t old = e.key.fetch_or(kLockBit);
      if (old == key.value) {  // T3: we own the entry that holds our link
        const uint64_t v = e.value.load();
        WALBENCH_CHECK(v != kEmpty, "T1");
        e.value.store(kEmpty);  // the key stays locked (T1)
        *prev = BytePos{v};
        return true;
      }
      if ((old & kLockBit) == 0) e.key.store(old);  // locked another full entry: restore (T3)
      return false;
    }
  }

  bool insert_at(Entry& e, const PrevLinkEntry& l) {
    if constexpr (kOffset) {
      const uint32_t d = distance(l);
      if (e.dist.load() != 0) return false;
      uint32_t expected = 0;
      if (!e.dist.compare_exchange(expected, 1)) return false;  // claimed and owned (T1)
      e.key32.store(link_key32(l.end.value));
      e.hi.store(static_cast<uint32_t>(l.end.value >> 32));
      e.dist.store(d);  // publish and unlock
      return true;
    } else {
      if (e.value.load() != kEmpty) return false;
      uint64_t expected = kEmpty;
      if (!e.value.compare_exchange(expected, l.start.value)) return false;
      e.key.store(l.end.value);  // T1: the key was locked since it was emptied; publish
      return true;
    }
  }

  bool swap_at(Entry& e, const PrevLinkEntry& in, PrevLinkEntry* evicted) {
    if constexpr (kOffset) {
      const uint32_t din = distance(in);
      uint32_t d = e.dist.load();
      if (d == 0 || (d & 1) != 0) return false;
      if (!e.dist.compare_exchange(d, d | 1)) return false;
      const uint64_t hi = e.hi.load();
      const uint64_t pos = hi << 32 | (e.key32.load() ^ static_cast<uint32_t>(hi));
      *evicted = {BytePos{pos}, BytePos{pos - d}};
      e.key32.store(link_key32(in.end.value));
      e.hi.store(static_cast<uint32_t>(in.end.value >> 32));
      e.dist.store(din);
      return true;
    } else {
      if ((e.key.load() & kLockBit) != 0) return false;
      const uint64_t old = e.key.fetch_or(kLockBit);
      if ((old & kLockBit) != 0) return false;
      const uint64_t v = e.value.load();  // full: an unlocked key means a full entry (T1)
      WALBENCH_CHECK(v != kEmpty, "T1");
      *evicted = {BytePos{old}, BytePos{v}};
      e.value.store(in.start.value);
      e.key.store(in.end.value);
      return true;
    }
  }

  const uint32_t capacity_;
  const uint32_t buckets_;
  const LinkHash hash_;
  const SpinDelayParams spin_;
  std::unique_ptr<Line[]> lines_;
};

// ---------------------------------------------------------------------------------------------
// ReserveXLogInsertLocation as one fetch_add (I1): CurrBytePos is an atomic, PrevBytePos is gone
// (its job moves to PrevLinks).
template <class P>
class FetchAddReservation {
 public:
  struct Range {
    uint64_t start;
    uint64_t end;
  };
  Range reserve(uint32_t len) {
    const uint64_t size = max_align(len);
    const uint64_t start = curr_byte_pos_.fetch_add(size);
    return {start, start + size};
  }
  BytePos reserved_end() const { return BytePos{curr_byte_pos_.load()}; }

 private:
  typename P::template Atomic<uint64_t> curr_byte_pos_{0};
};

// ---------------------------------------------------------------------------------------------
// The xl_prev handover after a fetch_add reservation (Insert steps 3 and 5 of lockfree_reserve.h).
template <class P>
class PrevLinks {
 public:
  // table_capacity: entries of the link table (hash_table modes; T4 bounds what it must hold).
  PrevLinks(uint32_t num_clients, PrevLink mode, uint32_t table_capacity)
      : mode_(mode), clients_(num_clients) {
    if (mode == PrevLink::kHashTable)
      table64_ = std::make_unique<PrevLinkTable<P, false>>(table_capacity);
    else if (mode == PrevLink::kHashTableOffset)
      table32_ = std::make_unique<PrevLinkTable<P, true>>(table_capacity);
  }

  PrevLink mode() const { return mode_; }

  // I4: the most the client may advertise now (kMaxLsn when the handover does not constrain it).
  Lsn cap(const Proc<P>& me) const { return clients_[me.id.value].cap; }

  struct Handover {
    Lsn prev = kInvalidLsn;        // the record's xl_prev (I2)
    bool link_after_copy = false;  // next_header: the successor's link waits for after_copy (N4)
    Lsn next_slot{0};              // next_header: the successor's xl_prev slot (N1)
  };

  // Step 3: hand our start to the successor (or schedule it, N4) and obtain our own xl_prev.
  // advertise(Lsn) is the owning strategy's advertise for this client, clamped to cap() (I4).
  template <class W, class Advertise>
  Handover before_copy(W& wal, Proc<P>& me, uint64_t start, uint64_t end, Lsn start_lsn,
                       Lsn end_lsn, Advertise&& advertise) {
    ClientState& c = clients_[me.id.value];
    const WalGeometry& g = wal.geom();
    Handover h;
    if (mode_ == PrevLink::kNextHeader) {
      c.cap = start_end_lsn(g, start, start_lsn);  // I4
      // N4: write the successor's link now unless its slot is N pages or more ahead.
      // The start LSN of `end`: end_lsn unless that is a page start (then past the header).
      const bool end_on_boundary = (end_lsn.value & (uint64_t{g.page_size} - 1)) == 0;
      h.next_slot = slot_lsn(g, end, end_on_boundary ? g.bytepos_to_lsn(BytePos{end}) : end_lsn);
      h.link_after_copy =
          g.page_number(h.next_slot) - g.page_number(start_lsn) >= wal.num_buffers();
      if (!h.link_after_copy) write_link(wal, me, start_lsn, h.next_slot);
      if (start != 0) h.prev = read_own_link(wal, me, c, slot_lsn(g, start, start_lsn), advertise);
      c.cap = kMaxLsn;
    } else if (mode_ == PrevLink::kHashTable) {
      const auto o = table64_->exchange(me, BytePos{start}, BytePos{end}, start != 0);
      if (start != 0) h.prev = g.bytepos_to_lsn(o.prev);
      c.swaps += o.swaps;
    } else {
      const auto o = table32_->exchange(me, BytePos{start}, BytePos{end}, start != 0);
      if (start != 0) h.prev = g.bytepos_to_lsn(o.prev);
      c.swaps += o.swaps;
    }
    return h;
  }

  // Step 5: next_header's link written after the copy (N4), advertising at most end_lsn: the
  // whole record is copied.
  template <class W>
  void after_copy(W& wal, Proc<P>& me, const Handover& h, Lsn start_lsn, Lsn end_lsn) {
    if (!h.link_after_copy) return;
    ClientState& c = clients_[me.id.value];
    WALBENCH_CHECK(wal.num_buffers() >= 2, "N4");
    c.cap = end_lsn;  // N4: everything of ours is copied
    write_link(wal, me, start_lsn, h.next_slot);
    c.cap = kMaxLsn;
    ++c.links_after_copy;
  }

  // LSN of the xl_prev slot of the record that begins at usable position pos, whose start LSN
  // is pos_lsn (N1). NB: must equal g.bytepos_to_lsn(pos + kRecordPrevOffset); the shortcut
  // applies when the slot lies on pos_lsn's page (no page header in between).
  static Lsn slot_lsn(const WalGeometry& g, uint64_t pos, Lsn pos_lsn) {
    const uint64_t off = pos_lsn.value & (uint64_t{g.page_size} - 1);
    if (off + kRecordPrevOffset + sizeof(uint64_t) <= g.page_size)
      return pos_lsn + kRecordPrevOffset;
    return g.bytepos_to_lsn(BytePos{pos + kRecordPrevOffset});
  }
  // bytepos_to_end_lsn(start) from start's LSN: the page start if start lies right after a
  // page header, else the same LSN.
  static Lsn start_end_lsn(const WalGeometry& g, uint64_t start, Lsn start_lsn) {
    const uint64_t off = start_lsn.value & (uint64_t{g.page_size} - 1);
    if (off > WalGeometry::kLongHeader) return start_lsn;
    return g.bytepos_to_end_lsn(BytePos{start});
  }

  // Counters summed over clients; read only when no client runs (tests).
  uint64_t links_after_copy() const {
    uint64_t n = 0;
    for (const auto& c : clients_) n += c.links_after_copy;
    return n;
  }
  uint64_t swaps() const {
    uint64_t n = 0;
    for (const auto& c : clients_) n += c.swaps;
    return n;
  }

 private:
  using Word = CompactAtomic<P, uint64_t>;  // platform.h: no lock embedded under --disable-atomics
  static_assert(sizeof(Word) == sizeof(uint64_t) && alignof(Word) <= 8,
                "a CompactAtomic<P, uint64_t> must overlay 8 page bytes (xl_prev slot)");

  struct alignas(64) ClientState {  // owner only
    Lsn cap = kMaxLsn;  // I4: advertise at most this
    uint64_t links_after_copy = 0;
    uint64_t swaps = 0;
  };

  template <class W>
  static Word& slot_word(W& wal, Proc<P>& me, Lsn slot) {
    const WalGeometry& g = wal.geom();
    WALBENCH_CHECK((slot.value & (uint64_t{g.page_size} - 1)) + sizeof(uint64_t) <= g.page_size,
                   "N1");
    uint8_t* p = wal.get_buffer(me, slot);  // N2: initialised, and stays so (N3)
    WALBENCH_CHECK(reinterpret_cast<uintptr_t>(p) % alignof(uint64_t) == 0, "N1");
    return *std::launder(reinterpret_cast<Word*>(p));
  }

  // Write our start into the xl_prev slot of the record that will begin at our end.
  template <class W>
  void write_link(W& wal, Proc<P>& me, Lsn start_lsn, Lsn next_slot) {
    slot_word(wal, me, next_slot).store(start_lsn.value);
  }

  // Zhou's busy-wait: read our own slot until the predecessor has written it (N2, N5).
  template <class W, class Advertise>
  Lsn read_own_link(W& wal, Proc<P>& me, ClientState& c, Lsn own_slot, Advertise& advertise) {
    Word& w = slot_word(wal, me, own_slot);
    LockStats& st = me.stats.of(WaitEvent::kPrevLinkWait);
    uint64_t v = w.load();
    if (v == 0) {
      advertise(c.cap);  // I4: before spinning, never "unknown"
      ++st.contended;
      const uint64_t t0 = P::now_ns();
      me.set_wait(WaitEvent::kPrevLinkWait);
      while ((v = w.load()) == 0) {
        P::spin_delay();
        ++st.spins;
      }
      me.clear_wait();
      st.wait_ns += P::now_ns() - t0;
    }
    ++st.acquisitions;
    return Lsn{v};
  }

  const PrevLink mode_;
  std::unique_ptr<PrevLinkTable<P, false>> table64_;
  std::unique_ptr<PrevLinkTable<P, true>> table32_;
  std::vector<ClientState> clients_;
};

}  // namespace walbench

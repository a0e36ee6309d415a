// Storage kinds: memory and file. See storage.h for who calls what.
#include "core/wal/storage.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <new>
#include <stdexcept>
#include <system_error>

#include "core/wal/format.h"

namespace walbench {

std::string segment_file_name(uint64_t segno, const WalGeometry& g, uint32_t timeline) {
  const uint64_t per_id = (uint64_t{1} << 32) / g.segment_size;  // XLogSegmentsPerXLogId
  char buf[32];
  std::snprintf(buf, sizeof buf, "%08X%08X%08X", timeline, static_cast<uint32_t>(segno / per_id),
                static_cast<uint32_t>(segno % per_id));
  return buf;
}

namespace {

// Split [start, start + n) at segment boundaries: fn(segno, offset in segment, offset in the
// caller's buffer, length).
template <class Fn>
void for_each_segment_chunk(const WalGeometry& g, Lsn start, size_t n, Fn&& fn) {
  size_t done = 0;
  while (done < n) {
    const uint64_t lsn = start.value + done;
    const uint64_t segno = lsn / g.segment_size;
    const uint64_t off = lsn % g.segment_size;
    const size_t take = static_cast<size_t>(std::min<uint64_t>(n - done, g.segment_size - off));
    fn(segno, off, done, take);
    done += take;
  }
}

// ---------------------------------------------------------------------------------------------
// memory

class MemoryStorage final : public Storage {
 public:
  explicit MemoryStorage(const WalGeometry& g) : g_(g) {}

  void write(Lsn start, const uint8_t* data, size_t n) override {
    std::lock_guard<std::mutex> lk(mu_);
    for_each_segment_chunk(g_, start, n, [&](uint64_t segno, uint64_t off, size_t at, size_t len) {
      std::memcpy(segment(segno) + off, data + at, len);
    });
    count_write(n);
  }

  void sync() override { count_sync(); }

  void read(Lsn start, uint8_t* out, size_t n) const override {
    std::lock_guard<std::mutex> lk(mu_);
    for_each_segment_chunk(g_, start, n, [&](uint64_t segno, uint64_t off, size_t at, size_t len) {
      auto it = segments_.find(segno);
      if (it == segments_.end())
        std::memset(out + at, 0, len);
      else
        std::memcpy(out + at, it->second.get() + off, len);
    });
  }

  const char* kind() const override { return "memory"; }

 private:
  struct FreeDeleter {
    void operator()(uint8_t* p) const { std::free(p); }
  };

  // calloc: a large segment costs nothing until its pages are touched.
  uint8_t* segment(uint64_t segno) {
    auto& slot = segments_[segno];
    if (!slot) {
      slot.reset(static_cast<uint8_t*>(std::calloc(g_.segment_size, 1)));
      if (!slot) throw std::bad_alloc();
    }
    return slot.get();
  }

  const WalGeometry g_;
  mutable std::mutex mu_;
  std::map<uint64_t, std::unique_ptr<uint8_t[], FreeDeleter>> segments_;  // protected by mu_
};


// ---------------------------------------------------------------------------------------------
// ring (StreamedStorage, see storage.h)
//
// Synchronisation: the frontier (written_) and the release point (released_) are atomics; the
// writer and the reader touch disjoint chunks, so the bytes need no lock. Each side sleeps on
// cv_ only when it must, after announcing what it waits for (writer_needs_, reader_wants_), and
// the other side takes mu_ to notify only when that announcement is satisfied (a Dekker pair of
// seq_cst store-then-load on both sides, so no wake-up is lost). The reader asks to be woken a
// chunk past what it needs, so that a writer writing page by page does not wake it per page.

class RingStorage final : public StreamedStorage {
 public:
  RingStorage(const WalGeometry& g, uint64_t ring_bytes, bool reader)
      : chunk_(ring_chunk_bytes(g, ring_bytes)),
        chunks_(std::max<uint64_t>(4, (ring_bytes + chunk_ - 1) / chunk_)),
        mem_(static_cast<uint8_t*>(std::aligned_alloc(4096, chunks_ * chunk_))) {
    if (!mem_) throw std::bad_alloc();
    std::memset(mem_.get(), 0, chunks_ * chunk_);  // pre-fault: no page fault in the timed window
    if (!reader) gone_.store(true, std::memory_order_relaxed);
  }

  void write(Lsn start, const uint8_t* data, size_t n) override {
    const uint64_t frontier = written_.load(std::memory_order_relaxed);  // only the writer stores
    if (start.value != frontier)
      throw std::logic_error("ring storage: write at " + lsn_to_string(start) +
                             " does not continue the written WAL, which ends at " +
                             lsn_to_string(Lsn{frontier}));
    size_t done = 0;
    while (done < n) {
      const uint64_t lsn = start.value + done;
      const uint64_t chunk = lsn / chunk_;
      const uint64_t off = lsn % chunk_;
      const size_t take = static_cast<size_t>(std::min<uint64_t>(n - done, chunk_ - off));
      if (off == 0 && chunk >= chunks_) wait_released((chunk - chunks_ + 1) * chunk_);
      uint8_t* dst = mem_.get() + (chunk % chunks_) * chunk_ + off;
      std::memcpy(dst, data + done, take);
      if (corrupt_at_ >= lsn && corrupt_at_ < lsn + take) dst[corrupt_at_ - lsn] ^= 0xFF;
      done += take;
      publish(lsn + take);
    }
    count_write(n);
  }

  void sync() override { count_sync(); }

  // Bytes of chunks already reused, or not yet written, read as zero (as for memory storage);
  // concurrently with the writer, the reader reads only released-or-later bytes below the
  // frontier, which the writer does not touch.
  void read(Lsn start, uint8_t* out, size_t n) const override {
    const uint64_t frontier = written_.load(std::memory_order_acquire);
    const uint64_t top_chunk = (frontier + chunk_ - 1) / chunk_;  // chunks [.., top) written
    const uint64_t retained_from = top_chunk > chunks_ ? (top_chunk - chunks_) * chunk_ : 0;
    if (start.value < retained_from)
      throw std::logic_error("WAL at " + lsn_to_string(start) + " was recycled (the ring keeps " +
                             lsn_to_string(Lsn{retained_from}) + " onwards)");
    size_t done = 0;
    while (done < n) {
      const uint64_t lsn = start.value + done;
      const uint64_t off = lsn % chunk_;
      const size_t take = static_cast<size_t>(std::min<uint64_t>(n - done, chunk_ - off));
      const size_t have =
          lsn >= frontier ? 0 : static_cast<size_t>(std::min<uint64_t>(take, frontier - lsn));
      std::memcpy(out + done, mem_.get() + ((lsn / chunk_) % chunks_) * chunk_ + off, have);
      std::memset(out + done + have, 0, take - have);
      done += take;
    }
  }

  const char* kind() const override { return "ring"; }

  uint64_t written_past(uint64_t lsn) override {
    uint64_t w = written_.load(std::memory_order_acquire);
    if (w > lsn || ended_.load(std::memory_order_acquire)) return w;
    const uint64_t want = lsn + chunk_;
    std::unique_lock<std::mutex> lk(mu_);
    reader_wants_.store(want, std::memory_order_seq_cst);
    cv_.wait(lk, [&] {
      return written_.load(std::memory_order_seq_cst) > want ||
             ended_.load(std::memory_order_seq_cst);
    });
    reader_wants_.store(kNobody, std::memory_order_relaxed);
    return written_.load(std::memory_order_acquire);
  }

  uint64_t written() const override { return written_.load(std::memory_order_acquire); }

  std::optional<uint64_t> declared_end() const override {
    if (!ended_.load(std::memory_order_acquire)) return std::nullopt;
    return end_;
  }

  void release(uint64_t lsn) override {
    if (lsn <= released_.load(std::memory_order_relaxed)) return;  // only the reader stores
    released_.store(lsn, std::memory_order_seq_cst);
    if (writer_needs_.load(std::memory_order_seq_cst) <= lsn) notify();
  }

  void reader_gone() override {
    gone_.store(true, std::memory_order_seq_cst);
    notify();
  }

  void declare_end(uint64_t end) override {
    end_ = end;
    ended_.store(true, std::memory_order_seq_cst);
    notify();
  }

  Stats stats() const override {
    Stats s = stats_;
    s.ring_bytes = chunks_ * chunk_;
    s.chunk_bytes = chunk_;
    return s;
  }

  void plant_corruption(uint64_t lsn) override { corrupt_at_ = lsn; }

 private:
  static constexpr uint64_t kNobody = ~uint64_t{0};
  struct FreeDeleter {
    void operator()(uint8_t* p) const { std::free(p); }
  };

  void notify() {
    std::lock_guard<std::mutex> lk(mu_);
    cv_.notify_all();
  }

  void publish(uint64_t frontier) {
    written_.store(frontier, std::memory_order_seq_cst);
    const uint64_t released = released_.load(std::memory_order_relaxed);
    stats_.max_lag_bytes = std::max(stats_.max_lag_bytes, frontier - std::min(frontier, released));
    if (reader_wants_.load(std::memory_order_seq_cst) < frontier) notify();
  }

  // Before reusing a chunk: the reader must have released every LSN below `need`.
  void wait_released(uint64_t need) {
    if (released_.load(std::memory_order_acquire) >= need ||
        gone_.load(std::memory_order_acquire))
      return;
    const auto t0 = std::chrono::steady_clock::now();
    {
      std::unique_lock<std::mutex> lk(mu_);
      writer_needs_.store(need, std::memory_order_seq_cst);
      cv_.wait(lk, [&] {
        return released_.load(std::memory_order_seq_cst) >= need ||
               gone_.load(std::memory_order_seq_cst);
      });
      writer_needs_.store(kNobody, std::memory_order_relaxed);
    }
    ++stats_.writer_waits;
    stats_.writer_wait_ns += static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
            .count());
  }

  const uint64_t chunk_;
  const uint64_t chunks_;
  const std::unique_ptr<uint8_t[], FreeDeleter> mem_;
  std::atomic<uint64_t> written_{0};             // the frontier; stored by the writer
  std::atomic<uint64_t> released_{0};            // stored by the reader
  std::atomic<uint64_t> writer_needs_{kNobody};  // the writer sleeps until released_ >= this
  std::atomic<uint64_t> reader_wants_{kNobody};  // the reader sleeps until written_ > this
  std::atomic<bool> ended_{false};
  std::atomic<bool> gone_{false};
  uint64_t end_ = 0;  // set before ended_ (release), read after it (acquire)
  std::mutex mu_;
  std::condition_variable cv_;
  Stats stats_;                     // the writer's; read after the run
  uint64_t corrupt_at_ = kNobody;   // test hook, set before the run
};

}  // namespace

uint64_t ring_chunk_bytes(const WalGeometry& g, uint64_t ring_bytes) {
  uint64_t chunk = std::min<uint64_t>(g.segment_size, uint64_t{1} << 20);
  while (chunk > g.page_size && 4 * chunk > ring_bytes) chunk /= 2;
  return chunk;
}

std::unique_ptr<StreamedStorage> make_ring_storage(const WalGeometry& g, uint64_t ring_bytes,
                                                   bool reader) {
  g.validate();
  return std::make_unique<RingStorage>(g, ring_bytes, reader);
}

namespace {
// ---------------------------------------------------------------------------------------------
// file

[[noreturn]] void throw_io(const std::string& what, const std::string& path, int err) {
  throw std::runtime_error(what + " \"" + path + "\": " + std::strerror(err));
}

class FileStorage final : public Storage {
 public:
  FileStorage(const WalGeometry& g, std::string dir, bool fsync)
      : g_(g), dir_(std::move(dir)), fsync_(fsync) {
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec)
      throw std::runtime_error("could not create directory \"" + dir_ + "\": " + ec.message());
    if (!std::filesystem::is_directory(dir_, ec))
      throw std::runtime_error("could not use \"" + dir_ + "\" as WAL directory: not a directory");
  }

  ~FileStorage() override {
    for (auto& [segno, f] : open_) ::close(f.fd);
  }

  void write(Lsn start, const uint8_t* data, size_t n) override {
    std::lock_guard<std::mutex> lk(mu_);
    for_each_segment_chunk(g_, start, n, [&](uint64_t segno, uint64_t off, size_t at, size_t len) {
      OpenSeg& f = open_segment(segno, /*create=*/true);
      size_t done = 0;
      while (done < len) {
        const ssize_t w = ::pwrite(f.fd, data + at + done, len - done,
                                   static_cast<off_t>(off + done));
        if (w < 0) {
          if (errno == EINTR) continue;
          throw_io("could not write to file", path(segno), errno);
        }
        done += static_cast<size_t>(w);
      }
      f.dirty = true;
    });
    count_write(n);
  }

  void sync() override {
    std::lock_guard<std::mutex> lk(mu_);
    for (auto& [segno, f] : open_) {
      if (!f.dirty) continue;
      sync_fd(segno, f);
    }
    count_sync();
  }

  void read(Lsn start, uint8_t* out, size_t n) const override {
    std::lock_guard<std::mutex> lk(mu_);
    for_each_segment_chunk(g_, start, n, [&](uint64_t segno, uint64_t off, size_t at, size_t len) {
      OpenSeg* f = find_or_open_for_read(segno);
      size_t done = 0;
      while (f != nullptr && done < len) {
        const ssize_t r = ::pread(f->fd, out + at + done, len - done,
                                  static_cast<off_t>(off + done));
        if (r < 0) {
          if (errno == EINTR) continue;
          throw_io("could not read from file", path(segno), errno);
        }
        if (r == 0) break;  // past the end of the file: never written
        done += static_cast<size_t>(r);
      }
      std::memset(out + at + done, 0, len - done);
    });
  }

  const char* kind() const override { return "file"; }

 private:
  struct OpenSeg {
    int fd = -1;
    bool dirty = false;  // written since its last fdatasync
    uint64_t last_use = 0;
  };
  // Keep a bounded number of segment files open (tiny test geometries make many segments).
  static constexpr size_t kMaxOpen = 16;

  std::string path(uint64_t segno) const { return dir_ + "/" + segment_file_name(segno, g_); }

  void sync_fd(uint64_t segno, OpenSeg& f) const {
    if (fsync_) {
      while (::fdatasync(f.fd) != 0) {
        if (errno != EINTR) throw_io("could not fdatasync file", path(segno), errno);
      }
    }
    f.dirty = false;
  }

  // Close the least recently used file; a dirty one is synced first, so that sync() still
  // covers everything written since the last sync.
  void evict_one() const {
    auto victim = open_.begin();
    for (auto it = open_.begin(); it != open_.end(); ++it)
      if (it->second.last_use < victim->second.last_use) victim = it;
    if (victim->second.dirty) sync_fd(victim->first, victim->second);
    ::close(victim->second.fd);
    open_.erase(victim);
  }

  OpenSeg& open_segment(uint64_t segno, bool create) const {
    auto it = open_.find(segno);
    if (it == open_.end()) {
      if (open_.size() >= kMaxOpen) evict_one();
      const std::string p = path(segno);
      int fd;
      do {
        fd = ::open(p.c_str(), (create ? O_CREAT : 0) | O_RDWR | O_CLOEXEC, 0600);
      } while (fd < 0 && errno == EINTR);
      if (fd < 0) throw_io("could not open file", p, errno);
      it = open_.emplace(segno, OpenSeg{fd, false, 0}).first;
    }
    it->second.last_use = ++tick_;
    return it->second;
  }

  // nullptr if the segment file does not exist (never written: reads as zeros).
  OpenSeg* find_or_open_for_read(uint64_t segno) const {
    if (open_.find(segno) == open_.end()) {
      struct stat st;
      const std::string p = path(segno);
      if (::stat(p.c_str(), &st) != 0) {
        if (errno == ENOENT) return nullptr;
        throw_io("could not stat file", p, errno);
      }
    }
    return &open_segment(segno, /*create=*/false);
  }

  const WalGeometry g_;
  const std::string dir_;
  const bool fsync_;
  mutable std::mutex mu_;
  // Protected by mu_ (mutable: read() reuses open files).
  mutable std::map<uint64_t, OpenSeg> open_;
  mutable uint64_t tick_ = 0;
};

}  // namespace

std::unique_ptr<Storage> make_memory_storage(const WalGeometry& g) {
  g.validate();
  return std::make_unique<MemoryStorage>(g);
}

std::unique_ptr<Storage> make_file_storage(const WalGeometry& g, const std::string& dir,
                                           bool fsync) {
  g.validate();
  return std::make_unique<FileStorage>(g, dir, fsync);
}

}  // namespace walbench

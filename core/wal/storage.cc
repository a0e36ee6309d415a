// Storage kinds: memory and file. See storage.h for who calls what.
#include "core/wal/storage.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <new>
#include <stdexcept>
#include <system_error>

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

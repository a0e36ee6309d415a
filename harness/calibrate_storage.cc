// Storage measurements of `walbench calibrate` (calibrate_storage.h).
#include "harness/calibrate_storage.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <memory>

#include "absl/strings/str_format.h"
#include "harness/calibrate_probe.h"
#include "harness/config.h"

namespace walbench::calibration {
namespace {

// The temporary file of the storage measurements, walbench-calibrate-XXXXXX in the directory;
// removed when calibrate returns or throws (a kill by signal leaves it behind to delete by hand).
struct TempFile {
  explicit TempFile(const std::string& dir) {
    std::string tmpl = (std::filesystem::path(dir) / "walbench-calibrate-XXXXXX").string();
    fd = mkstemp(tmpl.data());
    if (fd < 0)
      throw UsageError(
          absl::StrFormat("calibrate: --fsync-path %s: cannot create a file there (%s)", dir,
                          std::strerror(errno)));
    path = tmpl;
  }
  ~TempFile() {
    ::close(fd);
    ::unlink(path.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  void pwrite_all(const char* p, size_t n, off_t off) const {
    while (n > 0) {
      const ssize_t w = ::pwrite(fd, p, n, off);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) fail("pwrite");
      p += w;
      n -= static_cast<size_t>(w);
      off += w;
    }
  }
  void datasync() const {
    if (::fdatasync(fd) != 0) fail("fdatasync");
  }
  [[noreturn]] void fail(const char* what) const {
    throw UsageError(absl::StrFormat("calibrate: %s %s: %s", what, path, std::strerror(errno)));
  }
  std::string path;
  int fd = -1;
};

}  // namespace

StorageFigures storage_figures(const std::string& dir, bool quick) {
  TempFile f(dir);
  StorageFigures s;
  // syscall: an 8-byte pwrite into the page cache.
  const char small[8] = {};
  s.syscall = per_op(quick ? 5 : 20, 500, [&](int n) {
    for (int i = 0; i < n; ++i)
      if (::pwrite(f.fd, small, sizeof small, 0) != static_cast<ssize_t>(sizeof small))
        f.fail("pwrite");
  });
  // Sequential write: 1 MiB pwrites, then fdatasync; the first repetition also allocates.
  constexpr size_t kChunk = kMiB;
  s.bytes = (quick ? 16 : 64) * kMiB;
  s.pwrites = s.bytes / kChunk;
  std::vector<char> chunk(kChunk, 'w');
  const double budget_ns = (quick ? 1.5 : 8.0) * 1e9;
  const double start = now_ns();
  const int reps = quick ? 2 : 4;
  for (int r = 0; r < reps; ++r) {
    const double t0 = now_ns();
    for (size_t off = 0; off < s.bytes; off += kChunk)
      f.pwrite_all(chunk.data(), kChunk, static_cast<off_t>(off));
    const double t1 = now_ns();
    f.datasync();
    const double t2 = now_ns();
    if (r > 0 || reps == 1) {  // the first one allocated the blocks: not a WAL-like overwrite
      s.write_ns.push_back(t1 - t0);
      s.sync_ns.push_back(t2 - t1);
    }
    if (now_ns() - start > budget_ns / 2 && !s.write_ns.empty()) break;
  }
  // fdatasync after each 8 KiB pwrite into the allocated region (a WAL page in a segment).
  s.small_bytes = kWalPageBytes;
  const std::vector<char> page(s.small_bytes, 'p');
  const int max_syncs = quick ? 20 : 200;
  const double sync_start = now_ns();
  for (int i = 0; i < max_syncs; ++i) {
    f.pwrite_all(page.data(), page.size(), static_cast<off_t>((i % 256) * page.size()));
    const double t0 = now_ns();
    f.datasync();
    s.small_sync_ns.push_back(now_ns() - t0);
    if (i >= 5 && now_ns() - sync_start > budget_ns / 2) break;
  }
  return s;
}

std::vector<double> page_cache_rate(const std::string& dir, const std::vector<int>& cpus,
                                    size_t region_bytes, size_t first_write_bytes, bool quick) {
  const size_t chunks = std::max<size_t>(region_bytes / kPageCacheChunk, 1);
  const size_t region = chunks * kPageCacheChunk;
  std::vector<std::unique_ptr<TempFile>> files;  // created here: a refusal throws before threads
  for (size_t k = 0; k < cpus.size(); ++k) files.push_back(std::make_unique<TempFile>(dir));
  const std::vector<char> chunk(kPageCacheChunk, 'c');
  first_write_bytes = std::clamp<size_t>(first_write_bytes, 1, kPageCacheChunk);
  std::vector<size_t> at(cpus.size(), 0);
  auto write_next = [&](size_t k) {
    const off_t off = static_cast<off_t>((at[k]++ % chunks) * kPageCacheChunk);
    files[k]->pwrite_all(chunk.data(), kPageCacheChunk, off);
    return kPageCacheChunk;
  };
  return aggregate_rate_all_cpus(
      cpus, quick ? 3 : 9, (quick ? 30 : 100) * 1e6,
      [&](size_t k) {  // allocate the region's blocks first, first_write_bytes at a time
        for (size_t off = 0; off < region; off += first_write_bytes)
          files[k]->pwrite_all(chunk.data(), std::min(first_write_bytes, region - off),
                               static_cast<off_t>(off));
      },
      write_next);
}

PageCacheAgainstCopy page_cache_against_copy(const std::string& dir, size_t region_bytes,
                                             bool quick) {
  constexpr size_t kRing = 64 * kMiB, kBlock = 8 * kMiB, kBlocks = kRing / kBlock;
  const size_t chunks = std::max<size_t>(region_bytes / kPageCacheChunk, 1);
  const size_t region = chunks * kPageCacheChunk;
  TempFile f(dir);
  Buffer src(kRing), dst(kRing);
  std::memset(src.data, 's', kRing);
  for (size_t off = 0; off < region; off += kWalPageBytes)  // small pages or folios
    f.pwrite_all(src.data + off % kRing, kWalPageBytes, static_cast<off_t>(off));
  size_t copies = 0, writes = 0;
  // As copy_one_core takes copy_bytes_per_ns: block s to block 3s + 1 of the other ring, each
  // block timed, the pass's rate the median of its blocks'.
  std::vector<double> block_rates(kBlocks);
  auto copy_pass = [&] {
    for (size_t b = 0; b < kBlocks; ++b, ++copies) {
      const double t0 = now_ns();
      std::memcpy(dst.data + ((copies * 3 + 1) % kBlocks) * kBlock,
                  src.data + (copies % kBlocks) * kBlock, kBlock);
      escape(dst.data);
      block_rates[b] = static_cast<double>(kBlock) / (now_ns() - t0);
    }
    return spread_of(block_rates).median;
  };
  auto pwrite_pass = [&] {
    const double t0 = now_ns();
    for (size_t c = 0; c < chunks; ++c, ++writes)
      f.pwrite_all(src.data + (writes * kPageCacheChunk) % kRing, kPageCacheChunk,
                   static_cast<off_t>(c * kPageCacheChunk));
    return static_cast<double>(region) / (now_ns() - t0);
  };
  PageCacheAgainstCopy r;
  const int rounds = quick ? 6 : 16;  // even: as many kept rounds start with each pass
  for (int round = 0; round <= rounds; ++round) {  // round 0 warms up
    double copy = 0, write = 0;
    if (round % 2 == 0) {
      copy = copy_pass();
      write = pwrite_pass();
    } else {
      write = pwrite_pass();
      copy = copy_pass();
    }
    if (round == 0) continue;
    r.copy.push_back(copy);
    r.pwrite.push_back(write);
    r.ratio.push_back(write / copy);
  }
  return r;
}

}  // namespace walbench::calibration

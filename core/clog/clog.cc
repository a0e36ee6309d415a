// The non-template parts of the CLOG model: status names, reading an image, the verifier.
#include "core/clog/clog.h"

#include "absl/strings/str_format.h"

namespace walbench {

const char* xid_status_name(XidStatus s) {
  switch (s) {
    case XidStatus::kInProgress: return "IN_PROGRESS";
    case XidStatus::kCommitted: return "COMMITTED";
    case XidStatus::kAborted: return "ABORTED";
    case XidStatus::kSubCommitted: return "SUB_COMMITTED";
  }
  return "?";
}

std::vector<uint8_t> clog_history_page(const ClogGeometry& geom, uint32_t pageno, Xid first) {
  std::vector<uint8_t> page(geom.page_size, 0);
  const uint64_t per_page = geom.xacts_per_page();
  const uint64_t lo = std::max<uint64_t>(uint64_t{pageno} * per_page, kFirstNormalXid.value);
  const uint64_t hi = std::min<uint64_t>(uint64_t{pageno} * per_page + per_page, first.value);
  for (uint64_t x = lo; x < hi; ++x) {
    const uint64_t i = x - uint64_t{pageno} * per_page;
    if (i % kClogXactsPerByte == 0 && x + kClogXactsPerByte <= hi) {  // a whole byte: 4 x COMMITTED
      page[i / kClogXactsPerByte] = 0x55;
      x += kClogXactsPerByte - 1;
      continue;
    }
    page[i / kClogXactsPerByte] |= static_cast<uint8_t>(static_cast<uint8_t>(XidStatus::kCommitted)
                                                        << ((i % kClogXactsPerByte) * kClogBitsPerXact));
  }
  return page;
}

XidStatus ClogImage::status(Xid x) const {
  const uint32_t pageno = geom.page_of(x);
  if ((pageno >= pages.size() || pages[pageno].empty()) && x >= kFirstNormalXid && x < first &&
      first.value > 0 && pageno < geom.page_of(Xid{first.value - 1}))
    return XidStatus::kCommitted;  // a history page the run never touched (C7)
  if (pageno >= pages.size() || pages[pageno].empty()) return XidStatus::kInProgress;
  const uint32_t index = geom.index_of(x);
  const uint8_t byte = pages[pageno][index / kClogXactsPerByte];
  return static_cast<XidStatus>((byte >> ((index % kClogXactsPerByte) * kClogBitsPerXact)) & 3);
}

VerifyResult verify_clog(const ClogImage& image, const ClogExpect& expect) {
  VerifyResult r;
  r.clog_checked = true;
  auto fail = [&](std::string msg) {
    r.ok = false;
    r.error = "clog: " + std::move(msg);
    return r;
  };
  if (expect.next < expect.first)
    return fail(absl::StrFormat("next xid %u is below the first %u", expect.next.value, expect.first.value));
  const uint64_t handed_out = uint64_t{expect.next.value} - expect.first.value;
  if (handed_out != expect.assigned)  // C6
    return fail(absl::StrFormat("the xid counter advanced by %u but the clients were given %u xids",
                                handed_out, expect.assigned));
  const uint32_t per_page = image.geom.xacts_per_page();
  const uint32_t last_page = image.geom.page_of(Xid{expect.next.value - 1});  // next >= 3
  if (image.pages.size() != size_t{last_page} + 1)
    return fail(absl::StrFormat("the latest page is %u; expected %u (the page of the last xid)",
                                image.pages.size() - 1, last_page));
  // Pages wholly below the page of the last history xid may be missing: never read nor written.
  const uint32_t history_pages = image.geom.page_of(Xid{expect.first.value - 1});
  for (uint32_t p = 0; p <= last_page; ++p) {
    const std::vector<uint8_t>& page = image.pages[p];
    if (page.empty() && p < history_pages) continue;
    if (page.size() != image.geom.page_size)
      return fail(absl::StrFormat("page %u exists neither in a buffer nor in the backing store", p));
    for (uint32_t i = 0; i < per_page; ++i) {
      const Xid x{p * per_page + i};
      const bool committed = x >= kFirstNormalXid && x < expect.next;  // C7: the history too
      const XidStatus want = committed ? XidStatus::kCommitted : XidStatus::kInProgress;
      const XidStatus got = static_cast<XidStatus>(
          (page[i / kClogXactsPerByte] >> ((i % kClogXactsPerByte) * kClogBitsPerXact)) & 3);
      if (got != want)
        return fail(absl::StrFormat("xid %u (page %u, byte %u) is %s; expected %s%s", x.value, p,
                                    i / kClogXactsPerByte, xid_status_name(got),
                                    xid_status_name(want),
                                    committed ? "" : " (never committed or never assigned)"));
      ++r.clog_xids;
      if (committed && x >= expect.first) ++r.clog_committed;  // the run's own, not the history's
    }
  }
  r.clog_top_level = expect.top_level;
  return r;
}

}  // namespace walbench

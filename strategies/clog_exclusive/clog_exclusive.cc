#include "strategies/clog_exclusive/clog_exclusive.h"

namespace walbench {

ClogStrategyInfo clog_exclusive_info() {
  return {"clog_exclusive",
          "PostgreSQL <= 10 (CLogControlLock per commit; baseline of \"Speed up Clog Access by "
          "increasing CLOG buffers\", Kapila 2015-17)",
          "each committer takes the CLOG control lock exclusively and sets its own transaction "
          "tree's status, page by page",
          {}};
}

}  // namespace walbench

// `walbench run --resume RESULT [-o OUT]`: finishes a run that a signal interrupted (or that
// failed, or died before writing every cell). The matrix is rebuilt from the config the file
// records (context.config: the configs after their --set overrides); the cells that finished
// are kept as they are in the file (byte for byte), the cells missing, failed or interrupted run
// again, and the complete file goes over RESULT (or to OUT). Refused (UsageError, one line)
// when this binary's provenance differs from the file's (git commit, dirty state and diff hash,
// build type, compiler, flags: harness/provenance.h), or when the recorded config does not
// rebuild the recorded cells exactly. harness/RESULTS.md "Interrupted runs" has the details.
#pragma once

#include <iosfwd>
#include <string>

namespace walbench {

struct ResumeOptions {
  std::string result_path;
  std::string output_path;  // empty: over result_path
  bool force = false;       // overwrite an existing output_path
  bool quiet = false;
  unsigned jobs = 1;
};

// Returns as run_matrix does (0, 1, or 128 + signal when interrupted again); 0 with a line on
// `err` when nothing is left to run.
int resume_command(const ResumeOptions& opts, std::ostream& out, std::ostream& err);

}  // namespace walbench

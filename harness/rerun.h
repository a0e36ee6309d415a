// `walbench rerun RESULT [--cell N]...`: runs cells of a result file again from the file alone.
// Each cell entry records its fully resolved setup (harness/cell_json.h), which becomes a
// single-cell config; the run is otherwise an ordinary `walbench run` whose context names the
// file and cells it reran (`rerun_of`). A simulated cell rerun with the same build gives the
// identical cell; a rerun by another build warns that the code differs.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <string>
#include <vector>

namespace walbench {

struct RerunOptions {
  std::string result_path;
  std::vector<size_t> cells;  // cell indices ("index" in the file); empty = every cell
  std::string output_path;    // empty: results/<date>-<host>-rerun-<stem>.json
  bool force = false;         // overwrite output_path
  bool quiet = false;
  unsigned jobs = 1;
};

int rerun_command(const RerunOptions& opts, std::ostream& out, std::ostream& err);

// The file `run`/`rerun` write: an explicit -o path must not exist unless `force` (UsageError
// naming the option otherwise), and its directory must. `what` names the subcommand.
void check_output_path(const std::string& path, bool force, const std::string& what);

}  // namespace walbench

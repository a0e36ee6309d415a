// `walbench rerun`; see rerun.h.
#include "harness/rerun.h"

#include <algorithm>
#include <filesystem>
#include <ostream>
#include <set>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "harness/cell_json.h"
#include "harness/config.h"
#include "harness/provenance.h"
#include "harness/report.h"
#include "harness/runner.h"

namespace walbench {

void check_output_path(const std::string& path, bool force, const std::string& what) {
  const auto parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty() && !std::filesystem::is_directory(parent, ec))
    throw UsageError(what + ": -o " + path + ": directory " + parent.string() + " does not exist");
  if (std::filesystem::is_directory(path, ec))
    throw UsageError(what + ": -o " + path + ": is a directory; expected a file name");
  if (!force && std::filesystem::exists(path, ec))
    throw UsageError(what + ": -o " + path +
                     ": the file exists; pass --force to overwrite it, or choose another name");
}

int rerun_command(const RerunOptions& o, std::ostream& out, std::ostream& err) {
  const nlohmann::json doc = load_result_file(o.result_path);
  const nlohmann::json& ctx = doc["context"];
  const nlohmann::json& entries = doc["cells"];
  std::set<size_t> wanted(o.cells.begin(), o.cells.end());
  std::set<size_t> present;
  size_t total = 0;
  for (const auto& c : entries) {
    const size_t idx = c.value("index", size_t{0});
    present.insert(idx);
    total = std::max(total, idx + 1);
  }
  for (size_t idx : wanted)
    if (!present.count(idx))
      throw UsageError(absl::StrFormat("rerun: %s has no cell with index %d (it holds %d cells, "
                                       "indices %d..%d)",
                                       o.result_path, idx, entries.size(),
                                       present.empty() ? 0 : *present.begin(),
                                       present.empty() ? 0 : *present.rbegin()));
  std::vector<CellSpec> cells;
  std::vector<size_t> rerun_indices;
  for (size_t i = 0; i < entries.size(); ++i) {
    const nlohmann::json& entry = entries[i];
    const size_t idx = entry.value("index", i);
    if (!wanted.empty() && !wanted.count(idx)) continue;
    const std::string where = absl::StrFormat("%s /cells/%d (cell index %d)", o.result_path, i, idx);
    const nlohmann::ordered_json config = config_of_cell(entry, where);
    std::vector<CellSpec> one;
    try {
      one = expand_matrix(config, where);
    } catch (const ConfigError& e) {
      throw UsageError(std::string("rerun: the cell's setup is not valid for this walbench: ") + e.what());
    }
    if (one.size() != 1) throw UsageError("rerun: " + where + ": expected one cell");
    CellSpec cell = std::move(one.front());
    cell.index = idx;
    cell.total = total;
    cell.matrix_values = entry.value("matrix", nlohmann::json::object());
    cell.variant_set = entry.value("set", nlohmann::json::object());
    cells.push_back(std::move(cell));
    rerun_indices.push_back(idx);
  }

  const BuildInfo& b = build_info();
  const std::string was = ctx.value("git_sha", std::string("unknown")) +
                          (ctx.value("git_dirty", false) ? "+dirty" : "");
  const std::string now = b.git_sha + (b.git_dirty ? "+dirty" : "");
  if (was != now || (b.git_dirty && ctx.value("git_diff_hash", nlohmann::json()) != b.git_diff_hash))
    err << "walbench: warning: " << o.result_path << " was made by " << was.substr(0, 18)
        << ", this binary is " << now.substr(0, 18)
        << ": the code differs, so the numbers may too\n";

  std::string output = o.output_path;
  if (output.empty()) {
    const std::string stem = std::filesystem::path(o.result_path).stem().string();
    std::error_code ec;
    std::filesystem::create_directories("results", ec);
    output = "results/" + stem + "-rerun.json";
    for (int n = 2; std::filesystem::exists(output); ++n)
      output = "results/" + stem + "-rerun-" + std::to_string(n) + ".json";
  } else {
    check_output_path(output, o.force, "rerun");
  }

  RunOptions opts;
  opts.output_path = output;
  opts.config_paths = ctx.value("config_files", std::vector<std::string>{});
  opts.config = ctx.value("config", nlohmann::json(nullptr));
  opts.config_hash = ctx.value("config_hash", std::string());
  opts.overrides = ctx.value("overrides", std::vector<std::string>{});
  opts.rerun_of = {{"file", o.result_path}, {"cells", rerun_indices},
                   {"git_sha", ctx.value("git_sha", nlohmann::json(nullptr))},
                   {"git_dirty", ctx.value("git_dirty", nlohmann::json(nullptr))}};
  opts.quiet = o.quiet;
  opts.jobs = o.jobs;
  err << stale_binary_warning();
  if (!o.quiet)
    err << absl::StrFormat("walbench: rerunning %d cell%s of %s -> %s\n", cells.size(),
                           cells.size() == 1 ? "" : "s", o.result_path, output);
  return run_matrix(cells, opts, out, err);
}

}  // namespace walbench

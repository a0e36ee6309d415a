// `walbench run --resume`; see resume.h.
#include "harness/resume.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>

#include "absl/strings/str_format.h"
#include "core/platform/line_names.h"
#include "harness/cell_json.h"
#include "harness/config.h"
#include "harness/provenance.h"
#include "harness/report.h"
#include "harness/rerun.h"
#include "harness/runner.h"

namespace walbench {

namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

[[noreturn]] void refuse(const std::string& path, const std::string& why) {
  throw UsageError("run --resume: " + path + ": " + why);
}

std::string describe_build(const json& sha, const json& dirty, const json& diff_hash,
                           const json& build) {
  std::string s = "git " + (sha.is_string() ? sha.get<std::string>().substr(0, 12) : "unknown");
  if (dirty.is_boolean() && dirty.get<bool>())
    s += "+dirty (diff " + (diff_hash.is_string() ? diff_hash.get<std::string>().substr(0, 12) : "?") + ")";
  s += ", " + build.value("type", std::string("?")) + " build";
  return s;
}

// The build that wrote the file must be this one: same commit, same uncommitted changes, same
// build type, compiler and flags. Otherwise the kept cells and the new ones would come from
// different code.
void check_provenance(const std::string& path, const json& ctx) {
  const BuildInfo& b = build_info();
  const json build = ctx.value("build", json::object());
  const json diff_now = b.git_diff_hash.empty() ? json(nullptr) : json(b.git_diff_hash);
  const json diff_was = ctx.value("git_diff_hash", json(nullptr));
  std::string differs;
  if (ctx.value("git_sha", json(nullptr)) != json(b.git_sha)) differs = "git commit";
  else if (ctx.value("git_dirty", json(nullptr)) != json(b.git_dirty)) differs = "uncommitted changes";
  else if (diff_was != diff_now && !(diff_was.is_null() && b.git_diff_hash.empty()))
    differs = "uncommitted changes (git_diff_hash)";
  else if (build.value("type", json(nullptr)) != json(b.build_type)) differs = "build type";
  else if (build.value("compiler", json(nullptr)) != json(b.compiler)) differs = "compiler";
  else if (build.value("flags", json(nullptr)) != json(b.flags)) differs = "build flags";
  if (differs.empty()) return;
  refuse(path, "written by another build (" + differs + " differ: the file's is " +
                   describe_build(ctx.value("git_sha", json(nullptr)), ctx.value("git_dirty", json(nullptr)),
                                  diff_was, build) +
                   ", this binary's " +
                   describe_build(json(b.git_sha), json(b.git_dirty), diff_now,
                                  json{{"type", b.build_type}}) +
                   "); resume needs the build that started the run; run the config again whole");
}

// The matrix from the recorded config: each config (one object, or an array of them for several
// files) expanded as `walbench run` did, cells concatenated and renumbered (load_configs).
std::vector<CellSpec> rebuild_matrix(const std::string& path, const json& ctx) {
  if (!ctx.contains("config") || !(ctx["config"].is_object() || ctx["config"].is_array()))
    refuse(path, "/context/config is missing; expected the config the run used");
  const json& recorded = ctx["config"];
  if (ctx.value("config_hash", std::string()) != config_hash(recorded))
    refuse(path, "/context/config does not match /context/config_hash: the file was edited");
  const std::vector<std::string> files = ctx.value("config_files", std::vector<std::string>{});
  const json configs = recorded.is_array() ? recorded : json::array({recorded});
  std::vector<CellSpec> cells;
  for (size_t i = 0; i < configs.size(); ++i) {
    const std::string file = i < files.size() ? files[i] : path + " /context/config";
    // A relative preset file was looked up next to the config that named it.
    const std::string preset_dir = std::filesystem::path(file).parent_path().string();
    std::vector<CellSpec> part;
    try {
      part = expand_matrix(configs[i], file, preset_dir);
    } catch (const ConfigError& e) {
      refuse(path, std::string("the recorded config cannot be rebuilt: ") + e.what());
    }
    for (auto& c : part) cells.push_back(std::move(c));
  }
  for (size_t i = 0; i < cells.size(); ++i) {
    cells[i].index = i;
    cells[i].total = cells.size();
  }
  return cells;
}

// Matrix keys whose relative order decides the cells' order. The recorded config keeps its keys
// sorted, not in the file's order, so with two or more of them a cell that the file does not
// hold cannot be put back at its own index with certainty.
size_t order_sensitive_keys(const std::vector<CellSpec>& cells) {
  std::set<std::string> keys;
  for (const auto& c : cells)
    if (c.matrix_values.is_object())
      for (const auto& [k, v] : c.matrix_values.items())
        if (k != "clients" && k != "strategy" && k != "variants") keys.insert(k);
  return keys.size();
}

// A cell's setup blocks (cell_setup_json without "index"), canonical: keys sorted.
std::string setup_key(const ojson& cell) {
  json key = json::object();
  for (const char* k : {"label", "strategy", "params", "clients", "matrix", "set", "platform",
                        "workload", "wal", "commit", "clog", "run"})
    key[k] = cell.contains(k) ? json(cell[k]) : json(nullptr);
  return key.dump();
}

// Why a recorded cell matches no rebuilt cell: the first setup block that differs from the
// rebuilt cell with the same label, clients and matrix values, or that there is none.
std::string setup_mismatch(const ojson& entry, const std::vector<CellSpec>& rebuilt) {
  for (const CellSpec& c : rebuilt) {
    const ojson setup = cell_setup_json(c);
    if (json(entry.value("label", ojson())) != json(setup["label"]) ||
        json(entry.value("clients", ojson())) != json(setup["clients"]) ||
        json(entry.value("matrix", ojson())) != json(setup["matrix"]))
      continue;
    for (const auto& [key, value] : setup.items())
      if (key != "index" && (!entry.contains(key) || json(entry[key]) != json(value)))
        return "/" + key + " differs from the recorded config's cell with the same label, "
               "clients and matrix values";
  }
  return ": its label, clients and matrix values are not a cell of the recorded config";
}

}  // namespace

int resume_command(const ResumeOptions& o, std::ostream& out, std::ostream& err) {
  load_result_file(o.result_path);  // checks the file, with its errors' messages
  std::ifstream in(o.result_path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  const ojson doc = ojson::parse(text.str());  // keeps each cell's key order for the kept cells
  const json ctx = json(doc["context"]);
  if (ctx.contains("rerun_of"))
    refuse(o.result_path, "written by walbench rerun, whose cells are not a config's matrix; "
                          "run walbench rerun again for the cells it lacks");
  check_provenance(o.result_path, ctx);
  if (ctx.contains("trace"))
    refuse(o.result_path, "written by walbench run --trace, which ran one cell of the matrix with "
                          "tracing on; run it again");
  // Kept real-thread cells measured the machine that ran them: the new ones must run there too.
  bool thread_cells = false;
  for (const auto& cell : doc["cells"])
    thread_cells = thread_cells || (cell.contains("platform") &&
                                    cell["platform"].value("kind", std::string()) == "threads");
  if (thread_cells) {
    const nlohmann::ordered_json here = run_context();
    for (const char* key : {"host", "cpu_model", "logical_cores"})
      if (json(here[key]) != ctx.value(key, json(nullptr)))
        refuse(o.result_path, std::string("its real-thread cells ran on another machine (context.") +
                                  key + " " + ctx.value(key, json(nullptr)).dump() + ", here " +
                                  json(here[key]).dump() +
                                  "); resume it on that machine, or run the config again whole");
  }

  // Every recorded cell must be a rebuilt cell, setup block by setup block, and no rebuilt cell
  // may stand for two recorded ones. The recorded config keeps its keys sorted, so its matrix
  // may expand in another order than the run's: cells are matched by their setup, and each
  // keeps the index the file gives it.
  const std::vector<CellSpec> rebuilt = rebuild_matrix(o.result_path, ctx);
  std::map<std::string, size_t> rebuilt_by_setup;
  for (size_t j = 0; j < rebuilt.size(); ++j) rebuilt_by_setup[setup_key(cell_setup_json(rebuilt[j]))] = j;
  std::vector<std::optional<CellSpec>> placed(rebuilt.size());
  std::map<size_t, ojson> finished;
  bool same_order = true;  // each recorded cell is the rebuilt cell at its own index
  for (size_t i = 0; i < doc["cells"].size(); ++i) {
    const ojson& entry = doc["cells"][i];
    const std::string where = absl::StrFormat("/cells/%d", i);
    if (!entry.contains("index") || !entry["index"].is_number_unsigned())
      refuse(o.result_path, where + "/index: missing; expected the cell's index in the matrix");
    const size_t idx = entry["index"].get<size_t>();
    if (idx >= rebuilt.size())
      refuse(o.result_path, absl::StrFormat("%s: cell index %d, but the recorded config has %d "
                                            "cells: the config cannot be rebuilt identically",
                                            where, idx, rebuilt.size()));
    if (placed[idx])
      refuse(o.result_path, absl::StrFormat("%s: a second cell with index %d", where, idx));
    const auto match = rebuilt_by_setup.find(setup_key(entry));
    if (match == rebuilt_by_setup.end())
      refuse(o.result_path, where + setup_mismatch(entry, rebuilt) +
                                ": the config cannot be rebuilt identically with this walbench");
    const size_t j = match->second;
    rebuilt_by_setup.erase(match);  // NB: a second recorded cell with this setup finds none
    same_order = same_order && j == idx;
    placed[idx] = rebuilt[j];
    placed[idx]->index = idx;
    if (entry.value("ok", false) && !entry.contains("interrupted")) finished[idx] = entry;
  }
  // A shard's file (run --shard) resumes that shard only: the cells its context names.
  std::vector<size_t> scope;
  if (ctx.contains("shard")) {
    const json& cells_json = ctx["shard"].value("cells", json(nullptr));
    if (!cells_json.is_array())
      refuse(o.result_path, "/context/shard/cells: missing; expected the shard's cell indices");
    for (const json& c : cells_json) {
      if (!c.is_number_unsigned() || c.get<size_t>() >= rebuilt.size())
        refuse(o.result_path, "/context/shard/cells: expected cell indices below " +
                                  std::to_string(rebuilt.size()));
      scope.push_back(c.get<size_t>());
    }
  } else {
    for (size_t k = 0; k < rebuilt.size(); ++k) scope.push_back(k);
  }
  // Cells the file lacks (a run that died before writing them) take their place in the
  // rebuilt order, which is the run's when the recorded cells agree with it and at most one
  // swept key besides strategy, variants and clients decides it.
  size_t missing = 0;
  for (size_t k : scope) missing += placed[k] ? 0 : 1;
  if (missing > 0 && (!same_order || order_sensitive_keys(rebuilt) > 1))
    refuse(o.result_path, absl::StrFormat("%d cells are missing and the matrix has several keys "
                                          "whose file order the recorded config does not keep; "
                                          "run the config again whole",
                                          missing));
  std::vector<CellSpec> cells;
  std::map<size_t, ojson> finished_by_position;  // run_matrix's keys: positions in `cells`
  std::vector<size_t> to_run;                    // matrix indices
  for (size_t k : scope) {
    if (finished.count(k))
      finished_by_position[cells.size()] = finished[k];
    else
      to_run.push_back(k);
    cells.push_back(placed[k] ? *placed[k] : rebuilt[k]);
  }
  if (to_run.empty()) {
    err << "walbench: " << o.result_path << ": every cell finished; nothing to resume\n";
    return 0;
  }

  std::string output = o.result_path;
  if (!o.output_path.empty() && o.output_path != o.result_path) {
    check_output_path(o.output_path, o.force, "run --resume");
    output = o.output_path;
  }
  RunOptions opts;
  opts.output_path = output;
  opts.config_paths = ctx.value("config_files", std::vector<std::string>{});
  opts.config = ctx["config"];
  opts.config_hash = ctx.value("config_hash", std::string());
  opts.overrides = ctx.value("overrides", std::vector<std::string>{});
  opts.resumed_from = {{"file", o.result_path},
                       {"date", ctx.value("date", json(nullptr))},
                       {"cells", to_run}};
  opts.finished_cells = std::move(finished_by_position);
  if (ctx.contains("shard")) opts.shard = ctx["shard"];
  if (ctx.contains("top_lines") &&
      !(ctx["top_lines"].is_number_unsigned() && ctx["top_lines"].get<uint64_t>() >= 1 &&
        ctx["top_lines"].get<uint64_t>() <= 1000))
    refuse(o.result_path, "its context.top_lines is " + ctx["top_lines"].dump() +
                              "; expected a whole number 1-1000 (run --top-lines N)");
  opts.top_lines = ctx.value("top_lines", 0u);  // run --top-lines: the same for the cells run now
  if (opts.top_lines > 0) {
    line_names::enable();
    for (CellSpec& c : cells) c.top_lines = opts.top_lines;
  }
  opts.quiet = o.quiet;
  opts.jobs = o.jobs;
  err << stale_binary_warning();
  if (!o.quiet)
    err << absl::StrFormat("walbench: resuming %s: %d of %d cells to run -> %s\n", o.result_path,
                           to_run.size(), cells.size(), output);
  return run_matrix(cells, opts, out, err);
}

}  // namespace walbench

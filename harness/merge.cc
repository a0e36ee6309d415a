// Sharded runs and `walbench merge`; see merge.h.
#include "harness/merge.h"

#include <algorithm>
#include <charconv>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <ostream>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "harness/atomic_file.h"
#include "harness/config.h"
#include "harness/provenance.h"
#include "harness/report.h"
#include "harness/rerun.h"

namespace walbench {

namespace {

using ojson = nlohmann::ordered_json;

// Context keys every shard must agree on: the config after overrides, and the build.
// NB: must match merge.h and harness/RESULTS.md "Sharded runs".
constexpr const char* kSameConfig[] = {"config_files", "overrides", "config_hash", "config",
                                       "rerun_of"};
constexpr const char* kSameBuild[] = {"schema_version", "walbench_version", "git_sha",
                                      "git_dirty", "git_diff_hash", "build"};
// Context keys that legitimately differ between shards: kept per shard in context.merge.shards,
// and at the top level only where every shard agrees (null otherwise; "date" is the earliest).
constexpr const char* kPerShard[] = {"date", "host", "cpu_model", "logical_cores", "kernel",
                                     "source_tree_now", "command_line"};

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

bool parse_count(const std::string& s, size_t& value) {
  if (s.empty() || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), value);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

ojson member_or_null(const ojson& obj, const char* key) {
  return obj.contains(key) ? obj[key] : ojson(nullptr);
}

std::string shown(const ojson& v) {
  const std::string s = v.dump();
  return s.size() > 80 ? s.substr(0, 77) + "..." : s;
}

// "4 (insert_locks_atomic clients=8 {"workload.record_size":16})"
std::string describe_cell(const ojson& cell) {
  std::string s = absl::StrFormat("%d (%s clients=%s", cell.value("index", size_t{0}),
                                  cell.value("label", std::string("?")),
                                  member_or_null(cell, "clients").dump());
  if (cell.contains("matrix") && cell["matrix"].is_object() && !cell["matrix"].empty())
    absl::StrAppend(&s, " ", cell["matrix"].dump());
  absl::StrAppend(&s, ")");
  return s;
}

struct ShardFile {
  const MergeInput* input;
  const ojson* ctx;
  Shard shard;
  size_t total = 0;
  std::set<size_t> own;  // the indices context.shard.cells names
};

ShardFile read_shard_block(const MergeInput& in) {
  auto bad = [&](const std::string& what) {
    throw UsageError("merge: " + in.path + ": " + what);
  };
  ShardFile f{&in, &in.doc["context"], {}, 0, {}};
  const ojson& ctx = *f.ctx;
  if (!ctx.contains("shard"))
    bad("no context.shard: not written by `walbench run --shard K/N` (merge combines the shards "
        "of one sharded run)");
  const ojson& s = ctx["shard"];
  auto count = [&](const char* key) {
    if (!s.is_object() || !s.contains(key) || !s[key].is_number_unsigned())
      bad(std::string("context.shard.") + key + ": missing or invalid; expected a non-negative integer");
    return s[key].get<size_t>();
  };
  f.shard.k = count("k");
  f.shard.n = count("n");
  f.total = count("total_cells");
  if (f.shard.k < 1 || f.shard.k > f.shard.n)
    bad(absl::StrFormat("context.shard: k=%d, n=%d; expected 1 <= k <= n", f.shard.k, f.shard.n));
  if (!s.contains("cells") || !s["cells"].is_array())
    bad("context.shard.cells: missing or invalid; expected an array of cell indices");
  for (const ojson& i : s["cells"]) {
    if (!i.is_number_unsigned() || i.get<size_t>() >= f.total)
      bad(absl::StrFormat("context.shard.cells: %s is not a cell index below total_cells %d",
                          i.dump(), f.total));
    f.own.insert(i.get<size_t>());
  }
  const std::vector<size_t> expected = shard_cell_indices(f.shard, f.total);
  if (std::vector<size_t>(f.own.begin(), f.own.end()) != expected)
    bad(absl::StrFormat("context.shard.cells does not list the cells of shard %d/%d of %d cells",
                        f.shard.k, f.shard.n, f.total));
  return f;
}

}  // namespace

Shard parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  Shard s;
  const bool ok = slash != std::string::npos && parse_count(text.substr(0, slash), s.k) &&
                  parse_count(text.substr(slash + 1), s.n) && s.n >= 1 && s.k >= 1 && s.k <= s.n;
  if (!ok)
    throw UsageError("run: --shard \"" + text +
                     "\": expected K/N with whole numbers 1 <= K <= N (this is shard K of N), e.g. "
                     "--shard 2/3");
  return s;
}

std::vector<size_t> shard_cell_indices(const Shard& shard, size_t total) {
  std::vector<size_t> indices;
  for (size_t i = shard.k - 1; i < total; i += shard.n) indices.push_back(i);
  return indices;
}

nlohmann::json shard_context(const Shard& shard, size_t total) {
  return {{"k", shard.k}, {"n", shard.n}, {"cells", shard_cell_indices(shard, total)},
          {"total_cells", total}};
}

ojson merge_results(const std::vector<MergeInput>& inputs, const std::string& command_line,
                    const std::string& date) {
  if (inputs.empty()) throw UsageError("merge: no input files");
  std::vector<ShardFile> files;
  for (const MergeInput& in : inputs) files.push_back(read_shard_block(in));
  std::stable_sort(files.begin(), files.end(),
                   [](const ShardFile& a, const ShardFile& b) { return a.shard.k < b.shard.k; });
  const ShardFile& first = files.front();

  // One run: the same split, config and build everywhere.
  for (const ShardFile& f : files) {
    auto differ = [&](const std::string& what, const std::string& a, const std::string& b,
                      const std::string& why) {
      throw UsageError(absl::StrFormat("merge: %s and %s differ in %s (%s vs %s): %s",
                                       first.input->path, f.input->path, what, a, b, why));
    };
    if (f.shard.n != first.shard.n || f.total != first.total)
      differ("their split", absl::StrFormat("shard %d/%d of %d cells", first.shard.k, first.shard.n, first.total),
             absl::StrFormat("shard %d/%d of %d cells", f.shard.k, f.shard.n, f.total),
             "not shards of one run");
    for (const char* key : kSameConfig)
      if (member_or_null(*f.ctx, key) != member_or_null(*first.ctx, key))
        differ(std::string("context.") + key, shown(member_or_null(*first.ctx, key)),
               shown(member_or_null(*f.ctx, key)),
               "not the same config after overrides; run every shard with the same config and --set");
    for (const char* key : kSameBuild)
      if (member_or_null(*f.ctx, key) != member_or_null(*first.ctx, key))
        differ(std::string("context.") + key, shown(member_or_null(*first.ctx, key)),
               shown(member_or_null(*f.ctx, key)),
               "not the same build; run every shard with one binary built from one source tree");
  }

  // Real-thread cells are measurements of their machine: shards of one file must share it.
  auto has_thread_cells = [](const ShardFile& f) {
    for (const ojson& cell : f.input->doc["cells"])
      if (cell.contains("platform") && cell["platform"].value("kind", std::string()) == "threads")
        return true;
    return false;
  };
  for (const ShardFile& f : files) {
    if (!has_thread_cells(f) && !has_thread_cells(first)) continue;
    for (const char* key : {"host", "cpu_model", "logical_cores"})
      if (member_or_null(*f.ctx, key) != member_or_null(*first.ctx, key))
        throw UsageError(absl::StrFormat(
            "merge: %s and %s differ in context.%s (%s vs %s) and hold real-thread cells, whose "
            "tps measure the machine they ran on; merge only shards run on one machine (simulated "
            "cells may come from any)",
            first.input->path, f.input->path, key, shown(member_or_null(*first.ctx, key)),
            shown(member_or_null(*f.ctx, key))));
  }

  // Every cell exactly once, each from its own shard.
  std::map<size_t, std::pair<const ojson*, const ShardFile*>> cells;
  for (const ShardFile& f : files) {
    for (const ojson& cell : f.input->doc["cells"]) {
      if (!cell.contains("index") || !cell["index"].is_number_unsigned())
        throw UsageError("merge: " + f.input->path + ": a cell has no \"index\"");
      const size_t i = cell["index"].get<size_t>();
      if (!f.own.count(i))
        throw UsageError(absl::StrFormat("merge: %s holds cell %s, which is not one of its shard "
                                         "%d/%d's cells",
                                         f.input->path, describe_cell(cell), f.shard.k, f.shard.n));
      if (cell.contains("interrupted"))
        throw UsageError(absl::StrFormat(
            "merge: %s: cell %s was interrupted (%s); finish shard %d/%d first with walbench run "
            "--resume %s",
            f.input->path, describe_cell(cell), cell.value("error", std::string("interrupted")),
            f.shard.k, f.shard.n, f.input->path));
      const auto [it, inserted] = cells.try_emplace(i, &cell, &f);
      if (!inserted)
        throw UsageError(absl::StrFormat(
            "merge: cell %s is in both %s and %s (shard %d/%d given twice?); each cell must come "
            "from exactly one file",
            describe_cell(cell), it->second.second->input->path, f.input->path, f.shard.k, f.shard.n));
    }
  }
  for (size_t i = 0; i < first.total; ++i) {
    if (cells.count(i)) continue;
    const Shard owner{i % first.shard.n + 1, first.shard.n};
    const auto holder = std::find_if(files.begin(), files.end(),
                                     [&](const ShardFile& f) { return f.shard.k == owner.k; });
    if (holder == files.end())
      throw UsageError(absl::StrFormat(
          "merge: cell %d of %d is missing: it belongs to shard %d/%d, and none of the %d files "
          "(%s) is that shard",
          i, first.total, owner.k, owner.n, files.size(),
          absl::StrJoin(inputs, ", ", [](std::string* o, const MergeInput& in) { o->append(in.path); })));
    throw UsageError(absl::StrFormat(
        "merge: cell %d of %d is missing from %s (shard %d/%d, which holds %d of its %d cells): "
        "that shard's run did not finish; run it again",
        i, first.total, holder->input->path, owner.k, owner.n,
        holder->input->doc["cells"].size(), holder->own.size()));
  }

  // The merged context: the first shard's, with what differs per shard moved to "merge".
  ojson shards = ojson::array();
  for (const ShardFile& f : files) {
    ojson s;
    s["file"] = f.input->path;
    s["k"] = f.shard.k;
    s["n"] = f.shard.n;
    s["cells"] = (*f.ctx)["shard"]["cells"];
    s["wall_s"] = member_or_null((*f.ctx)["shard"], "wall_s");
    for (const char* key : kPerShard)
      if (f.ctx->contains(key)) s[key] = (*f.ctx)[key];
    shards.push_back(std::move(s));
  }
  ojson merged_cells = ojson::array();
  for (const auto& [i, where] : cells) merged_cells.push_back(*where.first);

  std::vector<std::string> keys;
  for (const auto& [key, value] : first.ctx->items()) keys.push_back(key);
  for (const char* key : kPerShard)
    if (std::find(keys.begin(), keys.end(), key) == keys.end() &&
        std::any_of(files.begin(), files.end(), [&](const ShardFile& f) { return f.ctx->contains(key); }))
      keys.insert(std::find(keys.begin(), keys.end(), "build"), key);
  ojson ctx;
  for (const std::string& key : keys) {
    if (key == "shard") continue;
    if (key == "config")
      ctx["merge"] = {{"date", date}, {"command_line", command_line}, {"walbench", version_line()},
                      {"shards", shards}};
    const bool per_shard = std::find_if(std::begin(kPerShard), std::end(kPerShard), [&](const char* k) {
                             return key == k;
                           }) != std::end(kPerShard);
    if (key == "seed") {
      const ojson& c0 = merged_cells.empty() ? ojson() : merged_cells.front();
      ctx["seed"] = c0.contains("run") && c0["run"].contains("seed") ? c0["run"]["seed"] : ojson(nullptr);
    } else if (key == "date") {
      std::string earliest;
      for (const ShardFile& f : files) {
        const std::string d = f.ctx->value("date", std::string());
        if (!d.empty() && (earliest.empty() || d < earliest)) earliest = d;
      }
      ctx["date"] = earliest.empty() ? ojson(nullptr) : ojson(earliest);
    } else if (per_shard) {
      const ojson v = member_or_null(*first.ctx, key.c_str());
      const bool same = std::all_of(files.begin(), files.end(), [&](const ShardFile& f) {
        return member_or_null(*f.ctx, key.c_str()) == v;
      });
      ctx[key] = same ? v : ojson(nullptr);
    } else {
      ctx[key] = (*first.ctx)[key];
    }
  }
  if (!ctx.contains("merge"))
    ctx["merge"] = {{"date", date}, {"command_line", command_line}, {"walbench", version_line()},
                    {"shards", shards}};

  ojson doc;
  doc["context"] = std::move(ctx);
  doc["cells"] = std::move(merged_cells);
  return doc;
}

int merge_command(const MergeOptions& o, std::ostream& /*out*/, std::ostream& err) {
  if (o.output_path.empty()) throw UsageError("merge: -o OUT.json is required");
  for (const std::string& path : o.inputs)
    if (std::count(o.inputs.begin(), o.inputs.end(), path) > 1)
      throw UsageError("merge: " + path + " is given twice");
  check_output_path(o.output_path, o.force, "merge");
  for (const std::string& path : o.inputs) {
    std::error_code ec;
    if (std::filesystem::equivalent(path, o.output_path, ec))
      throw UsageError("merge: -o " + o.output_path + " is one of the input files (" + path +
                       "); choose another name");
  }
  std::vector<MergeInput> inputs;
  for (const std::string& path : o.inputs) {
    load_result_file(path);  // the checks every reader makes, with their messages
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    inputs.push_back({path, ojson::parse(text.str())});  // again, keeping the key order
  }
  const ojson doc = merge_results(inputs, command_line(), utc_now());
  write_file_atomically(o.output_path, doc.dump(1) + "\n");
  size_t failed = 0;
  for (const ojson& c : doc["cells"])
    if (!c.value("ok", false)) ++failed;
  err << absl::StrFormat("walbench: merged %d shard%s, %d cell%s%s -> %s\n", inputs.size(),
                         inputs.size() == 1 ? "" : "s", doc["cells"].size(),
                         doc["cells"].size() == 1 ? "" : "s",
                         failed ? absl::StrFormat(" (%d failed, as the shards recorded)", failed) : "",
                         o.output_path);
  return 0;
}

}  // namespace walbench

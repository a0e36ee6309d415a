// The cell entries of a result file; see cell_json.h and harness/RESULTS.md.
#include "harness/cell_json.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/str_format.h"
#include "core/platform/sim.h"
#include "harness/config.h"
#include "harness/measure.h"
#include "harness/postgres_config.h"

namespace walbench {

using ojson = nlohmann::ordered_json;
using json = nlohmann::json;

json to_json(const PlatformSpec& p) {
  json j = {{"kind", p.kind}, {"atomics", p.atomics}, {"spinlocks", p.spinlocks}};
  if (p.kind == "sim") {
    json machine = p.sim;
    machine["kind"] = "sim";
    j["preset"] = p.sim.contains("preset") ? p.sim["preset"] : json(nullptr);
    if (p.sim.contains("preset_file")) j["preset_file"] = p.sim["preset_file"];
    j["sim"] = SimConfig::from_json(machine, "/platform").to_json();
  }
  if (p.kind == "postgres")
    j["postgres"] = {{"bindir", resolve_bindir(p.postgres)},
                     {"dsn", dsn_without_password(p.postgres.dsn)},
                     {"max_connections", p.postgres.max_connections},
                     {"shared_buffers", p.postgres.shared_buffers},
                     {"wal_dir", p.postgres.wal_dir}};
  return j;
}

json to_json(const WalSpec& w) {
  return {{"page_size", w.page_size},     {"segment_size", w.segment_size},
          {"wal_buffers", w.wal_buffers}, {"storage", w.storage},
          {"path", w.path},               {"memory_mb", w.memory_mb},
          {"fsync", w.fsync},
          {"buffer_init", w.buffer_init}};
}

json to_json(const CommitSpec& c) {
  return {{"synchronous_commit", c.synchronous_commit},
          {"wal_writer_delay_ms", c.wal_writer_delay_ms},
          {"wal_writer_flush_after", c.wal_writer_flush_after}};
}

json to_json(const ClogSpec& c) {
  return {{"strategy", c.strategy},
          {"params", c.params},
          {"clog_buffers", c.clog_buffers},
          {"page_size", c.page_size},
          {"hint_bit_miss", c.hint_bit_miss},
          {"procarray", c.procarray},
          {"snapshot", c.snapshot},
          {"snapshots_per_statement", c.snapshots_per_statement},
          {"lookup_xids", c.lookup_xids},
          {"xid_history", c.xid_history},
          {"xid_locks", c.xid_locks}};
}

json to_json(const WorkloadSpec& w) {
  json out = {{"name", w.name},
              {"record_size", w.record_size.to_json()},
              {"record_size_label", w.record_size.label()},
              {"transactional", w.transactional},
              {"client_overhead_us", w.client_overhead_us},
              {"client_overhead_jitter", w.client_overhead_jitter},
              {"payload_ns_per_byte", w.payload_ns_per_byte},
              {"full_page_writes", w.full_page_writes},
              {"checkpoint_timeout_s", w.checkpoint_timeout_s},
              {"scale", w.scale}};
  // Named only when set, so that the cells of files made before it read as they did.
  if (w.driver_us > 0) out["driver_us"] = w.driver_us;
  if (w.unlogged_tables) out["tables"] = "unlogged";
  return out;
}

json to_json(const RunSpec& r) {
  return {{"duration_s", r.duration_s},
          {"warmup_s", r.warmup_s},
          {"repetitions", r.repetitions},
          {"seed", r.seed},
          {"progress_interval_s", r.progress_interval_s},
          {"verify", r.verify},
          {"watchdog_s", r.watchdog_s},
          {"interleave", r.interleave},
          {"min_txns_per_client", r.min_txns_per_client},
          {"max_window_s", r.max_window_s},
          {"trend_warn_pct", r.trend_warn_pct}};
}

ojson cell_setup_json(const CellSpec& cell) {
  ojson c;
  c["index"] = cell.index;
  c["label"] = cell.label;
  c["strategy"] = cell.strategy;
  c["params"] = ojson(cell.strategy_params);
  c["clients"] = cell.clients;
  c["matrix"] = ojson(cell.matrix_values);
  c["set"] = ojson(cell.variant_set);
  c["platform"] = ojson(to_json(cell.platform));
  c["workload"] = ojson(to_json(cell.workload));
  c["wal"] = ojson(to_json(cell.wal));
  c["commit"] = ojson(to_json(cell.commit));
  c["clog"] = ojson(to_json(cell.clog));
  c["run"] = ojson(to_json(cell.run));
  return c;
}

namespace {

// config_of_cell for a platform "postgres" cell: no strategy (the build is the strategy; a
// label other than the default becomes an override variant's), only the keys a postgres config
// takes (harness/config_postgres.cc: no model-only keys, no server settings with a dsn).
ojson postgres_config_of_cell(const json& cell, const std::string& where) {
  ojson platform = {{"kind", "postgres"}};
  const bool dsn = cell["platform"].contains("postgres") &&
                   !cell["platform"]["postgres"].value("dsn", std::string()).empty();
  if (cell["platform"].contains("postgres"))
    for (const auto& [k, v] : cell["platform"]["postgres"].items())
      if (!(v.is_string() && v.get<std::string>().empty()) && !(dsn && k != "bindir" && k != "dsn"))
        platform[k] = v;
  ojson workload = ojson(cell["workload"]);
  for (const char* k : {"record_size_label", "client_overhead_us", "client_overhead_jitter",
                        "payload_ns_per_byte", "driver_us"})
    workload.erase(k);
  ojson config;
  config["description"] = "rerun of " + where;
  config["platform"] = platform;
  if (!dsn) {
    config["wal"] = {{"wal_buffers", cell["wal"]["wal_buffers"]},
                     {"fsync", cell["wal"]["fsync"]},
                     {"segment_size", cell["wal"]["segment_size"]}};
    config["commit"] = ojson(cell["commit"]);
  }
  config["workload"] = workload;
  config["run"] = ojson(cell["run"]);
  config["matrix"] = {{"clients", ojson::array({cell["clients"]})}};
  if (cell["label"] != "postgres")
    config["matrix"]["variants"] = ojson::array({{{"label", cell["label"]}, {"set", ojson::object()}}});
  return config;
}

}  // namespace

const std::vector<KeyOlderCellsLack>& keys_older_cells_lack() {
  static const std::vector<KeyOlderCellsLack> keys = {
      // Cells written before full-page images were modelled ran without them.
      {"workload", "full_page_writes", false},
      // Cells written before CLOG status lookups existed ran without them (today: 0.5).
      {"clog", "hint_bit_miss", 0},
      // Cells written before clog.snapshots_per_statement existed took one snapshot per
      // statement (today: 2).
      {"clog", "snapshots_per_statement", 1},
      // Cells written before 8b3317e (2026-12-07) record clog.xid_locks only when it was on
      // (off by default then): without the key, a cell ran without the xid lock table.
      {"clog", "xid_locks", false},
  };
  return keys;
}

ojson config_of_cell(const json& cell, const std::string& where) {
  for (const char* k : {"label", "strategy", "params", "clients", "platform", "workload", "wal",
                        "commit", "clog", "run"})
    if (!cell.contains(k))
      throw UsageError(where + ": the cell has no \"" + k +
                       "\" (result files before schema_version 2 do not record a cell's full "
                       "setup; rerun needs one written by this walbench)");
  const json& pf = cell["platform"];
  for (const char* k : {"kind", "atomics", "spinlocks"})
    if (!pf.contains(k))
      throw UsageError(where + ": /platform has no \"" + k + "\" (not a schema_version 2 cell)");
  ojson platform = {{"kind", pf["kind"]}, {"atomics", pf["atomics"]}, {"spinlocks", pf["spinlocks"]}};
  if (pf["kind"] == "sim") {
    if (!pf.contains("sim") || !pf["sim"].is_object())
      throw UsageError(where + ": /platform has no resolved \"sim\" machine");
    // Every parameter is there, so the preset is only a label: a preset file that is gone
    // since is not read again (SimConfig::from_json).
    if (pf.contains("preset") && !pf["preset"].is_null()) platform["preset"] = pf["preset"];
    if (pf.contains("preset_file")) platform["preset_file"] = pf["preset_file"];
    for (const auto& [k, v] : pf["sim"].items()) platform[k] = v;
  }
  ojson workload = ojson(cell["workload"]);
  workload.erase("record_size_label");
  ojson clog = ojson(cell["clog"]);
  clog["strategy"] = ojson{{"name", cell["clog"]["strategy"]}, {"params", cell["clog"]["params"]}};
  clog.erase("params");
  // A rerun runs what the cell ran, not today's default.
  for (const KeyOlderCellsLack& k : keys_older_cells_lack()) {
    ojson& block = std::string(k.block) == "workload" ? workload : clog;
    if (!block.contains(k.key)) block[k.key] = ojson(k.value);
  }
  ojson config;
  config["description"] = "rerun of " + where;
  if (pf["kind"] == "postgres") return postgres_config_of_cell(cell, where);
  config["platform"] = platform;
  config["wal"] = ojson(cell["wal"]);
  config["commit"] = ojson(cell["commit"]);
  config["clog"] = clog;
  config["workload"] = workload;
  config["run"] = ojson(cell["run"]);
  config["strategy"] = {{"name", cell["strategy"]}, {"label", cell["label"]}, {"params", cell["params"]}};
  config["matrix"] = {{"clients", ojson::array({cell["clients"]})}};
  return config;
}

json per_txn_json(const json& window_totals, const json& lock_stats, const json& model_window,
                  uint64_t window_txns_monitor) {
  const uint64_t txns = window_totals.value("txns", uint64_t{0});
  if (txns == 0) return nullptr;
  const double n = static_cast<double>(txns);
  json j;
  j["wal_bytes"] = window_totals.value("wal_bytes", 0.0) / n;
  j["records"] = window_totals.value("records", 0.0) / n;
  j["xids"] = window_totals.value("xids", 0.0) / n;
  json locks = json::object();
  if (lock_stats.is_object())
    for (const auto& [name, s] : lock_stats.items()) {
      if (!s.is_object()) continue;
      locks[name] = {{"acquisitions", s.value("acquisitions", 0.0) / n},
                     {"contended", s.value("contended", 0.0) / n},
                     {"sleeps", s.value("sleeps", 0.0) / n},
                     {"wait_us", s.value("wait_ms", 0.0) * 1000.0 / n}};
    }
  j["locks"] = std::move(locks);
  json model = json::object();
  if (model_window.is_object() && window_txns_monitor > 0) {
    const double m = static_cast<double>(window_txns_monitor);
    for (const char* k : {"writes", "fsyncs", "flushes", "wal_buffers_full", "pages_initialised"})
      if (model_window.contains(k) && model_window[k].is_number())
        model[k] = model_window[k].get<double>() / m;
  }
  j["model"] = std::move(model);
  return j;
}

namespace {

// The median of every number at the same place in a list of objects of the same shape.
json median_of_objects(const std::vector<const json*>& objs) {
  if (objs.empty() || !objs.front()->is_object()) return nullptr;
  json out = json::object();
  for (const auto& [key, first] : objs.front()->items()) {
    std::vector<const json*> members;
    for (const json* o : objs)
      if (o->is_object() && o->contains(key)) members.push_back(&(*o)[key]);
    if (first.is_null() || first.is_string()) {
      out[key] = first;  // "not measured", or a label such as pg_stat_wal's span
    } else if (first.is_object()) {
      out[key] = median_of_objects(members);
    } else if (first.is_number()) {
      std::vector<double> v;
      for (const json* m : members)
        if (m->is_number()) v.push_back(m->get<double>());
      out[key] = median(v);
    }
  }
  return out;
}

}  // namespace

ojson summarize_cell(const std::vector<RepetitionNumbers>& reps) {
  std::vector<double> tps, bps, lat;
  std::vector<const json*> per_txn;
  for (const auto& r : reps) {
    if (!r.measured) continue;
    tps.push_back(r.tps);
    bps.push_back(r.bytes_per_s);
    if (!std::isnan(r.lat_mean_ms)) lat.push_back(r.lat_mean_ms);
    if (!r.per_txn.is_null()) per_txn.push_back(&r.per_txn);
  }
  if (tps.empty()) return nullptr;
  ojson s;
  s["repetitions"] = tps.size();
  s["tps_median"] = median(tps);
  s["tps_min"] = *std::min_element(tps.begin(), tps.end());
  s["tps_max"] = *std::max_element(tps.begin(), tps.end());
  const auto rsd = rsd_pct(tps);
  s["tps_rsd_pct"] = rsd ? ojson(*rsd) : ojson(nullptr);
  const auto ci = median_ci(tps);
  s["tps_ci"] = ci ? ojson{{"lo", ci->lo}, {"hi", ci->hi}, {"level", ci->level}} : ojson(nullptr);
  s["bytes_per_s_median"] = median(bps);
  s["lat_ms_median"] = lat.empty() ? ojson(nullptr) : ojson(median(lat));
  s["per_txn"] = ojson(median_of_objects(per_txn));
  return s;
}

std::vector<std::string> cell_warnings(const CellSpec& cell, const json& repetitions) {
  std::vector<std::string> w;
  const RunSpec& rs = cell.run;
  const size_t nreps = repetitions.size();
  auto rep_prefix = [&](size_t r) {
    return nreps > 1 ? absl::StrFormat("repetition %d: ", r + 1) : std::string();
  };
  for (size_t r = 0; r < nreps; ++r) {
    const json& rep = repetitions[r];
    // A platform's own warnings about a repetition (platform "postgres": harness/postgres_run.cc).
    if (rep.contains("warnings") && rep["warnings"].is_array())
      for (const auto& text : rep["warnings"])
        if (text.is_string()) w.push_back(rep_prefix(r) + text.get<std::string>());
    if (!rep.contains("txns") || !rep["txns"].is_number()) continue;
    const double per_client =
        rep["txns"].get<double>() / static_cast<double>(std::max<uint32_t>(cell.clients, 1));
    if (per_client < rs.min_txns_per_client) {
      std::string remedy = "; lengthen run.duration_s";
      if (cell.platform.kind == "sim" && rs.max_window_s <= 0)
        remedy = "; lengthen run.duration_s or let the simulator do it (run.max_window_s)";
      else if (cell.platform.kind == "sim" && rep.contains("window_lengthened")) {
        const double d = rep["window_lengthened"].value("duration_s", 0.0);
        remedy = d >= rs.max_window_s
                     ? absl::StrFormat(" even in a window lengthened to %g s (run.max_window_s)", d)
                     : absl::StrFormat(" even in a window lengthened to %g s (%d reruns, the most)",
                                       d, rep["window_lengthened"].value("steps", 0));
      } else if (cell.platform.kind == "sim" && rs.duration_s >= rs.max_window_s) {
        remedy = absl::StrFormat("; the window is already run.max_window_s = %g s or longer",
                                 rs.max_window_s);
      } else if (cell.platform.kind == "sim") {
        remedy = "; not lengthened: a traced cell keeps its window";
      }
      w.push_back(rep_prefix(r) + absl::StrFormat("%.1f transactions per client in the window "
                                                  "(under run.min_txns_per_client = %d): too few "
                                                  "to measure%s",
                                                  per_client, rs.min_txns_per_client, remedy));
    }
    const uint64_t idle = rep.value("clients_without_txn", uint64_t{0});
    if (idle > 0)
      w.push_back(rep_prefix(r) +
                  absl::StrFormat("%d of %d clients finished no transaction in the window", idle,
                                  cell.clients));
    // Memory storage: the streaming verifier fell behind and held the WAL writer (WALWriteLock
    // held) until it freed ring space; the run counts from its start, not the window's.
    const json streaming = rep.contains("verify") && rep["verify"].is_object()
                               ? rep["verify"].value("streaming", json::object())
                               : json::object();
    if (streaming.value("writer_waits", uint64_t{0}) > 0)
      w.push_back(rep_prefix(r) +
                  absl::StrFormat("the streaming verifier made the WAL writer wait %d times "
                                  "(%.1f ms, whole run) for ring space: the WAL throughput may be "
                                  "the verifier's; raise wal.memory_mb or give walbench a core "
                                  "more",
                                  streaming.value("writer_waits", uint64_t{0}),
                                  streaming.value("writer_wait_ms", 0.0)));
    // Progress intervals: the trend inside the window and the time to steady state.
    if (!rep.contains("progress") || !rep["progress"].is_array()) continue;
    // A repetition the simulator ran again with a longer window (run.max_window_s) has its
    // own warm-up, window and progress step.
    RunSpec ran = rs;
    if (rep.contains("window_lengthened") && rep["window_lengthened"].is_object()) {
      ran.warmup_s = rep["window_lengthened"].value("warmup_s", rs.warmup_s);
      ran.duration_s = rep["window_lengthened"].value("duration_s", rs.duration_s);
    }
    const double step = progress_step_s(ran);
    const double w0 = ran.warmup_s, w1 = ran.warmup_s + ran.duration_s;
    std::vector<std::pair<double, double>> inside, all;  // (interval end t, tps)
    for (const auto& p : rep["progress"]) {
      if (!p.contains("t") || !p["tps"].is_number()) continue;
      const double t = p["t"].get<double>(), tps = p["tps"].get<double>();
      all.emplace_back(t, tps);
      if (t - step >= w0 - step / 2 && t <= w1 + step / 2) inside.emplace_back(t, tps);
    }
    if (inside.size() >= 2) {
      const double first = inside.front().second, last = inside.back().second;
      const double mean = (first + last) / 2;
      if (mean > 0 && std::fabs(last - first) / mean * 100 > rs.trend_warn_pct)
        w.push_back(rep_prefix(r) +
                    absl::StrFormat("throughput drifts inside the window: first interval %.0f "
                                    "tps, last %.0f tps (%s, over run.trend_warn_pct = %g)",
                                    first, last,
                                    first > 0 ? absl::StrFormat("%+.0f%%", (last / first - 1) * 100)
                                              : std::string("from none"),
                                    rs.trend_warn_pct));
      std::vector<double> v;
      for (const auto& [t, tps] : inside) v.push_back(tps);
      const double m = median(v);
      double settled = -1;
      for (const auto& [t, tps] : all)
        if (m > 0 && std::fabs(tps - m) / m * 100 <= rs.trend_warn_pct) {
          settled = t - step;  // the start of the first interval within the band
          break;
        }
      if (settled < 0)
        w.push_back(rep_prefix(r) +
                    absl::StrFormat("throughput never came within %g%% of its window median in "
                                    "any progress interval: no steady state",
                                    rs.trend_warn_pct));
      else if (settled > w0 + step / 2)
        w.push_back(rep_prefix(r) +
                    absl::StrFormat("throughput reached its window median (within %g%%) only %.3g s "
                                    "after the start, past the warm-up of %g s: lengthen "
                                    "run.warmup_s",
                                    rs.trend_warn_pct, settled, w0));
    }
  }
  return w;
}

}  // namespace walbench

// pgbench's command line, scripts and output; see postgres_pgbench.h.
#include "harness/postgres_pgbench.h"

#include <cstdlib>
#include <sstream>

#include "absl/strings/str_format.h"
#include "harness/postgres_server.h"

namespace walbench {

std::string pgbench_script(const WorkloadSpec& w) {
  if (w.name == "simple_update" || w.name == "tpcb_like") return "";
  if (w.name != "emit_message")
    throw PostgresError("workload " + w.name +
                        " has no pgbench script yet on platform \"postgres\"; expected "
                        "emit_message, simple_update or tpcb_like");
  const char* transactional = w.transactional ? "true" : "false";
  switch (w.record_size.kind) {
    case SizeSpec::Kind::kFixed:
      return absl::StrFormat(
          "SELECT pg_logical_emit_message(%s, 'walbench', repeat('0', %d));\n", transactional,
          w.record_size.value);
    case SizeSpec::Kind::kUniform:
      return absl::StrFormat(
          "\\set n random(%d, %d)\n"
          "SELECT pg_logical_emit_message(%s, 'walbench', repeat('0', :n));\n",
          w.record_size.min, w.record_size.max, transactional);
    case SizeSpec::Kind::kExponential:
      break;
  }
  throw PostgresError("record size " + w.record_size.label() +
                      " has no pgbench equivalent yet (pgbench's random_exponential draws "
                      "another distribution); expected a fixed or uniform size");
}

std::vector<std::string> pgbench_init_args(const CellSpec& cell, const std::string& bindir,
                                           const std::string& host, int port) {
  std::vector<std::string> args = {bindir + "/pgbench", "-h", host, "-p", std::to_string(port),
                                   "-U", "walbench", "-i", "-q", "-s",
                                   std::to_string(cell.workload.scale)};
  if (cell.workload.unlogged_tables) args.push_back("--unlogged-tables");
  args.push_back("postgres");
  return args;
}

std::vector<std::string> pgbench_args(const CellSpec& cell, const std::string& bindir,
                                      const std::string& host, int port,
                                      const std::string& script_path, int seconds,
                                      int progress_s) {
  const std::string clients = std::to_string(cell.clients);
  std::vector<std::string> args = {bindir + "/pgbench", "-h", host, "-p", std::to_string(port),
                                   "-U", "walbench", "-c", clients, "-j", clients,
                                   "-T", std::to_string(seconds)};
  if (progress_s > 0) {
    args.push_back("-P");
    args.push_back(std::to_string(progress_s));
  }
  // No vacuum by pgbench: for the pgbench-table workloads walbench VACUUMs and TRUNCATEs itself
  // before the run (postgres_run.cc prepare_pgbench_tables), outside the WAL it counts.
  args.push_back("-n");
  if (cell.workload.name == "simple_update") {
    args.push_back("-N");
  } else if (cell.workload.name == "tpcb_like") {
    args.push_back("-b");
    args.push_back("tpcb-like");
  } else {
    args.push_back("-f");
    args.push_back(script_path);
  }
  args.push_back("postgres");
  return args;
}

namespace {

// The text after `prefix` on the first line that starts with it (false: no such line).
bool value_after(const std::string& text, const std::string& prefix, std::string& out) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) {
      out = line.substr(prefix.size());
      return true;
    }
  return false;
}

std::string first_error_line(const std::string& text) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.find("error") != std::string::npos || line.find("FATAL") != std::string::npos)
      return line;
  return "";
}

}  // namespace

PgbenchResult parse_pgbench_output(const std::string& out, const std::string& err) {
  PgbenchResult r;
  auto need = [&](const std::string& prefix) {
    std::string v;
    if (!value_after(out, prefix, v)) {
      const std::string why = first_error_line(err + "\n" + out);
      throw PostgresError("pgbench printed no \"" + prefix + "\" line" +
                          (why.empty() ? std::string() : ": " + why));
    }
    return v;
  };
  r.clients = std::strtoull(need("number of clients: ").c_str(), nullptr, 10);
  r.transactions = std::strtoull(need("number of transactions actually processed: ").c_str(),
                                 nullptr, 10);
  std::string failed;
  if (value_after(out, "number of failed transactions: ", failed))
    r.failed = std::strtoull(failed.c_str(), nullptr, 10);
  r.latency_ms = std::strtod(need("latency average = ").c_str(), nullptr);
  std::string stddev;
  if (value_after(out, "latency stddev = ", stddev)) r.latency_stddev_ms = std::strtod(stddev.c_str(), nullptr);
  std::string conn;
  if (value_after(out, "initial connection time = ", conn))
    r.initial_connection_ms = std::strtod(conn.c_str(), nullptr);
  r.tps = std::strtod(need("tps = ").c_str(), nullptr);

  // "progress: 1.0 s, 247.0 tps, lat 8.045 ms stddev 4.784, 0 failed"
  std::istringstream in(err);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("progress: ", 0) != 0) continue;
    PgbenchResult::Progress p;
    unsigned long long failed_n = 0;
    const int n = std::sscanf(line.c_str(), "progress: %lf s, %lf tps, lat %lf ms stddev %lf, %llu failed",
                              &p.at_s, &p.tps, &p.latency_ms, &p.latency_stddev_ms, &failed_n);
    if (n < 4) throw PostgresError("cannot read pgbench's progress line \"" + line + "\"");
    p.failed = failed_n;
    r.progress.push_back(p);
  }
  return r;
}

}  // namespace walbench

// The cells of platform "postgres": server, pgbench, libpq observation; see postgres_run.h.
#include "harness/postgres_run.h"

#include <fcntl.h>
#include <libpq-fe.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "harness/interrupt.h"
#include "harness/measure.h"
#include "harness/postgres_config.h"
#include "harness/postgres_pgbench.h"
#include "harness/postgres_server.h"

namespace walbench {

namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

double now_epoch_s() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// The sampler's period: the threads platform's (threads_monitor.cc).
constexpr double kSamplePeriodS = 0.010;
// pgbench runs this much past the window's end at least (its -T is whole seconds and starts
// when pgbench does, after walbench's clock): a loaded machine must not end it first.
constexpr double kPgbenchTailS = 0.5;
// How long `pgbench -i -s SCALE` may take: a base plus this much per unit of scale (100,000
// accounts, about 15 MB).
constexpr double kInitTimeoutS = 120, kInitTimeoutPerScaleS = 10;

// One libpq connection; every call throws PostgresError with the server's message.
class PgConnection {
 public:
  // `conninfo` in either form (key=value or a URI); no query waits more than a minute.
  explicit PgConnection(const std::string& conninfo) {
    const char* const keywords[] = {"dbname", "connect_timeout", "application_name", "options",
                                    nullptr};
    const char* const values[] = {conninfo.c_str(), "10", "walbench",
                                  "-c statement_timeout=60s", nullptr};
    conn_ = PQconnectdbParams(keywords, values, /*expand_dbname=*/1);
    if (PQstatus(conn_) != CONNECTION_OK) {
      const std::string why = one_line(PQerrorMessage(conn_));
      PQfinish(conn_);
      conn_ = nullptr;
      throw PostgresError("cannot connect to the server (" + dsn_without_password(conninfo) +
                          "): " + why);
    }
    PQsetNoticeProcessor(conn_, [](void*, const char*) {}, nullptr);  // "does not exist, skipping"
  }
  ~PgConnection() {
    if (conn_ != nullptr) PQfinish(conn_);
  }
  PgConnection(const PgConnection&) = delete;
  PgConnection& operator=(const PgConnection&) = delete;

  // Every row of a query, each as its columns' texts ("" for NULL).
  std::vector<std::vector<std::string>> rows(const std::string& sql) {
    PGresult* res = PQexec(conn_, sql.c_str());
    const ExecStatusType st = PQresultStatus(res);
    if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
      const std::string why = one_line(PQresultErrorMessage(res));
      PQclear(res);
      throw PostgresError("query \"" + sql + "\" failed: " + why);
    }
    std::vector<std::vector<std::string>> out;
    for (int r = 0; r < PQntuples(res); ++r) {
      std::vector<std::string> row;
      for (int c = 0; c < PQnfields(res); ++c)
        row.push_back(PQgetisnull(res, r, c) ? "" : PQgetvalue(res, r, c));
      out.push_back(std::move(row));
    }
    PQclear(res);
    return out;
  }
  std::string value(const std::string& sql) {
    const auto r = rows(sql);
    if (r.empty() || r.front().empty()) throw PostgresError("query \"" + sql + "\" returned no row");
    return r.front().front();
  }

  static std::string one_line(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    std::replace(s.begin(), s.end(), '\n', ' ');
    return s;
  }

 private:
  PGconn* conn_ = nullptr;
};

// The WAL counters of pg_stat_wal (cluster-wide), as walbench's model names them.
struct WalStats {
  double records = 0, full_page_images = 0, bytes = 0, buffers_full = 0, writes = 0, syncs = 0;
};
WalStats read_wal_stats(PgConnection& c) {
  const auto r = c.rows(
      "SELECT wal_records, wal_fpi, wal_bytes, wal_buffers_full, wal_write, wal_sync "
      "FROM pg_stat_wal");
  if (r.size() != 1 || r[0].size() != 6) throw PostgresError("pg_stat_wal returned no row");
  auto num = [&](int i) { return std::strtod(r[0][static_cast<size_t>(i)].c_str(), nullptr); };
  return {num(0), num(1), num(2), num(3), num(4), num(5)};
}

// pg_current_wal_insert_lsn() in bytes.
uint64_t insert_lsn(PgConnection& c) {
  return std::strtoull(c.value("SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn").c_str(),
                       nullptr, 10);
}

// A private temporary directory of walbench's own (pgbench's script and logs); removed with it.
struct TempDirectory {
  std::string path;
  TempDirectory() {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") +
                        "/walbench-pgbench-XXXXXX";
    if (::mkdtemp(templ.data()) == nullptr)
      throw PostgresError("cannot create a temporary directory: " + std::string(std::strerror(errno)));
    path = templ;
  }
  ~TempDirectory() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  TempDirectory(const TempDirectory&) = delete;
  TempDirectory& operator=(const TempDirectory&) = delete;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A pgbench process: its own session (a terminal's Ctrl-C reaches walbench only, which stops
// it), stdout to a file, stderr through a pipe the monitor reads.
class PgbenchProcess {
 public:
  // `env`: NAME=value entries that replace or add to walbench's environment in pgbench's.
  PgbenchProcess(const std::vector<std::string>& argv, const std::string& stdout_path,
                 const std::vector<std::string>& env = {}) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
      throw PostgresError("cannot create a pipe for pgbench: " + std::string(std::strerror(errno)));
    const int out = ::open(stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0) {
      ::close(fds[0]);
      ::close(fds[1]);
      throw PostgresError("cannot open " + stdout_path + ": " + std::strerror(errno));
    }
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    std::vector<char*> envp;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string entry = *e;
      const std::string name = entry.substr(0, entry.find('='));
      if (std::none_of(env.begin(), env.end(),
                       [&](const std::string& x) { return x.rfind(name + "=", 0) == 0; }))
        envp.push_back(*e);
    }
    for (const auto& x : env) envp.push_back(const_cast<char*>(x.c_str()));
    envp.push_back(nullptr);
    const std::string exec_failed = "walbench: cannot run " + argv[0] + "\n";
    pid_ = ::fork();
    if (pid_ < 0) {
      ::close(fds[0]);
      ::close(fds[1]);
      ::close(out);
      throw PostgresError("cannot fork to run pgbench: " + std::string(std::strerror(errno)));
    }
    if (pid_ == 0) {  // only async-signal-safe calls until exec
      ::setsid();
      const int devnull = ::open("/dev/null", O_RDONLY);
      if (devnull >= 0) ::dup2(devnull, 0);
      ::dup2(out, 1);
      ::dup2(fds[1], 2);
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      ::signal(SIGINT, SIG_DFL);
      ::signal(SIGTERM, SIG_DFL);
      ::execve(args[0], args.data(), envp.data());
      (void)!::write(2, exec_failed.data(), exec_failed.size());
      ::_exit(127);
    }
    ::close(out);
    ::close(fds[1]);
    err_fd_ = fds[0];
  }
  ~PgbenchProcess() {
    if (pid_ > 0) {
      kill_and_wait();
    }
    if (err_fd_ >= 0) ::close(err_fd_);
  }
  PgbenchProcess(const PgbenchProcess&) = delete;
  PgbenchProcess& operator=(const PgbenchProcess&) = delete;

  // Waits up to `timeout_s` for stderr output; appends what came to `text`. false: EOF.
  bool read_stderr(double timeout_s, std::string& text) {
    if (err_fd_ < 0) return false;
    pollfd p{err_fd_, POLLIN, 0};
    const int ms = std::max(0, static_cast<int>(std::ceil(timeout_s * 1000)));
    const int n = ::poll(&p, 1, ms);
    if (n <= 0) return true;  // timeout or EINTR
    char buf[4096];
    const ssize_t got = ::read(err_fd_, buf, sizeof buf);
    if (got > 0) {
      text.append(buf, static_cast<size_t>(got));
      return true;
    }
    if (got < 0 && errno == EINTR) return true;
    ::close(err_fd_);
    err_fd_ = -1;
    return false;
  }
  // The exit status once it exited (128 + signal when killed); nullopt while it runs.
  std::optional<int> poll_exit() {
    if (pid_ <= 0) return status_;
    int st = 0;
    const pid_t r = ::waitpid(pid_, &st, WNOHANG);
    if (r == pid_) {
      pid_ = 0;
      status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    return status_;
  }
  void kill_and_wait() {
    if (pid_ <= 0) return;  // NB: -pid_ with pid_ <= 0 would signal walbench's own group
    ::kill(-pid_, SIGINT);  // its session's process group: pgbench and nothing else
    for (int i = 0; i < 200 && !poll_exit(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (pid_ > 0) {
      ::kill(-pid_, SIGKILL);
      int st = 0;
      while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
      }
      pid_ = 0;
      status_ = 128 + SIGKILL;
    }
  }

 private:
  pid_t pid_ = 0;
  int err_fd_ = -1;
  std::optional<int> status_;
};

std::string last_lines(const std::string& text, size_t n = 2) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) lines.push_back(l);
  const size_t from = lines.size() > n ? lines.size() - n : 0;
  return absl::StrJoin(lines.begin() + static_cast<long>(from), lines.end(), " | ");
}

// Runs a program to completion (pgbench -i): its output, and its exit status in `rc`. Killed,
// with a PostgresError naming it, past `timeout_s` or on SIGINT/SIGTERM (harness/interrupt.h).
std::string run_to_completion(const std::vector<std::string>& argv, const std::string& dir,
                              double timeout_s, int& rc) {
  const std::string out_path = dir + "/init.out";
  const std::string program = fs::path(argv[0]).filename().string();
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  PgbenchProcess p(argv, out_path);
  std::string err;
  std::optional<int> st;
  for (bool open_pipe = true; !(st = p.poll_exit());) {
    if (interrupt_signal() != 0) {
      p.kill_and_wait();
      throw PostgresError(program + " stopped: " + interrupted_error(interrupt_signal()));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      p.kill_and_wait();
      throw PostgresError(absl::StrFormat("%s did not finish within %g s; killed it: %s",
                                          program, timeout_s,
                                          last_lines(slurp(out_path) + err, 3)));
    }
    if (open_pipe) open_pipe = p.read_stderr(0.1, err);
    else std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  while (p.read_stderr(0, err)) {
  }
  rc = *st;
  return slurp(out_path) + err;
}

}  // namespace

std::optional<PgbenchLogEntry> parse_pgbench_log_line(const std::string& line) {
  std::istringstream in(line);
  long long client = -1, txn = 0, script = 0, sec = 0, usec = 0;
  std::string latency;
  if (!(in >> client >> txn >> latency >> script >> sec >> usec) || client < 0) return std::nullopt;
  PgbenchLogEntry e;
  e.client = static_cast<uint32_t>(client);
  char* end = nullptr;
  e.latency_us = std::strtod(latency.c_str(), &end);
  if (end == latency.c_str() || *end != '\0') {
    if (latency != "failed" && latency != "skipped" && latency != "serialization" &&
        latency != "deadlock")
      return std::nullopt;
    e.failed = true;
    e.latency_us = 0;
  }
  e.end_s = static_cast<double>(sec) + static_cast<double>(usec) * 1e-6;
  return e;
}

LogWindow log_window(const std::vector<PgbenchLogEntry>& log, double open_s, double close_s,
                     RunControl& ctl) {
  LogWindow w;
  w.txns_per_client.assign(ctl.counters.size(), 0);
  for (const auto& e : log) {
    if (!e.failed) ++w.run_txns;
    if (e.end_s < open_s || e.end_s > close_s || e.client >= ctl.counters.size()) continue;
    if (e.failed) {
      ++w.failed;
      continue;
    }
    ++w.txns_per_client[e.client];
    ctl.counters[e.client].record_latency(static_cast<uint64_t>(std::llround(e.latency_us * 1000)));
  }
  return w;
}

nlohmann::ordered_json log_progress(const std::vector<PgbenchLogEntry>& log, double start_s,
                                    double end_s, double interval_s) {
  ojson points = ojson::array();
  if (interval_s <= 0 || end_s <= start_s) return points;
  const size_t n = static_cast<size_t>(std::floor((end_s - start_s) / interval_s + 1e-9));
  std::vector<double> count(n, 0), sum(n, 0), sumsq(n, 0);
  for (const auto& e : log) {
    if (e.failed || e.end_s < start_s) continue;
    const size_t k = static_cast<size_t>((e.end_s - start_s) / interval_s);
    if (k >= n) continue;
    const double ms = e.latency_us / 1000.0;
    count[k] += 1;
    sum[k] += ms;
    sumsq[k] += ms * ms;
  }
  for (size_t k = 0; k < n; ++k) {
    ojson p;
    p["t"] = std::round(static_cast<double>(k + 1) * interval_s * 1000.0) / 1000.0;
    p["tps"] = count[k] / interval_s;
    if (count[k] == 0) {
      p["lat_ms"] = nullptr;
      p["stddev_ms"] = nullptr;
    } else {
      const double mean = sum[k] / count[k];
      p["lat_ms"] = mean;
      p["stddev_ms"] = std::sqrt(std::max(0.0, sumsq[k] / count[k] - mean * mean));
    }
    points.push_back(std::move(p));
  }
  return points;
}

std::string model_wait_event_name(const std::string& type, const std::string& event) {
  if (type.empty() && event.empty()) return "CPU";
  const std::string name = type + ":" + event;
  // PostgreSQL 13+ names -> the model's (PostgreSQL 10-12's, core/proc.h).
  static const std::map<std::string, std::string> renamed = {
      {"LWLock:WALInsert", "LWLock:wal_insert"},
      {"LWLock:XactSLRU", "LWLock:CLogControlLock"},
      {"LWLock:XactBuffer", "LWLock:clog"},
      {"LWLock:XidGen", "LWLock:XidGenLock"},
      {"LWLock:ProcArray", "LWLock:ProcArrayLock"},
      {"IPC:XactGroupUpdate", "IPC:ClogGroupUpdate"},
  };
  const auto it = renamed.find(name);
  return it == renamed.end() ? name : it->second;
}

// ---- The server of a run ----

struct PostgresRuns::Server {
  std::string key;        // what the server was started for (see server_for)
  std::string conninfo;   // libpq conninfo of database postgres
  std::string host;       // pgbench -h (socket directory or host)
  int port = 0;
  std::string bindir;     // pgbench's
  bool own_cluster = false;
  std::unique_ptr<PostgresServer> cluster;
  std::unique_ptr<PgConnection> observer;  // walbench's connection
  ojson about;                             // version, build, settings
  // pgbench -i done with this scale and table kind (one at a time; -1: not yet).
  int64_t initialised_scale = -1;
  bool initialised_unlogged = false;
  bool created_tables = false;               // on a dsn server: pgbench's tables are walbench's
};

PostgresRuns::PostgresRuns() = default;

PostgresRuns::~PostgresRuns() {
  try {
    finish();
  } catch (const std::exception& e) {
    std::cerr << "walbench: " << e.what() << "\n";
  }
}

void PostgresRuns::finish() {
  if (!server_) return;
  std::unique_ptr<Server> s = std::move(server_);
  std::string problem;
  if (!s->own_cluster && s->created_tables) {
    try {
      s->observer->rows(
          "DROP TABLE IF EXISTS pgbench_accounts, pgbench_branches, pgbench_history, "
          "pgbench_tellers");
    } catch (const std::exception& e) {
      problem = std::string("cannot drop pgbench's tables that walbench created: ") + e.what();
    }
  }
  s->observer.reset();
  if (s->cluster) s->cluster->stop();  // throws when it leaves something
  if (!problem.empty()) throw PostgresError(problem);
}

PostgresRuns::Server& PostgresRuns::server_for(const CellSpec& cell, std::ostream& err, bool quiet) {
  const PostgresSpec& spec = cell.platform.postgres;
  const std::string bindir = resolve_bindir(spec);
  std::string key = "bindir=" + bindir + "\ndsn=" + spec.dsn + "\n";
  if (spec.dsn.empty()) {
    key += absl::StrFormat("segsize=%d\nwal_dir=%s\n", wal_segsize_mb(cell), spec.wal_dir);
    for (const auto& [name, value] : server_settings(cell)) key += name + "=" + value + "\n";
  }
  if (server_ && server_->key == key) return *server_;
  if (key == failed_key_)  // no second wait for a server that did not come up
    throw PostgresError(failed_error_ + " (for an earlier cell; not tried again)");
  finish();  // another server: stop the old one first
  try {
    return start_server(cell, key, bindir, err, quiet);
  } catch (const std::exception& e) {
    failed_key_ = key;
    failed_error_ = e.what();
    throw;
  }
}

namespace {

// `pgbench --version`'s line ("pgbench (PostgreSQL) 15.x"): the client may differ from the server.
std::string pgbench_version(const std::string& bindir) {
  TempDirectory dir;
  int rc = 0;
  const std::string out = run_to_completion({bindir + "/pgbench", "--version"}, dir.path, 30, rc);
  if (rc != 0) throw PostgresError("pgbench --version failed (exit " + std::to_string(rc) + "): " + last_lines(out));
  return last_lines(out, 1);
}

}  // namespace

PostgresRuns::Server& PostgresRuns::start_server(const CellSpec& cell, const std::string& key,
                                                 const std::string& bindir, std::ostream& err,
                                                 bool quiet) {
  const PostgresSpec& spec = cell.platform.postgres;

  auto s = std::make_unique<Server>();
  s->key = key;
  s->bindir = bindir;
  if (spec.dsn.empty()) {
    check_server_binaries(bindir, !spec.bindir.empty());
    ServerOptions o;
    o.bindir = bindir;
    o.settings = server_settings(cell);
    o.wal_segsize_mb = wal_segsize_mb(cell);
    o.wal_dir = spec.wal_dir;
    o.start_timeout_s = 60;
    s->cluster = std::make_unique<PostgresServer>(o);
    s->own_cluster = true;
    s->conninfo = s->cluster->conninfo();
    s->host = s->cluster->root_dir();
    s->port = s->cluster->port();
    if (!quiet)
      err << absl::StrFormat("walbench: started PostgreSQL (%s) as user %s on port %d in %s\n",
                             bindir, s->cluster->os_user().name, s->port, s->host);
  } else {
    if (::access((bindir + "/pgbench").c_str(), X_OK) != 0)
      throw PostgresError("no pgbench in " + bindir +
                          ": install PostgreSQL's client programs (scripts/setup.sh "
                          "--with-postgres) or give platform.bindir");
    s->conninfo = spec.dsn;
  }
  // Until it is server_, an exception here destroys s: the observer, then the cluster (stopped).
  Server& sv = *s;
  sv.observer = std::make_unique<PgConnection>(sv.conninfo);
  ojson about;
  about["version"] = sv.observer->value("SELECT version()");
  about["server_version_num"] = std::stoi(sv.observer->value("SHOW server_version_num"));
  for (const auto& [field, name] : {std::pair{"configure", "CONFIGURE"}, std::pair{"cc", "CC"},
                                    std::pair{"cflags", "CFLAGS"}}) {
    try {
      about[field] = sv.observer->value(
          std::string("SELECT setting FROM pg_config WHERE name = '") + name + "'");
    } catch (const PostgresError&) {
      about[field] = nullptr;  // pg_config is for superusers only
    }
  }
  about["bindir"] = bindir;
  about["pgbench_version"] = pgbench_version(bindir);
  about["cluster"] = sv.own_cluster ? "throwaway" : "dsn";
  if (sv.own_cluster) about["os_user"] = sv.cluster->os_user().name;
  ojson settings = ojson::object();
  for (const auto& row : sv.observer->rows(
           "SELECT name, setting, coalesce(unit, '') FROM pg_settings WHERE name IN "
           "('wal_buffers', 'fsync', 'synchronous_commit', 'wal_writer_delay', "
           "'wal_writer_flush_after', 'shared_buffers', 'max_connections', 'wal_segment_size', "
           "'full_page_writes', 'checkpoint_timeout', 'max_wal_size', 'wal_level', "
           "'wal_sync_method', 'commit_delay', 'huge_pages', 'block_size', 'wal_block_size') "
           "ORDER BY name"))
    settings[row[0]] = row[2].empty() ? row[1] : row[1] + " " + row[2];
  about["settings"] = std::move(settings);
  sv.about = std::move(about);
  server_ = std::move(s);  // from here on finish() cleans up
  return *server_;
}

namespace {

// pgbench's argv against the run's server: pgbench_args() for a throwaway cluster; for a dsn
// server without -h/-p/-U, the dsn in place of the database (pgbench expands a conninfo there).
std::vector<std::string> connection_fixed(std::vector<std::string> args, bool own_cluster,
                                          const std::string& dsn,
                                          const std::string& application_name = "") {
  if (own_cluster) return args;
  std::vector<std::string> out = {args[0]};
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "-h" || args[i] == "-p" || args[i] == "-U") {
      ++i;
      continue;
    }
    if (i + 1 == args.size()) continue;  // the database, last
    out.push_back(args[i]);
  }
  if (application_name.empty()) {
    out.push_back(dsn);
  } else {  // a dsn's own application_name would beat PGAPPNAME
    const auto fixed = rebuilt_conninfo(dsn, {{"application_name", application_name}}, true);
    if (!fixed) throw PostgresError("platform.dsn: libpq cannot parse it; expected a conninfo string or URI");
    out.push_back(*fixed);
  }
  return out;
}

// pgbench's command line as walbench records and prints it: no password.
std::string recorded_command(const std::vector<std::string>& args, bool own_cluster) {
  std::vector<std::string> shown = args;
  if (!own_cluster && !shown.empty()) shown.back() = dsn_without_password(shown.back());
  return absl::StrJoin(shown, " ");
}

// A string literal for SQL (standard_conforming_strings).
std::string sql_literal(const std::string& v) {
  std::string out = "'";
  for (char c : v) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// How many client backends run under `application_name` (pgbench's, unique to one run).
int backends_named(PgConnection& observer, const std::string& application_name) {
  return std::stoi(observer.value(
      "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND "
      "application_name = " + sql_literal(application_name)));
}

// pgbench's backends report their WAL counters to pg_stat_wal as they exit, which is after
// pgbench itself exited: wait (up to 5 s) until none is left. false: some were still there.
bool wait_for_pgbench_backends_to_exit(PgConnection& observer, const std::string& application_name) {
  for (int i = 0; i < 500; ++i) {
    if (backends_named(observer, application_name) == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// pgbench -n does not vacuum: what pgbench would do before a built-in script (its runInitSteps
// "v" less the analyze, and the truncate of pgbench_history), done before walbench reads the
// starting WAL position, so that none of it is counted.
void prepare_pgbench_tables(PgConnection& observer) {
  for (const char* sql : {"VACUUM pgbench_branches", "VACUUM pgbench_tellers",
                          "TRUNCATE pgbench_history"})
    observer.rows(sql);
}

// pgbench's application_name: unique to this process and repetition, so that neither a dsn's
// own application_name nor another pgbench on a shared server is counted as walbench's.
std::string next_application_name() {
  static std::atomic<uint64_t> runs{0};
  return absl::StrFormat("walbench-%d-%d", ::getpid(), ++runs);
}

// Every transaction of pgbench's per-thread logs (DIR/log.PID, DIR/log.PID.1, ...).
std::vector<PgbenchLogEntry> read_pgbench_logs(const std::string& dir) {
  std::vector<PgbenchLogEntry> log;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("log.", 0) != 0) continue;
    std::ifstream in(entry.path());
    size_t lineno = 0;
    for (std::string line; std::getline(in, line);) {
      ++lineno;
      const auto e = parse_pgbench_log_line(line);
      if (!e)
        throw PostgresError(absl::StrFormat(
            "pgbench's log %s line %d is not a transaction: \"%s\"", name, lineno, line));
      log.push_back(*e);
    }
  }
  return log;
}

}  // namespace

RepResult PostgresRuns::run_repetition(const CellSpec& cell, uint64_t seed, bool quiet,
                                       std::ostream& err) {
  RepResult res;
  res.json["seed"] = seed;
  auto finalize = [&](const std::string& error) {
    if (!error.empty() && res.ok) {
      res.ok = false;
      res.error = error;
    }
    res.json["ok"] = res.ok;
    res.json["error"] = res.ok ? ojson(nullptr) : ojson(res.error);
    return res;
  };
  auto null_numbers = [&] {
    for (const char* k : {"tps", "bytes_per_s", "txns", "elapsed_s", "clients_without_txn",
                          "latency_ms"})
      res.json[k] = nullptr;
  };

  Server* sv = nullptr;
  std::string script;
  try {
    script = pgbench_script(cell.workload);
    sv = &server_for(cell, err, quiet);
  } catch (const std::exception& e) {
    return finalize(std::string("server: ") + e.what());
  }
  const bool pgbench_tables = cell.workload.name != "emit_message";
  const RunSpec& rs = cell.run;
  const int seconds = static_cast<int>(std::ceil(rs.warmup_s + rs.duration_s + kPgbenchTailS));
  const bool live_progress = !quiet && rs.progress_interval_s > 0;
  const int progress_s = live_progress ? std::max(1, static_cast<int>(std::lround(rs.progress_interval_s))) : 0;

  try {
    TempDirectory dir;
    if (pgbench_tables && (sv->initialised_scale != static_cast<int64_t>(cell.workload.scale) ||
                           sv->initialised_unlogged != cell.workload.unlogged_tables)) {
      if (!sv->own_cluster && !sv->created_tables &&
          sv->observer->value("SELECT to_regclass('pgbench_branches') IS NOT NULL") == "t")
        throw PostgresError(
            "the dsn server has pgbench's tables already, and pgbench -i would drop them: drop "
            "them yourself (walbench creates and drops only its own) or run a throwaway "
            "cluster (no platform.dsn)");
      std::vector<std::string> init =
          connection_fixed(pgbench_init_args(cell, sv->bindir, sv->host, sv->port),
                           sv->own_cluster, cell.platform.postgres.dsn);
      sv->created_tables = true;
      int rc = 0;
      const std::string out =
          run_to_completion(init, dir.path, kInitTimeoutS + kInitTimeoutPerScaleS * cell.workload.scale, rc);
      if (rc != 0) throw PostgresError("pgbench -i failed (exit " + std::to_string(rc) + "): " + last_lines(out));
      sv->initialised_scale = cell.workload.scale;
      sv->initialised_unlogged = cell.workload.unlogged_tables;
    }
    std::string script_path;
    if (!script.empty()) {
      script_path = dir.path + "/workload.sql";
      std::ofstream(script_path) << script;
    }
    const std::string application_name = next_application_name();
    std::vector<std::string> args =
        pgbench_args(cell, sv->bindir, sv->host, sv->port, script_path, seconds, progress_s);
    args.insert(args.end() - 1, {"-l", "--log-prefix=" + dir.path + "/log"});
    args = connection_fixed(std::move(args), sv->own_cluster, cell.platform.postgres.dsn,
                            application_name);
    std::vector<std::string> warnings;

    RunControl ctl(cell.clients);
    if (pgbench_tables) prepare_pgbench_tables(*sv->observer);
    const WalStats wal0 = read_wal_stats(*sv->observer);
    const double t_fork = now_epoch_s();
    PgbenchProcess pgbench(args, dir.path + "/pgbench.out", {"PGAPPNAME=" + application_name});
    // The clock starts when pgbench's clients do: when all of them are connected (seen in
    // pg_stat_activity under its application name), which is when pgbench lets them run.
    double t_start = 0, open_at = 0, close_at = 0;
    bool started = false;
    const double overrun_s = std::max(30.0, rs.watchdog_s);
    double t_open = 0, t_close = 0, next_sample = 0;
    uint64_t lsn_open = 0, lsn_close = 0;
    bool opened = false, closed = false;
    std::map<std::string, uint64_t> waits;
    std::string err_text;
    size_t relayed = 0;  // err_text up to here is relayed
    std::string error;
    const std::string activity =
        "SELECT coalesce(wait_event_type, ''), coalesce(wait_event, '') FROM "
        "pg_stat_activity WHERE backend_type = 'client backend' AND application_name = " +
        sql_literal(application_name) + " AND pid <> pg_backend_pid()";
    for (;;) {
      double now = now_epoch_s();
      if (!started && backends_named(*sv->observer, application_name) >= static_cast<int>(cell.clients)) {
        now = now_epoch_s();
        t_start = now;
        open_at = t_start + rs.warmup_s;
        close_at = open_at + rs.duration_s;
        next_sample = open_at;
        started = true;
      }
      if (started && !opened && now >= open_at) {
        lsn_open = insert_lsn(*sv->observer);
        t_open = now_epoch_s();
        opened = true;
      }
      if (opened && !closed && now >= close_at) {
        lsn_close = insert_lsn(*sv->observer);
        t_close = now_epoch_s();
        closed = true;
      }
      if (opened && !closed && now >= next_sample) {
        for (const auto& row : sv->observer->rows(activity))
          ++waits[model_wait_event_name(row[0], row[1])];
        next_sample += kSamplePeriodS;
        if (next_sample < now) next_sample = now + kSamplePeriodS;
      }
      if (interrupt_signal() != 0) {
        pgbench.kill_and_wait();
        return finalize(interrupted_error(interrupt_signal()));
      }
      if (now > (started ? t_start : t_fork) + seconds + overrun_s) {
        pgbench.kill_and_wait();
        error = absl::StrFormat("pgbench ran %.0f s past its -T %d s; killed it", overrun_s, seconds);
        break;
      }
      double wait = 0.1;
      if (!started) wait = 0.005;
      else if (!opened) wait = std::min(wait, open_at - now);
      else if (!closed) wait = std::min({wait, close_at - now, next_sample - now});
      const bool open_pipe = pgbench.read_stderr(std::max(0.0, wait), err_text);
      // Relay whole progress lines as walbench's.
      for (size_t nl; (nl = err_text.find('\n', relayed)) != std::string::npos; relayed = nl + 1) {
        const std::string line = err_text.substr(relayed, nl - relayed);
        if (!live_progress || line.rfind("progress: ", 0) != 0) continue;
        double at_s = 0, tps = 0, lat_ms = 0, stddev_ms = 0;
        if (std::sscanf(line.c_str(), "progress: %lf s, %lf tps, lat %lf ms stddev %lf", &at_s,
                        &tps, &lat_ms, &stddev_ms) == 4) {
          err << format_progress_line(at_s, tps, lat_ms, stddev_ms) << " (pgbench)\n";
          err.flush();
        }
      }
      if (!open_pipe && pgbench.poll_exit()) break;
      if (!open_pipe) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    const int rc = *pgbench.poll_exit();
    const std::string out_text = slurp(dir.path + "/pgbench.out");
    if (error.empty() && rc != 0)
      error = "pgbench failed (exit " + std::to_string(rc) + "): " + last_lines(err_text + "\n" + out_text);
    if (error.empty() && !started)
      error = absl::StrFormat("pgbench ended %.2f s after walbench started it, before all of its "
                              "%d clients were connected",
                              now_epoch_s() - t_fork, cell.clients);
    if (error.empty() && !closed)
      error = absl::StrFormat("pgbench ended %.2f s after its clients started, before the timed "
                              "window closed",
                              now_epoch_s() - t_start);
    PgbenchResult summary;
    if (error.empty()) {
      try {
        summary = parse_pgbench_output(out_text, err_text);
      } catch (const std::exception& e) {
        error = e.what();
      }
    }
    if (!wait_for_pgbench_backends_to_exit(*sv->observer, application_name))
      warnings.push_back(
          "pgbench's backends had not all exited 5 s after pgbench did: pg_stat_wal may miss the "
          "last backends' counters");
    const WalStats wal1 = read_wal_stats(*sv->observer);
    const std::vector<PgbenchLogEntry> log = read_pgbench_logs(dir.path);

    if (!error.empty()) {
      null_numbers();
      res.json["progress"] = log_progress(log, started ? t_start : t_fork, now_epoch_s(),
                                          rs.progress_interval_s);
      res.json["warnings"] = warnings;
      res.json["server"] = sv->about;
      return finalize(error);
    }
    const LogWindow w = log_window(log, t_open, t_close, ctl);
    uint64_t txns = 0, idle = 0;
    for (uint64_t t : w.txns_per_client) {
      txns += t;
      if (t == 0) ++idle;
    }
    record_window_numbers(res, txns, lsn_close - lsn_open, t_close - t_open, idle,
                          summarize_latency(ctl.counters));
    res.json["progress"] = log_progress(log, t_start, t_start + seconds, rs.progress_interval_s);
    ojson wait_json = ojson::object();
    for (const auto& [name, n] : waits) wait_json[name] = n;
    res.json["wait_events"] = std::move(wait_json);
    res.json["window"] = {{"txns", txns}, {"wal_bytes", lsn_close - lsn_open}, {"failed", w.failed}};
    res.json["lock_stats"] = nullptr;  // the server's locks are not measured
    // pg_stat_wal is cluster-wide and counts the whole pgbench run, warm-up and tail included:
    // its per-transaction figures divide by the run's transactions, not the window's.
    const WalStats d = {wal1.records - wal0.records,   wal1.full_page_images - wal0.full_page_images,
                        wal1.bytes - wal0.bytes,       wal1.buffers_full - wal0.buffers_full,
                        wal1.writes - wal0.writes,     wal1.syncs - wal0.syncs};
    res.json["pg_stat_wal"] = {{"spans", "whole pgbench run, cluster-wide"},
                               {"txns", w.run_txns},
                               {"records", d.records},
                               {"full_page_images", d.full_page_images},
                               {"wal_bytes", d.bytes},
                               {"wal_buffers_full", d.buffers_full},
                               {"writes", d.writes},
                               {"fsyncs", d.syncs}};
    nlohmann::json per_txn = nullptr;
    if (txns > 0) {
      const double run_n = static_cast<double>(std::max<uint64_t>(w.run_txns, 1));
      nlohmann::json stat_wal = {{"spans", "whole pgbench run, cluster-wide"},
                                 {"wal_bytes", d.bytes / run_n},
                                 {"records", d.records / run_n},
                                 {"full_page_images", d.full_page_images / run_n},
                                 {"writes", d.writes / run_n},
                                 {"fsyncs", d.syncs / run_n},
                                 {"wal_buffers_full", d.buffers_full / run_n}};
      if (w.run_txns == 0) stat_wal = nullptr;
      // The window's: reserved (aligned) bytes between the window's insert positions.
      per_txn = {{"wal_bytes", static_cast<double>(lsn_close - lsn_open) / static_cast<double>(txns)},
                 {"locks", nullptr},
                 {"pg_stat_wal", std::move(stat_wal)}};
    }
    res.numbers.per_txn = per_txn;
    res.json["per_txn"] = ojson(per_txn);
    res.json["warnings"] = warnings;
    res.json["verify"] = nullptr;
    res.verify_text = "skipped";
    res.json["pgbench"] = {{"command", recorded_command(args, sv->own_cluster)},
                           {"tps", summary.tps},
                           {"transactions", summary.transactions},
                           {"failed", summary.failed},
                           {"latency_ms", summary.latency_ms},
                           {"initial_connection_ms", summary.initial_connection_ms}};
    res.json["server"] = sv->about;
    if (txns == 0 && w.failed > 0)
      return finalize(absl::StrFormat("every transaction in the window failed (%d)", w.failed));
    return finalize("");
  } catch (const std::exception& e) {
    if (!res.json.contains("tps")) null_numbers();
    return finalize(e.what());
  }
}

}  // namespace walbench

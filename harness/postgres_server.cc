// A throwaway PostgreSQL cluster; see postgres_server.h for the lifecycle and the OS user.
#include "harness/postgres_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
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

namespace walbench {
namespace {

namespace fs = std::filesystem;

std::string errno_text() { return std::strerror(errno); }

// The last `n` non-empty lines of a log, joined with " | " (one line for an error message).
std::string log_tail(const std::string& path, size_t n = 3) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  if (lines.empty()) return "(" + path + " is empty)";
  const size_t from = lines.size() > n ? lines.size() - n : 0;
  return absl::StrJoin(lines.begin() + static_cast<long>(from), lines.end(), " | ");
}

}  // namespace

// See postgres_server.h.
int run_program(const std::vector<std::string>& argv, const OsUser& user,
                const std::string& log_path, double timeout_s, bool honour_interrupt) {
  const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log < 0) throw PostgresError("cannot open " + log_path + ": " + errno_text());
  if (::geteuid() == 0) (void)::fchown(log, user.uid, user.gid);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const bool switch_user = ::geteuid() == 0 && user.uid != 0;
  const std::string exec_failed = "walbench: cannot run " + argv[0] + "\n";
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log);
    throw PostgresError("cannot fork to run " + argv[0] + ": " + errno_text());
  }
  if (pid == 0) {  // only async-signal-safe calls until exec
    ::setsid();
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::dup2(log, 1);
    ::dup2(log, 2);
    if (switch_user &&
        (::setgroups(0, nullptr) != 0 || ::setgid(user.gid) != 0 || ::setuid(user.uid) != 0))
      ::_exit(126);
    ::execv(args[0], args.data());
    (void)!::write(2, exec_failed.data(), exec_failed.size());
    ::_exit(127);
  }
  ::close(log);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR)
      throw PostgresError("waitpid for " + argv[0] + ": " + errno_text());
    const int sig = honour_interrupt ? interrupt_signal() : 0;
    const bool late = std::chrono::steady_clock::now() > deadline;
    if (sig != 0 || late) {
      ::kill(-pid, SIGKILL);  // its session (setsid: the session id is its pid)
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      const std::string program = fs::path(argv[0]).filename().string();
      if (sig != 0)
        throw PostgresError(program + " stopped: " + interrupted_error(sig));
      throw PostgresError(absl::StrFormat("%s did not finish within %g s; killed it: %s",
                                          program, timeout_s, log_tail(log_path)));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

namespace {

// Throws, in one line, when `user` cannot traverse every directory from / down to `dir` (root
// reaches a directory the server's user then cannot: initdb would fail obscurely). `what` names
// where the directory came from ("TMPDIR", "platform.wal_dir").
void check_traversable(const std::string& dir, const OsUser& user, const std::string& what) {
  if (::geteuid() != 0 || user.uid == 0) return;
  fs::path at = "/";
  for (const auto& part : fs::absolute(dir).relative_path()) {
    at /= part;
    struct stat st {};
    if (::stat(at.c_str(), &st) != 0) continue;  // mkdtemp reports a missing directory
    const mode_t bit = st.st_uid == user.uid ? S_IXUSR : st.st_gid == user.gid ? S_IXGRP : S_IXOTH;
    if ((st.st_mode & bit) == 0)
      throw PostgresError(absl::StrFormat(
          "%s %s: the server's OS user %s cannot traverse %s (mode %04o) and PostgreSQL refuses "
          "to run as root; make it traversable (chmod o+x %s) or choose a directory it can reach",
          what, dir, user.name, at.string(), st.st_mode & 07777, at.string()));
  }
}

// A fresh directory under `parent` from a mkdtemp template, mode 0700, owned by `user`.
std::string make_private_dir(const std::string& parent, const std::string& prefix,
                             const OsUser& user) {
  std::string templ = parent + "/" + prefix + "XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr)
    throw PostgresError("cannot create a directory in " + parent + ": " + errno_text());
  if (::geteuid() == 0 && ::chown(templ.c_str(), user.uid, user.gid) != 0) {
    const std::string why = errno_text();
    ::rmdir(templ.c_str());
    throw PostgresError("cannot give " + templ + " to user " + user.name + ": " + why);
  }
  return templ;
}

// A postgresql.conf string literal.
std::string conf_quote(const std::string& v) {
  std::string out = "'";
  for (char c : v) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// The postmaster's pid from its pid file; 0 when the file is missing, unreadable or not a
// positive pid (never a pid that kill() would read as a process group).
pid_t read_postmaster_pid(const std::string& data_dir) {
  std::ifstream in(data_dir + "/postmaster.pid");
  long pid = 0;
  in >> pid;
  return in && pid > 0 ? static_cast<pid_t>(pid) : 0;
}

constexpr double kInitdbTimeoutS = 300;

// Waits up to `seconds` for `done()`; returns its last value.
template <class F>
bool wait_until(double seconds, F&& done) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return done();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

}  // namespace

void check_server_binaries(const std::string& bindir, bool bindir_given) {
  for (const char* program : {"initdb", "pg_ctl", "postgres", "pgbench"}) {
    const std::string path = bindir + "/" + program;
    if (::access(path.c_str(), X_OK) == 0) continue;
    if (bindir_given)
      throw PostgresError("platform.bindir " + bindir + " has no " + program +
                          "; expected the bin directory of a PostgreSQL build (its pg_config "
                          "--bindir), or platform.dsn for an existing server");
    throw PostgresError(std::string("PostgreSQL's programs are not installed (no ") + program +
                        " in " + bindir +
                        "): install them with scripts/setup.sh --with-postgres (Debian's "
                        "postgresql-15), or give platform.bindir (a PostgreSQL build's bin "
                        "directory) or platform.dsn (an existing server)");
  }
}

OsUser server_os_user() {
  const passwd* pw = nullptr;
  if (::geteuid() != 0) {
    pw = ::getpwuid(::geteuid());
  } else {
    pw = ::getpwnam("walbench");
    if (pw == nullptr) pw = ::getpwnam("nobody");
  }
  if (pw == nullptr)
    throw PostgresError(::geteuid() == 0
                            ? "PostgreSQL refuses to run as root and there is neither a user "
                              "\"walbench\" nor \"nobody\" to run it as; create one: useradd "
                              "--system walbench"
                            : "cannot look up the current user: " + errno_text());
  return {pw->pw_name, pw->pw_uid, pw->pw_gid};
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw PostgresError("cannot open a socket to find a free port: " + errno_text());
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string why = errno_text();
    ::close(fd);
    throw PostgresError("cannot find a free port: " + why);
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

bool signal_process(pid_t pid, int sig) {
  if (pid <= 0) return false;  // 0 and -1 would signal our own group or every process
  return ::kill(pid, sig) == 0;
}

bool process_alive(pid_t pid) {
  if (pid <= 0) return false;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return false;
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return false;
  const char state = stat[paren + 2];
  return state != 'Z' && state != 'X';
}

std::vector<pid_t> processes_in(const std::string& dir) {
  std::vector<pid_t> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code link_ec;
    const std::string cwd = fs::read_symlink(entry.path() / "cwd", link_ec).string();
    if (link_ec) continue;
    if (cwd == dir || cwd.rfind(dir + "/", 0) == 0 || cwd.rfind(dir + " (deleted)", 0) == 0)
      found.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return found;
}

PostgresServer::PostgresServer(const ServerOptions& options) : options_(options) {
  try {
    start(options);
  } catch (...) {
    try {
      stop();
    } catch (const std::exception& e) {
      std::cerr << "walbench: " << e.what() << "\n";
    }
    throw;
  }
}

PostgresServer::~PostgresServer() {
  try {
    stop();
  } catch (const std::exception& e) {
    std::cerr << "walbench: " << e.what() << "\n";
  }
}

void PostgresServer::start(const ServerOptions& o) {
  check_server_binaries(o.bindir, true);
  user_ = server_os_user();
  const char* tmp = std::getenv("TMPDIR");
  const std::string parent = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  check_traversable(parent, user_, "TMPDIR");
  if (!o.wal_dir.empty()) check_traversable(o.wal_dir, user_, "platform.wal_dir");
  root_ = make_private_dir(parent, "walbench-pg-", user_);
  if (!o.wal_dir.empty()) wal_root_ = make_private_dir(o.wal_dir, "walbench-pg-wal-", user_);

  std::vector<std::string> initdb = {o.bindir + "/initdb", "-D", data_dir(), "-U", "walbench",
                                     "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync",
                                     absl::StrFormat("--wal-segsize=%d", o.wal_segsize_mb)};
  if (!wal_root_.empty()) initdb.push_back("--waldir=" + wal_root_ + "/pg_wal");
  const std::string initdb_log = root_ + "/initdb.log";
  if (run_program(initdb, user_, initdb_log, kInitdbTimeoutS) != 0)
    throw PostgresError("initdb failed (as user " + user_.name + "): " + log_tail(initdb_log));

  port_ = free_port();
  {
    std::ofstream conf(data_dir() + "/postgresql.conf", std::ios::app);
    conf << "\n# walbench (harness/postgres_server.cc)\n"
         << "port = " << port_ << "\n"
         << "listen_addresses = ''\n"
         << "unix_socket_directories = " << conf_quote(root_) << "\n";
    for (const auto& [name, value] : o.settings) conf << name << " = " << conf_quote(value) << "\n";
    if (!conf) throw PostgresError("cannot write " + data_dir() + "/postgresql.conf");
  }

  const std::string log = root_ + "/server.log";
  const int rc = run_program({o.bindir + "/pg_ctl", "-D", data_dir(), "-l", log, "-w", "-t",
                              std::to_string(o.start_timeout_s), "start"},
                             user_, root_ + "/pg_ctl.log", o.start_timeout_s + 10.0);
  postmaster_ = read_postmaster_pid(data_dir());
  if (rc != 0)
    throw PostgresError("the PostgreSQL server did not start (pg_ctl exit " + std::to_string(rc) +
                        "): " + log_tail(log));
  if (!process_alive(postmaster_))
    throw PostgresError("the PostgreSQL server started but its postmaster is gone: " +
                        log_tail(log));
}

void PostgresServer::stop() {
  std::string problem;
  if (postmaster_ > 0 || (!root_.empty() && fs::exists(data_dir() + "/postmaster.pid"))) {
    if (postmaster_ <= 0) postmaster_ = read_postmaster_pid(data_dir());
    const int rc = run_program({options_.bindir + "/pg_ctl", "-D", data_dir(), "-m", "fast",
                                "-w", "-t", "60", "stop"},
                               user_, root_ + "/pg_ctl.log", 70.0, /*honour_interrupt=*/false);
    if (rc != 0 || !wait_until(5, [&] { return !process_alive(postmaster_); })) {
      problem = "the PostgreSQL server did not stop (pg_ctl stop exit " + std::to_string(rc) +
                "); killed it";
      signal_process(postmaster_, SIGQUIT);  // immediate shutdown
      if (!wait_until(10, [&] { return !process_alive(postmaster_); }))
        signal_process(postmaster_, SIGKILL);
    }
    postmaster_ = 0;
  }
  // The backends exit with their postmaster (they watch for its death).
  if (!root_.empty() && !wait_until(10, [&] { return processes_in(data_dir()).empty(); })) {
    for (pid_t pid : processes_in(data_dir())) signal_process(pid, SIGKILL);
    problem += (problem.empty() ? "" : "; ") + std::string("server processes outlived it; killed them");
  }
  remove_directories();
  if (!problem.empty()) throw PostgresError(problem);
}

void PostgresServer::remove_directories() {
  std::string problem;
  for (std::string* dir : {&root_, &wal_root_}) {
    if (dir->empty()) continue;
    std::error_code ec;
    fs::remove_all(*dir, ec);
    if (ec) problem += (problem.empty() ? "" : "; ") + ("cannot remove " + *dir + ": " + ec.message());
    dir->clear();
  }
  if (!problem.empty()) throw PostgresError(problem);
}

std::string PostgresServer::conninfo(const std::string& dbname) const {
  return absl::StrFormat("host=%s port=%d user=walbench dbname=%s", root_, port_, dbname);
}

}  // namespace walbench

// A throwaway PostgreSQL cluster for platform "postgres" (harness/postgres_config.h).
//
// Lifecycle: a fresh temporary directory (mkdtemp under $TMPDIR, else /tmp) owned by the
// server's OS user holds the data directory, the socket and the logs; initdb (UTF8, locale C,
// trust auth, --wal-segsize, --waldir when pg_wal goes elsewhere) -> the settings appended to
// postgresql.conf -> `pg_ctl start -w` listening on the Unix socket in that directory only (no
// TCP: the free port only names the socket) -> ... -> `pg_ctl stop -m fast` (then immediate, then SIGKILL if the server
// does not go) -> the directories removed. The destructor stops and removes, so an exception
// or an interrupted run (harness/interrupt.h: the runner unwinds) leaves nothing behind. A
// second SIGINT, which _exits at once, or SIGKILL does leave the cluster: `pg_ctl -D DIR/data
// stop` as the server's user (as root: `runuser -u nobody -- .../pg_ctl -D DIR/data stop`) and
// removing DIR clean it up. Every program runs under a deadline (run_program).
//
// The OS user. PostgreSQL refuses to run as root. Run by root, walbench runs initdb and pg_ctl
// as the user "walbench" when it exists (an administrator may create one: `useradd --system
// walbench`), else as "nobody", which every Debian system has: walbench creates no user. The
// temporary directory is mode 0700 and that user's; root reaches it anyway, but that user must
// traverse $TMPDIR (and wal_dir) from / down: checked before initdb, one line when it cannot.
// Otherwise the server runs as the invoking user.
//
// pg_ctl and the postmaster run in a session of their own (setsid), so a terminal's Ctrl-C
// reaches walbench, which then stops the server itself, and not the server directly.
#pragma once

#include <sys/types.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace walbench {

// Starting, talking to or stopping a server failed. what() is one line.
struct PostgresError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The programs a throwaway cluster needs in `bindir`; throws PostgresError with one line that
// says what to install (`scripts/setup.sh --with-postgres`) or which setting to give
// (`bindir_given`: the directory came from platform.bindir).
void check_server_binaries(const std::string& bindir, bool bindir_given);

// Who runs the server (see above).
struct OsUser {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
};
OsUser server_os_user();

// Runs argv[0] (a path) as `user` in a session of its own, stdin from /dev/null, stdout and
// stderr appended to `log_path`; returns its exit status (128 + signal when killed). Polled, not
// waited for blindly: past `timeout_s`, or once SIGINT/SIGTERM has reached walbench
// (harness/interrupt.h) when `honour_interrupt`, its session is killed (SIGKILL) and
// PostgresError names the program (and on timeout its log's tail). The steps that clean up after
// an interrupt (pg_ctl stop) pass honour_interrupt = false.
int run_program(const std::vector<std::string>& argv, const OsUser& user,
                const std::string& log_path, double timeout_s, bool honour_interrupt = true);

// A TCP port nothing listens on now (bound and released; the kernel picks it).
int free_port();

struct ServerOptions {
  std::string bindir;
  // (name, value) appended to postgresql.conf: postgres_config.h's server_settings().
  std::vector<std::pair<std::string, std::string>> settings;
  uint64_t wal_segsize_mb = 16;
  std::string wal_dir;  // pg_wal in a fresh directory under it; "" = in the data directory
  int start_timeout_s = 120;
};

class PostgresServer {
 public:
  // Creates and starts the cluster; on failure throws PostgresError (naming the step and the
  // last lines of its log) after removing whatever it created.
  explicit PostgresServer(const ServerOptions& options);
  ~PostgresServer();  // stop(); errors go to stderr
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  // Stops the server and removes its directories; idempotent. Throws PostgresError when the
  // server would not stop (it was then killed) or a directory could not be removed.
  void stop();

  // libpq conninfo for database `dbname` as the cluster's superuser.
  std::string conninfo(const std::string& dbname = "postgres") const;
  int port() const { return port_; }
  const std::string& root_dir() const { return root_; }  // data, socket, logs
  std::string data_dir() const { return root_ + "/data"; }
  const std::string& wal_dir() const { return wal_root_; }  // "" = in the data directory
  const OsUser& os_user() const { return user_; }
  pid_t postmaster_pid() const { return postmaster_; }
  bool running() const { return postmaster_ > 0; }

 private:
  void start(const ServerOptions& options);
  void remove_directories();

  ServerOptions options_;
  OsUser user_;
  std::string root_;
  std::string wal_root_;
  int port_ = 0;
  pid_t postmaster_ = 0;
};

// kill(pid, sig) for a real pid only: false, signalling nothing, for pid <= 0 (which kill()
// would read as walbench's own process group or every process).
bool signal_process(pid_t pid, int sig);
// Whether a process (not a zombie) has pid `pid`.
bool process_alive(pid_t pid);
// Processes whose working directory is `dir` or under it (PostgreSQL's processes chdir into
// their data directory): what a stopped cluster must not leave.
std::vector<pid_t> processes_in(const std::string& dir);

}  // namespace walbench

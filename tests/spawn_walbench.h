// Starting the built walbench binary from a test as a real child process: its own pid (so a test
// can send it a real SIGINT or SIGTERM, which a shell background job would ignore), SIGINT and
// SIGTERM at their defaults and no signal blocked whatever the test process does, stdout and
// stderr to files, a working directory and optional extra environment variables.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "tests/temp_dir.h"

extern char** environ;

namespace walbench::testing {

// `walbench args...` in `cwd`; `env` entries ("NAME=value") replace the test's variables of the
// same name. Returns the child's pid, or -1 when posix_spawn failed.
inline pid_t spawn_walbench(const std::string& binary, const std::vector<std::string>& args,
                            const std::string& cwd, const std::string& out_path,
                            const std::string& err_path,
                            const std::vector<std::string>& env = {}) {
  std::vector<std::string> argv_s = {binary};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s = env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string var(*e);
    bool replaced = false;
    for (const std::string& mine : env)
      if (var.compare(0, mine.find('=') + 1, mine, 0, mine.find('=') + 1) == 0) replaced = true;
    if (!replaced) env_s.push_back(var);
  }
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &fa, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  return rc == 0 ? pid : -1;
}

// A started walbench: its pid and output files; killed (SIGKILL) and reaped when the test ends
// without having waited for it (set pid to -1 once reaped).
struct WalbenchProcess {
  pid_t pid = -1;
  std::string out_path, err_path;
  WalbenchProcess(const std::string& binary, const std::vector<std::string>& args,
                  const std::string& cwd, std::string out, std::string err,
                  const std::vector<std::string>& env = {})
      : out_path(std::move(out)), err_path(std::move(err)) {
    pid = spawn_walbench(binary, args, cwd, out_path, err_path, env);
    REQUIRE(pid > 0);
  }
  ~WalbenchProcess() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
  WalbenchProcess(const WalbenchProcess&) = delete;
  WalbenchProcess& operator=(const WalbenchProcess&) = delete;
  std::string out() const { return slurp(out_path); }
  std::string err() const { return slurp(err_path); }
};

}  // namespace walbench::testing

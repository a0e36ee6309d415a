// Runs the Python scripts behind `walbench plot` and `walbench report --usl` (python_script.h).
#include "harness/python_script.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "harness/config.h"

extern char** environ;

namespace walbench {

std::string script_path(const std::string& name) {
  const char* env = std::getenv("WALBENCH_SCRIPTS_DIR");
  const bool from_env = env && *env;
#ifdef WALBENCH_SCRIPTS_DIR
  const std::string dir = from_env ? env : WALBENCH_SCRIPTS_DIR;
#else
  const std::string dir = from_env ? env : "scripts";
#endif
  const std::filesystem::path path = std::filesystem::path(dir) / name;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw UsageError("cannot find " + path.string() +
                     (from_env ? " (WALBENCH_SCRIPTS_DIR names no walbench scripts/ folder)"
                               : " (the scripts/ of the source tree walbench was built from; set "
                                 "WALBENCH_SCRIPTS_DIR to a walbench checkout's scripts/)"));
  return path.string();
}

std::string python_interpreter() {
  if (const char* env = std::getenv("WALBENCH_PYTHON"); env && *env) return env;
  if (access("/usr/bin/python3", X_OK) == 0) return "/usr/bin/python3";
  return "python3";
}

int run_python_script(const std::string& name, const std::vector<std::string>& args) {
  const std::string script = script_path(name);
  const std::string python = python_interpreter();
  std::vector<std::string> argv_text = {python, script};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);

  // No __pycache__ in the source tree's scripts/.
  setenv("PYTHONDONTWRITEBYTECODE", "1", 1);
  std::cout.flush();
  std::cerr.flush();
  pid_t pid = 0;
  const int err = posix_spawnp(&pid, python.c_str(), nullptr, nullptr, argv.data(), environ);
  if (err != 0)
    throw UsageError("cannot run " + python + " (" + std::strerror(err) +
                     "); install python3 (scripts/setup.sh) or set WALBENCH_PYTHON");
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw UsageError(std::string("waiting for ") + python + ": " + std::strerror(errno));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  throw UsageError(python + " " + script + " died of signal " + std::to_string(WTERMSIG(status)));
}

std::string default_plot_path(const std::string& result_path) {
  std::filesystem::path p(result_path);
  if (p.extension() == ".json") p.replace_extension();
  return p.string() + ".png";
}

}  // namespace walbench

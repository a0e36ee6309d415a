// `walbench plot` and `walbench report --usl`: both run a Python script of scripts/
// (plot_result.py, usl_fit.py; matplotlib and SciPy, Debian packages that scripts/setup.sh
// installs) with the process's stdout and stderr, and exit with its status.
//
// The scripts directory is $WALBENCH_SCRIPTS_DIR when set, else the source tree's scripts/
// (fixed at build time, as presets/ is for sim presets). The interpreter is $WALBENCH_PYTHON
// when set, else /usr/bin/python3 (where Debian's python3-matplotlib and python3-scipy are
// importable, whatever python3 comes first on PATH), else python3 on PATH.
#pragma once

#include <string>
#include <vector>

namespace walbench {

// The path of scripts/NAME; throws UsageError naming where it looked when it is not there.
std::string script_path(const std::string& name);

// The interpreter run_python_script uses.
std::string python_interpreter();

// Runs `PYTHON scripts/NAME ARGS...`, waits for it and returns its exit status (2, with one line
// on stderr from the caller's UsageError, when it cannot be started or dies of a signal).
// The script reports its own bad input as one "walbench: error: ..." line with status 2.
int run_python_script(const std::string& name, const std::vector<std::string>& args);

// `walbench plot RESULT`'s default output: RESULT without ".json", plus ".png".
std::string default_plot_path(const std::string& result_path);

}  // namespace walbench

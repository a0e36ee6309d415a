// SIGINT/SIGTERM during a run; see interrupt.h.
#include "harness/interrupt.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "core/platform/sim.h"

namespace walbench {

namespace {

std::atomic<int> g_signal{0};  // the first signal; written by the handler
static_assert(std::atomic<int>::is_always_lock_free, "read and written in a signal handler");

// The result file's temporary, removed by a second signal. Written only while no handler is
// installed (constructor, destructor), read by the handler.
char g_tmp_path[4096];

constexpr int kSignals[] = {SIGINT, SIGTERM};
struct sigaction g_previous[2];
bool g_installed[2] = {false, false};

void on_signal(int sig) {
  int none = 0;
  if (g_signal.compare_exchange_strong(none, sig)) {
    Simulation::set_interrupted(true);
    return;
  }
  // A second signal: leave now, writing nothing.
  const int saved_errno = errno;
  if (g_tmp_path[0] != '\0') (void)::unlink(g_tmp_path);
  static const char kMsg[] = "walbench: second signal: exiting at once; the result file keeps its last complete version\n";
  (void)!::write(STDERR_FILENO, kMsg, sizeof kMsg - 1);
  errno = saved_errno;
  ::_exit(128 + sig);
}

}  // namespace

InterruptHandlers::InterruptHandlers(const std::string& output_path) {
  g_signal.store(0);
  Simulation::set_interrupted(false);
  const std::string tmp = output_path.empty() ? "" : output_path + ".tmp";  // NB: atomic_file.cc
  if (tmp.size() >= sizeof g_tmp_path)
    g_tmp_path[0] = '\0';  // too long to keep: a second signal may leave the temporary behind
  else
    std::memcpy(g_tmp_path, tmp.c_str(), tmp.size() + 1);
  for (size_t i = 0; i < 2; ++i) {
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    if (::sigaction(kSignals[i], nullptr, &g_previous[i]) != 0)
      throw std::runtime_error(std::string("sigaction: ") + std::strerror(errno));
    if (g_previous[i].sa_handler == SIG_IGN) continue;  // ignored by whoever started us: keep it
    if (::sigaction(kSignals[i], &sa, nullptr) != 0)
      throw std::runtime_error(std::string("sigaction: ") + std::strerror(errno));
    g_installed[i] = true;
  }
}

InterruptHandlers::~InterruptHandlers() {
  for (size_t i = 0; i < 2; ++i)
    if (g_installed[i]) {
      (void)::sigaction(kSignals[i], &g_previous[i], nullptr);
      g_installed[i] = false;
    }
  g_tmp_path[0] = '\0';
  g_signal.store(0);
  Simulation::set_interrupted(false);
}

int interrupt_signal() { return g_signal.load(std::memory_order_relaxed); }

std::string signal_name(int sig) {
  if (sig == SIGINT) return "SIGINT";
  if (sig == SIGTERM) return "SIGTERM";
  return "signal " + std::to_string(sig);
}

std::string interrupted_error(int sig) { return "interrupted by " + signal_name(sig); }

void request_interrupt(int sig) { on_signal(sig); }

}  // namespace walbench

// SIGINT/SIGTERM during `walbench run` (harness/RESULTS.md "Interrupted runs").
//
// The first signal asks every running cell to stop at once: the handler stores the signal
// number and sets the simulator's process-wide interrupt (Simulation::set_interrupted), so that
// a simulated cell stops at its next event; the monitor of a real-thread cell polls
// interrupt_signal() (at most 10 ms apart) and sets the clients' stop flag. The runner then
// records the stopped cells and the cells not started as interrupted, writes the result file and
// returns 128 + the signal (130 for SIGINT, 143 for SIGTERM); `walbench run --resume FILE` runs
// what is left.
//
// A second signal ends the process at once with _exit(128 + signal), writing nothing: it removes
// the result file's temporary (write_file_atomically's `<path>.tmp`), so the file is left as its
// last complete version and no stray temporary stays behind.
//
// The handler does only async-signal-safe work: lock-free atomic operations, unlink, write and
// _exit.
#pragma once

#include <string>

namespace walbench {

// Installs the handlers for the life of a run and restores the previous dispositions after (a
// signal ignored when the run starts, e.g. by nohup, stays ignored). Starts with no interrupt
// pending and clears it again at the end. One at a time in a process.
class InterruptHandlers {
 public:
  // `output_path`: the result file ("" = none); its temporary is removed on a second signal.
  explicit InterruptHandlers(const std::string& output_path);
  ~InterruptHandlers();
  InterruptHandlers(const InterruptHandlers&) = delete;
  InterruptHandlers& operator=(const InterruptHandlers&) = delete;
};

// 0, or the first signal received (SIGINT or SIGTERM) since the handlers were installed.
int interrupt_signal();
// "interrupted by SIGINT": the error of a cell stopped by the signal.
std::string interrupted_error(int sig);
// "SIGINT", "SIGTERM".
std::string signal_name(int sig);

// What the handler does on a first signal, for tests that interrupt a run in-process.
void request_interrupt(int sig);

}  // namespace walbench

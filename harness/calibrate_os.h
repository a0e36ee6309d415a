// What `walbench calibrate` measures of the operating system (harness/calibrate.h): a context
// switch, a semaphore wake-up on another core (post -> the waiter runs) and the post call itself,
// and nanosleep's overshoot. Raw figures in ns; calibrate_preset converts them to the
// simulator's accounting.
#pragma once

#include <vector>

namespace walbench::calibration {

// Two threads pinned on one CPU hand it to each other through two POSIX semaphores: per switch
// (round trip / 2), Bendersky's futex ping-pong, the source of the default context_switch_ns.
std::vector<double> context_switches(int cpu, int samples, int rounds, bool* pinned);

// sem_post by a thread on cpu_poster to a thread blocked in sem_wait on cpu_waiter, idle_ns
// after the waiter blocked (the poster spins meanwhile, so the gap is exact): post -> the waiter
// runs (`wake`), and the duration of the sem_post call itself (`post`), n of each. A waiter's
// CPU that still polls for work after idle_ns (cpuidle-haltpoll in a KVM guest that loads it,
// the host's halt polling) wakes without an IPI and an exit from idle; idle_poll_param
// (calibrate_preset.h) finds that window from several idle times.
void semaphore_wakes(int cpu_poster, int cpu_waiter, int n, double idle_ns,
                     std::vector<double>* wake, std::vector<double>* post);

// nanosleep(1 us) overshoot: elapsed - 1 us, n samples.
std::vector<double> sleep_overshoot(int n);

}  // namespace walbench::calibration

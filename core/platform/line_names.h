// Names for the simulator's per-line statistics (sim.h "LINE STATISTICS"; `walbench run
// --top-lines`): the locks register their shared words here while they live (an LWLock's
// state and wait-queue links, a spinlock's word), and so do a few shared variables (the
// ProcArray's and XidGen's), so that a report can say "LWLock:ProcArrayLock" where it would
// otherwise print an address.
// Registration is off until enable() (the CLI turns it on for --top-lines; nothing registers in
// a run that does not ask, so no cell pays for it). Process-wide, under a mutex: cells running
// side by side (run -j) register into one map, each under its own live addresses; an object
// removes itself when it goes, so a reused address is named by its new owner.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace walbench::line_names {

void enable();
bool enabled();
// Names [p, p + bytes) until remove(p). name must outlive the registration (a string literal,
// wait_event_name()). Does nothing while not enabled.
void add(const void* p, size_t bytes, const char* name);
void remove(const void* p);
// The names of the registered objects that overlap the 64-byte line at line_address (a
// multiple of 64), joined by " + " in address order, each at most once; "" when none does.
std::string describe(uintptr_t line_address);

}  // namespace walbench::line_names

// Tests may use real threads and atomics: *_test.cc is not scanned. Never compiled.
#include <atomic>
#include <thread>
std::atomic<int> started{0};
static int counter;
void run() { std::thread t([] { std::this_thread::sleep_for(std::chrono::milliseconds(1)); }); t.join(); }

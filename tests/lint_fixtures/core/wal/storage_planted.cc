// core/wal .cc files are not scanned (storage, format, verifier run outside the clients' model).
#include <mutex>
std::mutex storage_mutex;

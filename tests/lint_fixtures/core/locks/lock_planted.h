// core/locks headers are scanned. Never compiled.
#pragma once
namespace walbench {
template <class P>
struct LockPlanted {
  void acquire() {
    while (locked_) asm volatile("pause");  // expect-lint: volatile
    __sync_lock_test_and_set(&locked_, 1);  // expect-lint: __sync_lock_test_and_set
  }
  int locked_ = 0;
};
}  // namespace walbench

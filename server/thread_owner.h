// A check of "one thread only" for an object without locks (the store, and
// through it the table, the value heap and the get pipeline): it binds to the
// first thread that calls check() and aborts, naming the object and the
// method, when any other thread calls. Always on, in every build type: one
// relaxed atomic load and a compare per call, and a call here is a whole run
// of operations.
#pragma once

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "absl/base/thread_annotations.h"

namespace gphkv::server {

// "The one thread that owns these fields", as a capability of clang's
// thread-safety analysis (scripts/check-thread-safety.sh): fields only that
// thread may touch are ABSL_GUARDED_BY the role, functions that touch them
// are ABSL_EXCLUSIVE_LOCKS_REQUIRED it, and the thread's entry point claims
// it. No lock and no cost: the analysis then fails any function reached from
// another thread (a handler, a completion thread's task) that touches them
// without claiming the role, which it must not.
class ABSL_LOCKABLE ThreadRole {
 public:
  // Called where the code runs as the owner: its thread's entry point, or
  // a constructor before that thread exists.
  void claim() const ABSL_ASSERT_EXCLUSIVE_LOCK() {}
};

// Prints what broke and aborts: a broken ownership rule is a bug that would
// corrupt state silently if it went on.
[[noreturn]] inline void ownership_broken(const char* object, const char* method, const char* rule) {
  std::fprintf(stderr, "gphkv: %s::%s: %s\n", object, method, rule);
  std::fflush(stderr);
  std::abort();
}

class ThreadOwner {
 public:
  explicit ThreadOwner(const char* object) : object_(object) {}
  ThreadOwner(const ThreadOwner&) = delete;
  ThreadOwner& operator=(const ThreadOwner&) = delete;

  void check(const char* method) {
    const std::thread::id me = std::this_thread::get_id();
    std::thread::id owner = owner_.load(std::memory_order_relaxed);
    if (owner == me) return;
    // The first call binds; a race between two first callers leaves one owner.
    if (owner == std::thread::id() && owner_.compare_exchange_strong(owner, me, std::memory_order_relaxed)) return;
    ownership_broken(object_, method, "called from a second thread; only its owner (the executor thread) may call it");
  }

 private:
  const char* object_;
  std::atomic<std::thread::id> owner_{};
};

}  // namespace gphkv::server

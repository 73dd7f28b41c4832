// std::mutex, and a scoped lock on it, carrying Clang's thread-safety
// annotations (scripts/check-thread-safety.sh). absl::Mutex has them already,
// but Debian's Abseil is not built for ThreadSanitizer, which then sees none
// of the ordering an absl::Mutex establishes and reports every hand-off as a
// race (docs/hardening.md, "What TSan covers"); TSan intercepts std::mutex.
// The server's threads that TSan's suites drive (batcher, completion pool)
// lock these.
#pragma once

#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"

namespace gphkv::server {

class ABSL_LOCKABLE AnnotatedMutex {
 public:
  void lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }

 private:
  friend class AnnotatedLock;
  std::mutex mu_;
};

// Holds `mu` for its scope; wait() waits on a condition variable, released
// meanwhile and held again on return (the analysis sees it held throughout,
// as the caller's code does).
class ABSL_SCOPED_LOCKABLE AnnotatedLock {
 public:
  explicit AnnotatedLock(AnnotatedMutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : lock_(mu->mu_) {}
  ~AnnotatedLock() ABSL_UNLOCK_FUNCTION() {}
  AnnotatedLock(const AnnotatedLock&) = delete;
  AnnotatedLock& operator=(const AnnotatedLock&) = delete;

  void wait(std::condition_variable& cv) { cv.wait(lock_); }
  template <class TimePoint>
  void wait_until(std::condition_variable& cv, TimePoint t) {
    cv.wait_until(lock_, t);
  }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace gphkv::server

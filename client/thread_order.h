// Keeps one thread's unary requests in the order the thread issued them, for
// gphkv::Client with coalescing off. There each request is its own RPC, and
// two RPCs in flight at once may reach the server in either order (gRPC
// gives no order between calls), so an async get could overtake the same
// thread's async put of its key (issue 24 measured 797 of 16000).
//
// The rule, per calling thread: reads (gets) commute with each other, so they
// run concurrently; a write (put, delete) starts only once every earlier
// request of its thread was answered, and a read only once every earlier
// write was. A request held back waits here, in issue order, and is started
// by the answer that frees it (on that answer's gRPC thread). A thread that
// issues only gets, or waits for each answer, never waits here.
#pragma once

#include <cstdint>
#include <deque>
#include <thread>
#include <unordered_map>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/synchronization/mutex.h"

namespace gphkv::detail {

class ThreadOrder {
 public:
  enum class Kind { kRead, kWrite };
  // A started request's place in its thread's order; hand it to finish().
  struct Ticket {
    std::thread::id thread;
    Kind kind;
  };

  // Runs `start(ticket)` at once, on the calling thread, when the thread's
  // earlier requests allow it; else keeps it, in order, for the finish()
  // that allows it.
  void issue(Kind kind, absl::AnyInvocable<void(Ticket) &&> start) ABSL_LOCKS_EXCLUDED(mu_);
  // Blocks until a request of `kind` may start (a sync call's turn).
  Ticket wait_turn(Kind kind) ABSL_LOCKS_EXCLUDED(mu_);
  // The request of `ticket` was answered: starts those it held back.
  void finish(Ticket ticket) ABSL_LOCKS_EXCLUDED(mu_);

  // Threads with a request outstanding or held back (tests).
  size_t threads_tracked() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Held {
    Kind kind;
    absl::AnyInvocable<void(Ticket) &&> start;
  };
  struct PerThread {
    int reads = 0;       // reads started, not yet answered
    bool write = false;  // a write started, not yet answered
    int waiting = 0;     // sync calls in wait_turn
    std::deque<Held> held;
    bool may_start(Kind kind) const { return !write && (kind == Kind::kRead || reads == 0); }
    bool idle() const { return reads == 0 && !write && waiting == 0 && held.empty(); }
    void started(Kind kind) {
      if (kind == Kind::kRead) {
        ++reads;
      } else {
        write = true;
      }
    }
  };

  mutable absl::Mutex mu_;
  // Only threads with something outstanding have an entry: a process whose
  // threads come and go does not grow it.
  std::unordered_map<std::thread::id, PerThread> threads_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gphkv::detail

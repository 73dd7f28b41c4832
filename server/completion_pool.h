// Threads that answer calls for the executor. Answering a gRPC call
// serializes its response on the calling thread (a 1000-value Get is ~70 KB),
// so the executor hands each run's answers here and goes on to the next
// batch: answers of batch n are written while batch n+1 runs in the engine.
// A call is still answered only after its operations took effect.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "server/annotated_mutex.h"

namespace gphkv::server {

class CompletionPool {
 public:
  // threads == 0: answers run inline on the submitting thread.
  explicit CompletionPool(unsigned threads);
  ~CompletionPool();

  void submit(std::function<void()> task);
  // True when no task is queued or running: answering inline then cannot
  // overtake an earlier answer, and saves waking a pool thread.
  bool idle();
  // The pool's threads (0: tasks run inline).
  size_t threads() const { return threads_.size(); }
  // Runs what is queued, then joins the threads. Idempotent.
  void stop();

 private:
  void work();

  AnnotatedMutex mu_;
  std::condition_variable cv_;  // a task queued, or stopping
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  size_t busy_ ABSL_GUARDED_BY(mu_) = 0;  // tasks queued or running
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace gphkv::server

// The batcher: a bounded FIFO of calls from every handler, cut into batches
// for the executor. A batch closes when its calls hold max_batch_keys keys or
// its oldest call has waited max_delay; calls are never split, so a batch
// holds at least one call and takes effect in arrival order.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "server/annotated_mutex.h"
#include "server/call.h"

namespace gphkv::server {

struct BatcherOptions {
  uint64_t max_batch_keys = 16384;
  std::chrono::microseconds max_delay{200};
  // Bound on keys waiting; past it enqueue() refuses with RESOURCE_EXHAUSTED.
  uint64_t max_queue_keys = 1 << 20;
  // Bound on put value bytes waiting; past it enqueue() refuses likewise, so
  // a burst of large puts cannot grow server memory without limit.
  uint64_t max_queue_bytes = uint64_t{1} << 30;
  // How long next_batch() spins, watching for a call, before it parks the
  // executor thread: a call that arrives meanwhile is taken without a
  // futex wake-up and the scheduler's delay behind it. It costs a core's
  // time while idle: up to `spin` after each batch (so at most spin x batches
  // per second). 0 = park at once (docs/performance.md, "Waits").
  std::chrono::microseconds spin{0};
  // While the executor has get runs on the device, a batch closes at once
  // with what is queued (it grew while those ran) instead of waiting up to
  // max_delay for company, and a run is finished as soon as the device is
  // done with it rather than when the pipeline is full or the queue empty:
  // either wait held finished answers (docs/performance.md, "Answers held
  // in the pipeline"). false: the policy before 2026-11-28, to measure.
  bool early_answers = true;
};

class Batcher {
 public:
  explicit Batcher(BatcherOptions options) : options_(options) {}

  // Queues `call` (stamping its enqueue time). RESOURCE_EXHAUSTED when the
  // queue is full, UNAVAILABLE once close() was called; in both cases the
  // call is untouched and `done` is not run.
  absl::Status enqueue(Call&& call);
  // Queues `calls` as consecutive calls, in order (one message's operations),
  // all or nothing: RESOURCE_EXHAUSTED or UNAVAILABLE as above refuse every
  // one of them and leave them untouched. Takes the lock once.
  absl::Status enqueue_all(absl::Span<Call> calls);

  // Blocks until a batch closes and returns it; an empty batch means the
  // batcher is closed and drained. The delay is only waited for when calls
  // arrive densely enough (mean gap below max_delay) for one to join, and
  // only when `may_wait_for_company` (the executor has no run in flight
  // whose answers the wait would hold; BatcherOptions::early_answers).
  std::vector<Call> next_batch(bool may_wait_for_company = true);

  // Waits up to `timeout` for a call to be queued (the executor, while it
  // has other work between batches). False once the batcher is closed.
  bool wait_for_call(Clock::duration timeout);

  // Refuses new calls; next_batch() hands out what is queued, then returns empty.
  void close();

  uint64_t queued_keys() const;
  // Whether no call is waiting (the executor uses it to answer inline when
  // there is no next batch to overlap the answers with).
  bool empty() const;
  const BatcherOptions& options() const { return options_; }

 private:
  // Under mu_: RESOURCE_EXHAUSTED or UNAVAILABLE when `keys` and `bytes`
  // more cannot be queued now.
  absl::Status admit(uint64_t keys, uint64_t bytes) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Under mu_: updates the arrival rate (one enqueue is one arrival).
  void note_arrival(Clock::time_point now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Under mu_: appends one admitted call.
  void push(Call&& call, Clock::time_point now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Spins, without the lock, until a call is queued, the batcher closes or
  // options_.spin passed.
  void spin_for_call() const ABSL_LOCKS_EXCLUDED(mu_);

  const BatcherOptions options_;
  mutable AnnotatedMutex mu_;
  std::condition_variable cv_;  // a call queued, or the batcher closed
  std::deque<Call> queue_ ABSL_GUARDED_BY(mu_);
  uint64_t queued_keys_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t queued_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  // queue_.size() and closed_, for spin_for_call() to watch without the lock.
  std::atomic<size_t> queued_calls_{0};
  std::atomic<bool> closing_{false};
  // Arrival rate, for the delay decision in next_batch(); starts at "dense"
  // so a delay configured for batching applies until the rate is known.
  static constexpr double kMaxGapNs = 1e6;
  Clock::time_point last_arrival_ ABSL_GUARDED_BY(mu_){};
  double mean_gap_ns_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace gphkv::server

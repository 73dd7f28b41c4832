#include "server/batcher.h"

#include <algorithm>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "absl/strings/str_cat.h"

namespace gphkv::server {

absl::Status Batcher::admit(uint64_t keys, uint64_t bytes) const {
  if (closed_) return absl::UnavailableError("server is shutting down; retry on another replica");
  if (queued_keys_ + keys > options_.max_queue_keys) {
    return absl::ResourceExhaustedError(
        absl::StrCat("server overloaded: ", queued_keys_, " keys queued, this call adds ", keys,
                     ", the bound (--max_queue_keys) is ", options_.max_queue_keys, "; retry with backoff"));
  }
  // A call larger than the whole bound is still let in when nothing else is
  // queued: the gRPC message limit caps it, and refusing it would refuse it forever.
  if (queued_bytes_ > 0 && queued_bytes_ + bytes > options_.max_queue_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("server overloaded: ", queued_bytes_, " value bytes queued, this call adds ", bytes,
                     ", the bound (--max_queue_bytes) is ", options_.max_queue_bytes, "; retry with backoff"));
  }
  return absl::OkStatus();
}

void Batcher::note_arrival(Clock::time_point now) {
  // Exponentially weighted mean gap between arrivals (weight 1/8), capped
  // so one long idle period does not hide a burst that follows it. A
  // message of many operations is one arrival: its operations come as
  // company already, and say nothing of when the next message comes.
  if (last_arrival_ != Clock::time_point{}) {
    const double gap = std::min<double>(
        static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(now - last_arrival_).count()),
        kMaxGapNs);
    mean_gap_ns_ += (gap - mean_gap_ns_) / 8;
  }
  last_arrival_ = now;
}

void Batcher::push(Call&& call, Clock::time_point now) {
  call.enqueued = now;
  queued_keys_ += call.num_keys();
  queued_bytes_ += call.payload_bytes();
  queue_.push_back(std::move(call));
  queued_calls_.store(queue_.size(), std::memory_order_release);
}

void Batcher::spin_for_call() const {
  const Clock::time_point until = Clock::now() + options_.spin;
  for (uint32_t i = 1;; ++i) {
    if (queued_calls_.load(std::memory_order_acquire) != 0 || closing_.load(std::memory_order_relaxed)) return;
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();  // yields the core's pipeline to a sibling hyperthread
#endif
    if (i % 64 == 0 && Clock::now() >= until) return;
  }
}

absl::Status Batcher::enqueue(Call&& call) {
  {
    AnnotatedLock lock(&mu_);
    if (absl::Status s = admit(call.num_keys(), call.payload_bytes()); !s.ok()) return s;
    const Clock::time_point now = Clock::now();
    note_arrival(now);
    push(std::move(call), now);
  }
  cv_.notify_one();
  return absl::OkStatus();
}

absl::Status Batcher::enqueue_all(absl::Span<Call> calls) {
  if (calls.empty()) return absl::OkStatus();
  uint64_t keys = 0, bytes = 0;
  for (const Call& c : calls) {
    keys += c.num_keys();
    bytes += c.payload_bytes();
  }
  {
    AnnotatedLock lock(&mu_);
    if (absl::Status s = admit(keys, bytes); !s.ok()) return s;
    const Clock::time_point now = Clock::now();
    note_arrival(now);
    for (Call& c : calls) push(std::move(c), now);
  }
  cv_.notify_one();
  return absl::OkStatus();
}

std::vector<Call> Batcher::next_batch(bool may_wait_for_company) {
  if (options_.spin.count() > 0) spin_for_call();
  AnnotatedLock lock(&mu_);
  while (!closed_ && queue_.empty()) lock.wait(cv_);
  if (queue_.empty()) return {};
  // Wait for the batch to fill, but no longer than the oldest call's delay
  // budget. When the executor was busy the budget is usually spent already,
  // so a loaded server closes batches at once, full of what queued meanwhile.
  // A call alone in the queue of an idle executor closes at once when calls
  // arrive too sparsely for another one to join it within the delay (the
  // mean gap since the last call exceeds max_delay): waiting could only add
  // the whole delay to its latency, never a second call to its batch.
  const Clock::time_point close_at = queue_.front().enqueued + options_.max_delay;
  const bool company_expected =
      may_wait_for_company &&
      (queue_.size() > 1 ||
       mean_gap_ns_ <
           static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(options_.max_delay).count()));
  // Only block when there is time left: a timed wait on a past deadline is
  // still a futex syscall per batch.
  if (company_expected) {
    for (Clock::time_point now = Clock::now(); !closed_ && queued_keys_ < options_.max_batch_keys && now < close_at;
         now = Clock::now()) {
      lock.wait_until(cv_, close_at);
    }
  }

  std::vector<Call> batch;
  uint64_t keys = 0, bytes = 0;
  while (!queue_.empty()) {
    const uint64_t k = queue_.front().num_keys();
    if (!batch.empty() && keys + k > options_.max_batch_keys) break;
    keys += k;
    bytes += queue_.front().payload_bytes();
    batch.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  queued_keys_ -= keys;
  queued_bytes_ -= bytes;
  queued_calls_.store(queue_.size(), std::memory_order_release);
  return batch;
}

bool Batcher::wait_for_call(Clock::duration timeout) {
  AnnotatedLock lock(&mu_);
  const Clock::time_point until = Clock::now() + timeout;
  for (Clock::time_point now = Clock::now(); !closed_ && queue_.empty() && now < until; now = Clock::now()) {
    lock.wait_until(cv_, until);
  }
  return !closed_;
}

void Batcher::close() {
  {
    AnnotatedLock lock(&mu_);
    closed_ = true;
    closing_.store(true, std::memory_order_relaxed);
  }
  cv_.notify_all();
}

bool Batcher::empty() const {
  AnnotatedLock lock(&mu_);
  return queue_.empty();
}

uint64_t Batcher::queued_keys() const {
  AnnotatedLock lock(&mu_);
  return queued_keys_;
}

}  // namespace gphkv::server

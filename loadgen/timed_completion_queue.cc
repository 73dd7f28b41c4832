#include "loadgen/timed_completion_queue.h"

#include <sys/prctl.h>

namespace gphkv::loadgen {

gpr_timespec ToGpr(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - Clock::now()).count();
  return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_nanos(left > 0 ? left : 0, GPR_TIMESPAN));
}

TimedCompletionQueue::TimedCompletionQueue() : waker_([this] { WakerLoop(); }) {}

TimedCompletionQueue::~TimedCompletionQueue() {
  if (waker_.joinable()) Shutdown([](void*, bool) {});
}

bool TimedCompletionQueue::WaitForEvent(Clock::time_point deadline, void** tag, bool* ok) {
  while (cq_.AsyncNext(tag, ok, ToGpr(deadline)) == grpc::CompletionQueue::GOT_EVENT) {
    if (*tag != &alarm_) return true;
    {
      std::lock_guard<std::mutex> lock(wake_mu_);
      alarm_pending_ = false;
    }
    if (Clock::now() >= deadline) return false;
    ArmWaker(deadline);  // a kick meant for an earlier deadline
  }
  return false;
}

bool TimedCompletionQueue::TakeReadyEvent(void** tag, bool* ok) {
  while (cq_.AsyncNext(tag, ok, gpr_time_0(GPR_CLOCK_MONOTONIC)) == grpc::CompletionQueue::GOT_EVENT) {
    if (*tag != &alarm_) return true;
    std::lock_guard<std::mutex> lock(wake_mu_);
    alarm_pending_ = false;
  }
  return false;
}

void TimedCompletionQueue::Settle(const std::function<bool()>& more_expected, Clock::duration limit,
                                  const OnEvent& on_event) {
  const Clock::time_point give_up = Clock::now() + limit;
  void* got = nullptr;
  bool ok = false;
  while (more_expected() && cq_.AsyncNext(&got, &ok, ToGpr(give_up)) == grpc::CompletionQueue::GOT_EVENT) {
    if (got == &alarm_) {
      std::lock_guard<std::mutex> lock(wake_mu_);
      alarm_pending_ = false;
      continue;
    }
    on_event(got, ok);
  }
}

void TimedCompletionQueue::Shutdown(const OnEvent& on_event) {
  {
    std::lock_guard<std::mutex> lock(wake_mu_);
    stop_waker_ = true;
  }
  wake_cv_.notify_one();
  waker_.join();  // no alarm is set after this; one already set still comes out below
  cq_.Shutdown();
  void* got = nullptr;
  bool ok = false;
  while (cq_.Next(&got, &ok)) {
    if (got != &alarm_) on_event(got, ok);
  }
}

void TimedCompletionQueue::ArmWaker(Clock::time_point deadline) {
  {
    std::lock_guard<std::mutex> lock(wake_mu_);
    wake_at_ = deadline;
  }
  wake_cv_.notify_one();
}

void TimedCompletionQueue::DisarmWaker() {
  std::lock_guard<std::mutex> lock(wake_mu_);
  wake_at_ = Clock::time_point::max();  // this wait is over: no kick
}

// At wake_at_, sets the alarm due at once, which wakes the thread blocked in
// AsyncNext. One alarm at a time (an alarm may be set again only once its
// event was taken).
void TimedCompletionQueue::WakerLoop() {
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  std::unique_lock<std::mutex> lock(wake_mu_);
  for (;;) {
    wake_cv_.wait(lock, [&] { return stop_waker_ || (wake_at_ != Clock::time_point::max() && !alarm_pending_); });
    if (stop_waker_) return;
    const Clock::time_point at = wake_at_;
    if (wake_cv_.wait_until(lock, at, [&] { return stop_waker_ || wake_at_ != at; })) continue;
    alarm_.Set(&cq_, gpr_inf_past(GPR_CLOCK_MONOTONIC), &alarm_);
    alarm_pending_ = true;
    wake_at_ = Clock::time_point::max();
  }
}

}  // namespace gphkv::loadgen

// A gRPC completion queue whose waits end at their deadline to the
// microsecond, shared by the gphkv sessions that poll one (unary, pipeline).
//
// gRPC (1.51) turns a completion-queue deadline into whole milliseconds (an
// epoll_wait timeout): AsyncNext(now + 300 us) on an idle queue returned
// 0.6-2 ms late (p50 760 us, p99 1.98 ms on the dev VM), and the open loop
// counts a late send as latency. So a waker thread sleeps until the deadline
// itself (ns timer, 1 ns slack) and kicks the queue with an alarm that is
// already due; completions still wake the polling thread directly, with no
// hand-off.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include <grpcpp/alarm.h>
#include <grpcpp/grpcpp.h>

#include "loadgen/target.h"

namespace gphkv::loadgen {

gpr_timespec ToGpr(Clock::time_point deadline);

class TimedCompletionQueue {
 public:
  // Called with each event's tag and ok flag (never with the alarm's).
  using OnEvent = std::function<void(void* tag, bool ok)>;

  TimedCompletionQueue();
  // Shuts the queue down unless Shutdown already did.
  ~TimedCompletionQueue();
  TimedCompletionQueue(const TimedCompletionQueue&) = delete;
  TimedCompletionQueue& operator=(const TimedCompletionQueue&) = delete;

  grpc::CompletionQueue* cq() { return &cq_; }

  // Waits for the first event until `deadline`, then takes every event that
  // is ready at once, handing each to on_event(tag, ok); returns how many. A
  // deadline in the past polls without blocking.
  template <typename F>
  int Next(Clock::time_point deadline, F&& on_event) {
    int delivered = 0;
    void* tag = nullptr;
    bool ok = false;
    const bool blocking = deadline > Clock::now();  // a past deadline polls: no kick needed
    if (blocking) ArmWaker(deadline);
    if (WaitForEvent(deadline, &tag, &ok)) {
      do {
        on_event(tag, ok);
        ++delivered;
      } while (TakeReadyEvent(&tag, &ok));
    }
    if (blocking) DisarmWaker();
    return delivered;
  }

  // Hands events to on_event while more_expected() says some are still due,
  // for at most `limit`. For closing: the owner cancels or ends what it still
  // has in flight first.
  void Settle(const std::function<bool()>& more_expected, Clock::duration limit, const OnEvent& on_event);
  // Shuts the queue down and hands on_event what is left (which must not
  // start anything new on the queue).
  void Shutdown(const OnEvent& on_event);

 private:
  // The first event before `deadline` other than a kick; false if none came.
  bool WaitForEvent(Clock::time_point deadline, void** tag, bool* ok);
  // An event that is ready now, other than a kick.
  bool TakeReadyEvent(void** tag, bool* ok);
  void ArmWaker(Clock::time_point deadline);
  void DisarmWaker();
  void WakerLoop();

  grpc::CompletionQueue cq_;
  grpc::Alarm alarm_;
  std::mutex wake_mu_;
  std::condition_variable wake_cv_;
  Clock::time_point wake_at_ = Clock::time_point::max();
  bool alarm_pending_ = false;
  bool stop_waker_ = false;
  std::thread waker_;
};

}  // namespace gphkv::loadgen

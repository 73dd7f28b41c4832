#include "server/batcher.h"

#include <time.h>

#include <algorithm>
#include <thread>

#include "gtest/gtest.h"
#include "server/wire_calls.h"

namespace gphkv::server {
namespace {

struct Req {
  v1::GetRequest req;
  v1::GetResponse resp;
};

Call get_call(Req* r, int keys) {
  for (int i = 0; i < keys; ++i) r->req.add_keys(i);
  Call c;
  c.op = get_op(r->req, &r->resp).value();
  c.done = [](absl::Status) {};
  return c;
}

TEST(Batcher, ClosesAtMaxBatchKeysWithoutSplittingCalls) {
  Batcher b({/*max_batch_keys=*/10, std::chrono::seconds(10), /*max_queue_keys=*/1000});
  Req r[4];
  for (auto& x : r) ASSERT_TRUE(b.enqueue(get_call(&x, 4)).ok());
  // 4+4 fit in 10, the third would not: two calls, at once (no 10 s wait).
  const auto t0 = Clock::now();
  auto batch = b.next_batch();
  EXPECT_EQ(batch.size(), 2u);
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(1));
  EXPECT_EQ(batch[0].get().keys.data(), r[0].req.keys().data());
  EXPECT_EQ(batch[1].get().keys.data(), r[1].req.keys().data());
  EXPECT_EQ(b.queued_keys(), 8u);
}

TEST(Batcher, ClosesAfterMaxDelay) {
  Batcher b({1000, std::chrono::milliseconds(20), 1000});
  Req r;
  ASSERT_TRUE(b.enqueue(get_call(&r, 1)).ok());
  const auto t0 = Clock::now();
  auto batch = b.next_batch();
  const auto waited = Clock::now() - t0;
  EXPECT_EQ(batch.size(), 1u);
  EXPECT_GE(waited, std::chrono::milliseconds(15));
  EXPECT_LT(waited, std::chrono::seconds(2));
}

TEST(Batcher, SkipsTheDelayWhenCallsArriveSparsely) {
  // Calls 3 ms apart with a 900 us delay: once the batcher has seen the gaps,
  // a lone call closes at once (no company could join it in time) instead of
  // paying the whole delay.
  const auto delay = std::chrono::microseconds(900);
  Batcher b({1000, delay, 1000});
  Req r[24];
  auto fastest = std::chrono::steady_clock::duration::max();  // of the last ten calls
  for (int i = 0; i < 24; ++i) {
    ASSERT_TRUE(b.enqueue(get_call(&r[i], 1)).ok());
    const auto t0 = Clock::now();
    EXPECT_EQ(b.next_batch().size(), 1u);
    if (i >= 14) fastest = std::min(fastest, Clock::now() - t0);
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
  }
  // A waiting batcher takes at least the delay every time; one that skips it
  // answers at once. The fastest of ten tells them apart even on a loaded
  // machine, where a few calls may be descheduled for longer than the delay.
  EXPECT_LT(fastest, delay / 2);
}

TEST(Batcher, KeepsTheDelayWhileCallsArriveDensely) {
  // Back-to-back arrivals: the first call still waits for company.
  Batcher b({1000, std::chrono::milliseconds(20), 1000});
  Req r[8];
  for (auto& x : r) ASSERT_TRUE(b.enqueue(get_call(&x, 1)).ok());
  EXPECT_EQ(b.next_batch().size(), 8u);
  Req late;
  ASSERT_TRUE(b.enqueue(get_call(&late, 1)).ok());
  const auto t0 = Clock::now();
  EXPECT_EQ(b.next_batch().size(), 1u);
  EXPECT_GE(Clock::now() - t0, std::chrono::milliseconds(5));
}

TEST(Batcher, DoesNotWaitForCompanyWhenTheExecutorHasRunsInFlight) {
  // The same dense arrivals, but the executor says a wait would hold answers
  // of runs on the device: the lone call closes at once, and what queued
  // comes whole.
  Batcher b({1000, std::chrono::seconds(10), 1000});
  Req r[8];
  for (auto& x : r) ASSERT_TRUE(b.enqueue(get_call(&x, 1)).ok());
  const auto t0 = Clock::now();
  EXPECT_EQ(b.next_batch(/*may_wait_for_company=*/false).size(), 8u);
  Req late;
  ASSERT_TRUE(b.enqueue(get_call(&late, 1)).ok());
  EXPECT_EQ(b.next_batch(/*may_wait_for_company=*/false).size(), 1u);
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5)) << "waited for the 10 s delay";
}

TEST(Batcher, AnOversizeCallGoesAlone) {
  Batcher b({4, std::chrono::milliseconds(0), 1000});
  Req big, small;
  ASSERT_TRUE(b.enqueue(get_call(&big, 9)).ok());
  ASSERT_TRUE(b.enqueue(get_call(&small, 1)).ok());
  EXPECT_EQ(b.next_batch().size(), 1u);
  EXPECT_EQ(b.next_batch().size(), 1u);
}

TEST(Batcher, RefusesPastTheQueueBoundAndAfterClose) {
  Batcher b({100, std::chrono::milliseconds(0), 10});
  Req a, c, d;
  ASSERT_TRUE(b.enqueue(get_call(&a, 8)).ok());
  absl::Status s = b.enqueue(get_call(&c, 3));
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(std::string(s.message()).find("--max_queue_keys"), std::string::npos) << s;
  b.close();
  EXPECT_EQ(b.enqueue(get_call(&d, 1)).code(), absl::StatusCode::kUnavailable);
  // Closed: what was queued is still handed out, then an empty batch.
  EXPECT_EQ(b.next_batch().size(), 1u);
  EXPECT_TRUE(b.next_batch().empty());
}

TEST(Batcher, RefusesPastTheQueueByteBound) {
  BatcherOptions o{100, std::chrono::milliseconds(0), 1000};
  o.max_queue_bytes = 1000;
  Batcher b(o);
  v1::PutRequest big, more;
  v1::PutResponse r1, r2;
  big.add_keys(1);
  big.add_value_lengths(1500);
  big.mutable_values()->assign(1500, 'x');
  more.add_keys(2);
  more.add_value_lengths(10);
  more.mutable_values()->assign(10, 'y');
  auto put = [](v1::PutRequest* req, v1::PutResponse* resp) {
    Call c;
    c.op = put_op(*req, resp).value();
    return c;
  };
  // Alone, an oversize call is admitted (it could never be otherwise) ...
  ASSERT_TRUE(b.enqueue(put(&big, &r1)).ok());
  // ... but nothing more while it waits.
  absl::Status s = b.enqueue(put(&more, &r2));
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(std::string(s.message()).find("--max_queue_bytes"), std::string::npos) << s;
  EXPECT_EQ(b.next_batch().size(), 1u);
  EXPECT_TRUE(b.enqueue(put(&more, &r2)).ok());
}

TEST(Batcher, CloseWakesAWaitingExecutor) {
  Batcher b({100, std::chrono::milliseconds(0), 100});
  std::thread closer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    b.close();
  });
  EXPECT_TRUE(b.next_batch().empty());
  closer.join();
}

// The CPU time the calling thread has used.
std::chrono::nanoseconds thread_cpu_time() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

TEST(Batcher, AnIdleExecutorTakesACallAtOnceWithoutADelay) {
  // max_delay 0 (the self-clocking policy): the executor waiting for work
  // takes a call as soon as it is queued, alone, with no wait for company.
  Batcher b({1000, std::chrono::microseconds(0), 1000});
  Req r;
  std::thread sender([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_TRUE(b.enqueue(get_call(&r, 1)).ok());
  });
  const auto t0 = Clock::now();
  auto batch = b.next_batch();
  EXPECT_EQ(batch.size(), 1u);
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(2));
  sender.join();
}

TEST(Batcher, CallsQueuedWhileTheExecutorIsBusyGoTogetherInArrivalOrder) {
  // With no delay, a batch holds what queued while the executor was busy:
  // all of it, in arrival order, up to max_batch_keys.
  Batcher b({8, std::chrono::microseconds(0), 1000});
  Req r[5];
  for (auto& x : r) ASSERT_TRUE(b.enqueue(get_call(&x, 2)).ok());
  auto first = b.next_batch();
  ASSERT_EQ(first.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(first[i].get().keys.data(), r[i].req.keys().data());
  auto second = b.next_batch();
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].get().keys.data(), r[4].req.keys().data());
}

TEST(Batcher, SpinThenParkParksAnIdleExecutor) {
  // Spinning 2 ms, then parked: waiting 100 ms for a call costs the waiting
  // thread about the spin's CPU time, not the whole wait.
  BatcherOptions o{1000, std::chrono::microseconds(0), 1000};
  o.spin = std::chrono::milliseconds(2);
  Batcher b(o);
  Req r;
  std::chrono::nanoseconds cpu{};
  std::vector<Call> batch;
  std::thread executor([&] {
    const auto c0 = thread_cpu_time();
    batch = b.next_batch();
    cpu = thread_cpu_time() - c0;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_TRUE(b.enqueue(get_call(&r, 1)).ok());
  executor.join();
  ASSERT_EQ(batch.size(), 1u);
  EXPECT_EQ(batch[0].get().keys.data(), r.req.keys().data());
  EXPECT_GE(cpu, std::chrono::microseconds(500)) << "it did not spin";
  EXPECT_LT(cpu, std::chrono::milliseconds(30)) << "it spun through the whole wait instead of parking";
}

TEST(Batcher, ASpinningExecutorTakesCallsInArrivalOrder) {
  BatcherOptions o{1000, std::chrono::microseconds(0), 1000};
  o.spin = std::chrono::milliseconds(50);
  Batcher b(o);
  constexpr int kCalls = 200;
  std::vector<Req> r(kCalls);
  std::thread sender([&] {
    for (auto& x : r) ASSERT_TRUE(b.enqueue(get_call(&x, 1)).ok());
  });
  int next = 0;
  while (next < kCalls) {
    for (Call& c : b.next_batch()) {
      ASSERT_LT(next, kCalls);
      EXPECT_EQ(c.get().keys.data(), r[next].req.keys().data());
      ++next;
    }
  }
  sender.join();
}

TEST(Batcher, CloseEndsASpin) {
  BatcherOptions o{100, std::chrono::microseconds(0), 100};
  o.spin = std::chrono::seconds(30);
  Batcher b(o);
  std::thread closer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    b.close();
  });
  const auto t0 = Clock::now();
  EXPECT_TRUE(b.next_batch().empty());
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5));
  closer.join();
}

}  // namespace
}  // namespace gphkv::server

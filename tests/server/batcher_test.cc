#include "server/batcher.h"
#include <algorithm>

#include <thread>

#include "gtest/gtest.h"

namespace gphkv::server {
namespace {

struct Req {
  v1::GetRequest req;
  v1::GetResponse resp;
};

Call get_call(Req* r, int keys) {
  for (int i = 0; i < keys; ++i) r->req.add_keys(i);
  Call c;
  c.op = GetOp{&r->req, &r->resp};
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
  EXPECT_EQ(batch[0].get().request, &r[0].req);
  EXPECT_EQ(batch[1].get().request, &r[1].req);
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
    c.op = PutOp{req, resp};
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

}  // namespace
}  // namespace gphkv::server

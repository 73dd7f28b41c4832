// The server's concurrent core without gRPC: client threads submit calls
// through the Intake into the Batcher; the Executor applies them to a CPU
// store and its completion threads answer them, recording metrics, while
// another thread scrapes the metrics and reads the executor's stats. Each
// client owns its keys, so read-your-writes is checked exactly; every call
// must be answered once. This is what scripts/sanitize.sh runs under TSan
// (the gRPC-bound suites cannot be: Debian's gRPC is not instrumented).
#include <atomic>
#include <future>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "gtest/gtest.h"
#include "server/executor.h"
#include "server/intake.h"
#include "server/service_metrics.h"
#include "server/store.h"
#include "server/wire_calls.h"
#include "tests/engine/table_checks.h"
#include "tests/server/call_messages.h"

namespace gphkv::server {
namespace {

// One call's request, response and answer, owned by the client thread.
struct Pending : testing::CallMessages {
  std::promise<absl::Status> answer;
  std::atomic<int> answers{0};
};

// A call for `p`'s request of `kind`, answered into p->answer, recording
// its metrics as the front end does.
Call call_for(Pending* p, OpKind kind, ServiceMetrics* metrics) {
  Call c;
  switch (kind) {
    case OpKind::kGet: c.op = get_op(p->get, &p->get_out).value(); break;
    case OpKind::kPut: c.op = put_op(p->put, &p->put_out).value(); break;
    case OpKind::kDelete: c.op = delete_op(p->del, &p->del_out).value(); break;
    case OpKind::kShrink: break;
  }
  const auto label = static_cast<OpLabel>(static_cast<int>(kind));
  c.done = [p, metrics, label](absl::Status s) {
    metrics->record_request(label, s.code(), 1, 1e-6);
    p->answers.fetch_add(1);
    p->answer.set_value(std::move(s));
  };
  return c;
}

TEST(PipelineThreads, ClientsReadTheirWritesThroughTheExecutorAndCompletionThreads) {
  const uint64_t seed = engine::testing::test_seed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  StoreOptions so;
  so.initial_capacity = 256;  // grows by rebuilds while clients run
  so.max_value_bytes = 4096;
  so.table.cpu_threads = 2;
  auto store = Store::create(so);
  ASSERT_TRUE(store.ok()) << store.status();
  BatcherOptions bo;
  bo.max_batch_keys = 64;
  bo.max_delay = std::chrono::microseconds(50);
  Batcher batcher(bo);
  ServiceMetrics metrics;
  Executor executor(std::move(*store), &batcher, &metrics, /*completion_threads=*/2);
  ASSERT_TRUE(executor.start().ok());
  const Intake intake(&batcher, RequestLimits{});

  constexpr int kClients = 6;
  constexpr int kRounds = 150;
  std::atomic<bool> stop_scraper{false};
  std::thread scraper([&] {
    while (!stop_scraper.load()) {
      EXPECT_NE(metrics.render().find("gphkv_requests_total"), std::string::npos);
      (void)executor.stats();
      std::this_thread::yield();
    }
  });
  std::vector<std::thread> clients;
  std::atomic<int> failures{0};
  for (int t = 0; t < kClients; ++t) {
    clients.emplace_back([&, t] {
      std::mt19937_64 rng(seed + t);
      std::unordered_map<uint64_t, std::string> mine;  // this client's keys: t, t + kClients, ...
      auto submit = [&](Pending* p, OpKind kind) {
        if (absl::Status s = intake.submit(call_for(p, kind, &metrics)); !s.ok()) {
          ADD_FAILURE() << "refused: " << s;
          ++failures;
          return false;
        }
        absl::Status answered = p->answer.get_future().get();
        if (!answered.ok() || p->answers.load() != 1) {
          ADD_FAILURE() << "answered " << p->answers.load() << " times: " << answered;
          ++failures;
          return false;
        }
        return true;
      };
      for (int round = 0; round < kRounds && failures == 0; ++round) {
        Pending put, get, del;
        for (int i = 0; i < 1 + static_cast<int>(rng() % 8); ++i) {
          const uint64_t key = static_cast<uint64_t>(t) + kClients * (rng() % 200);
          const std::string value = std::to_string(key) + "@" + std::to_string(round) + std::string(rng() % 300, 'v');
          put.put.add_keys(key);
          put.put.add_value_lengths(static_cast<uint32_t>(value.size()));
          put.put.mutable_values()->append(value);
          mine[key] = value;
        }
        if (!submit(&put, OpKind::kPut)) return;
        const uint64_t gone = static_cast<uint64_t>(t) + kClients * (rng() % 200);
        del.del.add_keys(gone);
        if (!submit(&del, OpKind::kDelete)) return;
        EXPECT_EQ(del.del_out.deleted(0), mine.erase(gone) == 1);
        for (const auto& kv : mine) get.get.add_keys(kv.first);
        get.get.add_keys(gone);
        if (!submit(&get, OpKind::kGet)) return;
        size_t off = 0;
        for (int i = 0; i < get.get.keys_size(); ++i) {
          auto it = mine.find(get.get.keys(i));
          EXPECT_EQ(get.get_out.found(i), it != mine.end()) << "key " << get.get.keys(i);
          const uint32_t len = get.get_out.value_lengths(i);
          if (it != mine.end()) EXPECT_EQ(get.get_out.values().substr(off, len), it->second);
          off += len;
        }
      }
    });
  }
  for (auto& c : clients) c.join();
  stop_scraper = true;
  scraper.join();
  batcher.close();
  executor.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(executor.stats().batches, 0u);
}

}  // namespace
}  // namespace gphkv::server

// gphkv::Client's coalescing: concurrent requests share Batches messages,
// each keeps its own result, order and deadline; a broken stream fails what
// was in flight and sends what was not on a new one.
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "tests/server/http_get.h"
#include "tests/server/test_server.h"

namespace gphkv {
namespace {

using testing::connect;
using testing::start_server;
using testing::test_options;

const bool kGrpcKept = (testing::keep_grpc_initialized(), true);

TEST(Coalescing, ConcurrentRequestsOfManyThreadsShareMessages) {
  auto o = test_options();
  o.batcher.max_delay = std::chrono::milliseconds(2);
  auto server = start_server(o);
  ASSERT_NE(server, nullptr);
  ClientOptions co;
  co.coalesce.max_in_flight = 1;
  auto client = connect(*server, co);
  const uint64_t seed = std::random_device{}();
  constexpr int kThreads = 16, kRequests = 100;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(seed + t);
      for (int i = 0; i < kRequests; ++i) {
        const uint64_t key = t * 1000 + rng() % 50;
        const std::string v = absl::StrCat(key, "#", i);
        auto put = client->Put(std::vector<uint64_t>{key}, std::vector<std::string_view>{v});
        auto get = client->Get(std::vector<uint64_t>{key});
        if (!put.ok() || !get.ok() || get->value(0) != v) {
          if (wrong.fetch_add(1) < 5) ADD_FAILURE() << "seed " << seed << " thread " << t << " request " << i;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(client->coalesced_requests(), uint64_t{2 * kThreads * kRequests});
  // 16 threads, one message in flight at a time: requests must have shared.
  EXPECT_LT(client->coalesced_messages() * 2, client->coalesced_requests())
      << client->coalesced_messages() << " messages for " << client->coalesced_requests() << " requests";
}

TEST(Coalescing, OneThreadsAsyncRequestsTakeEffectInTheOrderIssued) {
  auto server = start_server();
  ASSERT_NE(server, nullptr);
  auto client = connect(*server);
  constexpr int kRounds = 300;
  std::mutex mu;
  std::condition_variable cv;
  int done = 0;
  std::vector<std::string> seen(kRounds);
  const uint64_t key = 42;
  for (int i = 0; i < kRounds; ++i) {
    const std::string v = absl::StrCat("v", i);
    client->PutAsync({&key, 1}, std::vector<std::string_view>{v}, [&](absl::StatusOr<std::vector<bool>> r) {
      EXPECT_TRUE(r.ok()) << r.status();
      std::lock_guard<std::mutex> l(mu);
      ++done;
      cv.notify_all();
    });
    client->GetAsync({&key, 1}, false, [&, i](absl::StatusOr<GetResult> r) {
      std::lock_guard<std::mutex> l(mu);
      seen[i] = r.ok() ? std::string(r->value(0)) : r.status().ToString();
      ++done;
      cv.notify_all();
    });
  }
  std::unique_lock<std::mutex> l(mu);
  ASSERT_TRUE(cv.wait_for(l, std::chrono::seconds(30), [&] { return done == 2 * kRounds; }));
  for (int i = 0; i < kRounds; ++i) EXPECT_EQ(seen[i], absl::StrCat("v", i)) << "get " << i;
}

TEST(Coalescing, ReadYourWritesThroughOneClientSharedByManyThreads) {
  auto server = start_server();
  ASSERT_NE(server, nullptr);
  ClientOptions co;
  co.coalesce.streams = 3;
  auto client = connect(*server, co);
  const uint64_t seed = std::random_device{}();
  constexpr int kThreads = 12;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(seed + t);
      std::map<uint64_t, std::string> model;  // this thread's keys: t + kThreads * i
      for (int op = 0; op < 200; ++op) {
        std::vector<uint64_t> keys;
        for (int n = 1 + rng() % 6; n > 0; --n) keys.push_back(t + kThreads * (rng() % 40));
        const int what = static_cast<int>(rng() % 10);
        if (what < 4) {
          std::vector<std::string> vals;
          for (uint64_t k : keys) vals.push_back(absl::StrCat(k, "@", op, std::string(rng() % 300, '.')));
          if (!client->Put(keys, std::vector<std::string_view>(vals.begin(), vals.end())).ok()) ++wrong;
          for (size_t i = 0; i < keys.size(); ++i) model[keys[i]] = vals[i];
        } else if (what < 5) {
          auto r = client->Delete(keys);
          if (!r.ok()) ++wrong;
          for (uint64_t k : keys) model.erase(k);
        } else {
          auto r = client->Get(keys);
          if (!r.ok()) {
            ++wrong;
            continue;
          }
          for (size_t i = 0; i < keys.size(); ++i) {
            auto it = model.find(keys[i]);
            const bool ok = r->found(i) == (it != model.end()) && (it == model.end() || r->value(i) == it->second);
            if (!ok && wrong.fetch_add(1) < 5)
              ADD_FAILURE() << "seed " << seed << " thread " << t << " key " << keys[i];
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0) << "seed " << seed;
}

// A Batches service scripted per stream: `answer` decides what each
// stream does with its messages.
class ScriptedBatches final : public v1::KeyValue::CallbackService {
 public:
  // The number of the stream (0, 1, ...) and the message read; returns false
  // to end the stream with UNAVAILABLE instead of answering, after `hold`.
  std::function<bool(int stream, const v1::BatchRequest&)> answer = [](int, const v1::BatchRequest&) { return true; };
  std::chrono::milliseconds hold{0};
  std::atomic<int> streams{0};

  grpc::ServerBidiReactor<v1::BatchRequest, v1::BatchResponse>* Batches(grpc::CallbackServerContext*) override {
    class Reactor : public grpc::ServerBidiReactor<v1::BatchRequest, v1::BatchResponse> {
     public:
      Reactor(ScriptedBatches* svc, int n) : svc_(svc), n_(n) { StartRead(&req_); }
      void OnReadDone(bool ok) override {
        if (!ok) {
          Finish(grpc::Status::OK);
          return;
        }
        if (!svc_->answer(n_, req_)) {
          std::this_thread::sleep_for(svc_->hold);
          Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "scripted break"));
          return;
        }
        resp_.Clear();
        resp_.set_id(req_.id());
        for (const auto& op : req_.ops()) {
          auto* r = resp_.add_results();
          for (int i = 0; i < op.get().keys_size(); ++i) {
            r->mutable_get()->add_found(false);
            r->mutable_get()->add_value_lengths(0);
          }
          if (!op.has_get()) r->mutable_put()->add_created(true);
        }
        for (int i = 0; i < req_.gets().keys_size(); ++i) {
          resp_.mutable_gets()->mutable_get()->add_found(false);
          resp_.mutable_gets()->mutable_get()->add_value_lengths(0);
        }
        StartWrite(&resp_);
      }
      void OnWriteDone(bool) override { StartRead(&req_); }
      void OnDone() override { delete this; }

     private:
      ScriptedBatches* svc_;
      int n_;
      v1::BatchRequest req_;
      v1::BatchResponse resp_;
    };
    return new Reactor(this, streams.fetch_add(1));
  }
};

std::pair<std::unique_ptr<grpc::Server>, int> start_scripted(grpc::Service* svc) {
  grpc::ServerBuilder b;
  int port = 0;
  b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  b.RegisterService(svc);
  return {b.BuildAndStart(), port};
}

TEST(Coalescing, RequestsFailAtTheirDeadlineWhenNoAnswerComes) {
  ScriptedBatches svc;
  svc.answer = [&](int, const v1::BatchRequest&) {
    std::this_thread::sleep_for(std::chrono::seconds(2));  // holds the stream's reaction
    return true;
  };
  auto [server, port] = start_scripted(&svc);
  ASSERT_NE(server, nullptr);
  ClientOptions co;
  co.timeout = std::chrono::milliseconds(300);
  auto client = Client::Connect(absl::StrCat("127.0.0.1:", port), co);
  const auto t0 = std::chrono::steady_clock::now();
  auto r = client->Get(std::vector<uint64_t>{1});
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded) << r.status();
  EXPECT_GE(took, std::chrono::milliseconds(300));
  EXPECT_LT(took, std::chrono::milliseconds(1500)) << "the sweeper looks every timeout/16";
  client.reset();
  server->Shutdown(std::chrono::system_clock::now());
}

TEST(Coalescing, ABrokenStreamFailsWhatWasInFlightAndSendsTheRestOnANewOne) {
  ScriptedBatches svc;
  // The first stream breaks at its first message (after a pause in which
  // more requests queue behind it); later streams answer.
  svc.answer = [](int stream, const v1::BatchRequest&) { return stream > 0; };
  svc.hold = std::chrono::milliseconds(300);
  auto [server, port] = start_scripted(&svc);
  ASSERT_NE(server, nullptr);
  ClientOptions co;
  co.coalesce.max_in_flight = 1;
  auto client = Client::Connect(absl::StrCat("127.0.0.1:", port), co);
  std::mutex mu;
  std::condition_variable cv;
  std::vector<absl::Status> got(3);
  int done = 0;
  for (int i = 0; i < 3; ++i) {
    const uint64_t key = i;
    client->GetAsync({&key, 1}, false, [&, i](absl::StatusOr<GetResult> r) {
      std::lock_guard<std::mutex> l(mu);
      got[i] = r.status();
      ++done;
      cv.notify_all();
    });
    if (i == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the first goes alone
  }
  std::unique_lock<std::mutex> l(mu);
  ASSERT_TRUE(cv.wait_for(l, std::chrono::seconds(10), [&] { return done == 3; }));
  EXPECT_EQ(got[0].code(), absl::StatusCode::kUnavailable) << got[0];
  EXPECT_NE(got[0].message().find("may or may not have taken effect"), std::string::npos) << got[0];
  EXPECT_TRUE(got[1].ok()) << got[1];
  EXPECT_TRUE(got[2].ok()) << got[2];
  EXPECT_EQ(svc.streams.load(), 2);
  l.unlock();
  client.reset();
  server->Shutdown(std::chrono::system_clock::now());
}

// Replaying a stream's messages on a new attempt would apply again what the
// server may have applied already: the retry policy (default max_attempts)
// must leave Batches streams alone.
TEST(Coalescing, AStreamThatBreaksBeforeItsFirstAnswerIsNotReplayed) {
  ScriptedBatches svc;
  std::atomic<int> messages{0};
  svc.answer = [&](int stream, const v1::BatchRequest&) {
    ++messages;
    return stream > 0;
  };
  auto [server, port] = start_scripted(&svc);
  ASSERT_NE(server, nullptr);
  auto client = Client::Connect(absl::StrCat("127.0.0.1:", port));
  auto put = client->Put(std::vector<uint64_t>{7}, std::vector<std::string_view>{"v"});
  EXPECT_EQ(put.status().code(), absl::StatusCode::kUnavailable) << put.status();
  EXPECT_EQ(messages.load(), 1) << "the put reached the server " << messages.load() << " times";
  EXPECT_EQ(svc.streams.load(), 1);
  client.reset();
  server->Shutdown(std::chrono::system_clock::now());
}

// Losing the server fails the next requests with UNAVAILABLE at once, not
// at their deadline.
TEST(Coalescing, AServerLostAfterItAnsweredFailsRequestsFast) {
  auto server = start_server();
  ASSERT_NE(server, nullptr);
  auto client = connect(*server);  // 10 s timeout
  ASSERT_TRUE(client->Put(std::vector<uint64_t>{5}, std::vector<std::string_view>{"x"}).ok());
  server.reset();
  const auto t0 = std::chrono::steady_clock::now();
  auto r = client->Get(std::vector<uint64_t>{5});
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
  EXPECT_LT(took, std::chrono::seconds(5));
}

// A lane's first stream waits for its connection (the server may come up
// late, or a first connect fail on a loaded host) within each request's
// deadline, instead of failing every request of the stream at once.
TEST(Coalescing, ALaneNeverAnsweredWaitsForTheServerWithinTheDeadline) {
  const int port = testing::free_port();
  ClientOptions co;
  co.timeout = std::chrono::seconds(20);
  auto client = Client::Connect(absl::StrCat("127.0.0.1:", port), co);
  std::atomic<bool> put_done{false};
  absl::Status put_status;
  std::thread putter([&] {
    put_status = client->Put(std::vector<uint64_t>{11}, std::vector<std::string_view>{"late"}).status();
    put_done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the first connect attempts fail
  EXPECT_FALSE(put_done.load()) << "the put did not wait: " << put_status;
  server::ServerOptions o = test_options();
  o.listen_address = absl::StrCat("127.0.0.1:", port);
  auto server = start_server(o);
  ASSERT_NE(server, nullptr);
  putter.join();
  EXPECT_TRUE(put_status.ok()) << put_status;
  auto r = client->Get(std::vector<uint64_t>{11});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->value(0), "late");
}

// With no server at all, a lane never answered waits about a second for a
// connection, then fails its requests with UNAVAILABLE, well before their
// deadline.
TEST(Coalescing, ALaneNeverAnsweredIsUnavailableAfterItsConnectionWait) {
  ClientOptions co;
  co.timeout = std::chrono::seconds(6);
  auto client = Client::Connect(absl::StrCat("127.0.0.1:", testing::free_port()), co);
  const auto t0 = std::chrono::steady_clock::now();
  auto r = client->Get(std::vector<uint64_t>{1});
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
  EXPECT_GE(took, std::chrono::milliseconds(900));
  EXPECT_LT(took, std::chrono::seconds(4));
}

TEST(Coalescing, OffSendsEachRequestAsItsOwnCall) {
  auto server = start_server();
  ASSERT_NE(server, nullptr);
  ClientOptions co;
  co.coalesce.enabled = false;
  auto client = connect(*server, co);
  ASSERT_TRUE(client->Put(std::vector<uint64_t>{3}, std::vector<std::string_view>{"x"}).ok());
  auto r = client->Get(std::vector<uint64_t>{3});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->value(0), "x");
  EXPECT_EQ(client->coalesced_requests(), 0u);
}

}  // namespace
}  // namespace gphkv

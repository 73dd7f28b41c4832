// gphkv::Client: async calls, the pipelined stream helper, deadlines, and the
// retry policy (UNAVAILABLE only) against a scripted fake server.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "tests/server/test_server.h"

namespace gphkv {
namespace {

using testing::connect;
using testing::start_server;

// Some tests make clients with no server; keep gRPC up across all of them.
const bool kGrpcKept = (testing::keep_grpc_initialized(), true);

TEST(Client, AsyncCallsComplete) {
  auto server = start_server();
  ASSERT_NE(server, nullptr);
  auto client = connect(*server);
  constexpr int kCalls = 100;
  std::mutex mu;
  std::condition_variable cv;
  int done = 0, ok = 0;
  auto finish = [&](bool good) {
    std::lock_guard<std::mutex> l(mu);
    ++done;
    ok += good;
    cv.notify_all();
  };
  for (int i = 0; i < kCalls; ++i) {
    const uint64_t k = i;
    const std::string v = "value-" + std::to_string(i);
    client->PutAsync({&k, 1}, {std::vector<std::string_view>{v}},
                     [&](absl::StatusOr<std::vector<bool>> r) { finish(r.ok() && (*r)[0]); });
  }
  {
    std::unique_lock<std::mutex> l(mu);
    ASSERT_TRUE(cv.wait_for(l, std::chrono::seconds(20), [&] { return done == kCalls; }));
  }
  EXPECT_EQ(ok, kCalls);
  std::vector<uint64_t> keys;
  for (int i = 0; i < kCalls; ++i) keys.push_back(i);
  std::atomic<bool> got_all{false};
  client->GetAsync(keys, false, [&](absl::StatusOr<GetResult> r) {
    bool all = r.ok();
    for (int i = 0; all && i < kCalls; ++i) all = r->value(i) == "value-" + std::to_string(i);
    got_all = all;
    finish(true);
  });
  {
    // Two async calls in flight may reach the server in either order: let
    // the Get finish before the Delete is sent.
    std::unique_lock<std::mutex> l(mu);
    ASSERT_TRUE(cv.wait_for(l, std::chrono::seconds(20), [&] { return done == kCalls + 1; }));
  }
  client->DeleteAsync(keys, [&](absl::StatusOr<std::vector<bool>> r) {
    finish(r.ok() && r->size() == static_cast<size_t>(kCalls) && (*r)[0]);
  });
  std::unique_lock<std::mutex> l(mu);
  ASSERT_TRUE(cv.wait_for(l, std::chrono::seconds(20), [&] { return done == kCalls + 2; }));
  EXPECT_TRUE(got_all);
  EXPECT_EQ(ok, kCalls + 2);
}

TEST(Client, PipelineWithASenderAndAReceiverThread) {
  auto server = start_server();
  ASSERT_NE(server, nullptr);
  auto client = connect(*server);
  auto stream = client->OpenPipeline();
  constexpr int kOps = 3000;  // past the server's 1024 in-flight window: flow control
  std::thread sender([&] {
    for (int i = 0; i < kOps; ++i) {
      const uint64_t k = (i / 2) % 100;  // op 2j puts key j%100, op 2j+1 gets it
      if (i % 2 == 0) {
        ASSERT_TRUE(stream->SendPut({&k, 1}, std::vector<std::string_view>{"p"}).ok());
      } else {
        ASSERT_TRUE(stream->SendGet({&k, 1}).ok());
      }
    }
  });
  int answered = 0, found = 0;
  for (; answered < kOps; ++answered) {
    auto r = stream->Receive();
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->code(), 0) << r->message();
    if (r->has_get()) found += r->get().found(0);
  }
  sender.join();
  EXPECT_TRUE(stream->Close().ok());
  EXPECT_EQ(found, kOps / 2) << "every get follows a put of its key on the same stream";
}

TEST(Client, AnUnreachableServerIsUnavailableWithinTheDeadline) {
  ClientOptions o;
  o.timeout = std::chrono::milliseconds(2000);
  auto client = Client::Connect("127.0.0.1:1", o);  // nothing listens on port 1
  const auto t0 = std::chrono::steady_clock::now();
  auto r = client->Get(std::vector<uint64_t>{1});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_FALSE(client->Health().ok());
}

// Answers Get with a scripted sequence of codes and counts attempts.
class ScriptedService final : public v1::KeyValue::CallbackService {
 public:
  std::vector<grpc::StatusCode> script;
  std::atomic<int> attempts{0};
  grpc::ServerUnaryReactor* Get(grpc::CallbackServerContext* ctx, const v1::GetRequest* req,
                                v1::GetResponse* resp) override {
    const int n = attempts.fetch_add(1);
    auto* reactor = ctx->DefaultReactor();
    const grpc::StatusCode code = n < static_cast<int>(script.size()) ? script[n] : grpc::StatusCode::OK;
    if (code == grpc::StatusCode::OK) {
      for (int i = 0; i < req->keys_size(); ++i) {
        resp->add_found(false);
        resp->add_value_lengths(0);
      }
    }
    reactor->Finish(grpc::Status(code, "scripted"));
    return reactor;
  }
};

std::pair<std::unique_ptr<grpc::Server>, int> start_scripted(ScriptedService* svc) {
  testing::keep_grpc_initialized();
  grpc::ServerBuilder b;
  int port = 0;
  b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  b.RegisterService(svc);
  return {b.BuildAndStart(), port};
}

TEST(Client, RetriesUnavailableOnly) {
  ScriptedService svc;
  svc.script = {grpc::StatusCode::UNAVAILABLE, grpc::StatusCode::UNAVAILABLE};
  auto [server, port] = start_scripted(&svc);
  ASSERT_NE(server, nullptr);
  ClientOptions o;
  o.initial_backoff = std::chrono::milliseconds(10);
  o.coalesce.enabled = false;  // the unary path's retry policy
  auto client = Client::Connect("127.0.0.1:" + std::to_string(port), o);
  auto r = client->Get(std::vector<uint64_t>{1});
  EXPECT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(svc.attempts.load(), 3);

  svc.attempts = 0;
  svc.script = {grpc::StatusCode::RESOURCE_EXHAUSTED};
  r = client->Get(std::vector<uint64_t>{1});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(svc.attempts.load(), 1) << "only UNAVAILABLE is retried";

  svc.attempts = 0;
  svc.script = std::vector<grpc::StatusCode>(10, grpc::StatusCode::UNAVAILABLE);
  r = client->Get(std::vector<uint64_t>{1});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(svc.attempts.load(), o.max_attempts) << "retries are bounded";
  server->Shutdown();
}

TEST(GetResult, ASliceShowsItsKeysAndValuesOnly) {
  auto r = std::make_shared<v1::GetResponse>();
  const std::vector<std::pair<bool, std::string>> entries = {
      {true, "ab"}, {false, ""}, {true, "cde"}, {true, ""}, {true, "f"}};
  for (const auto& [found, v] : entries) {
    r->add_found(found);
    r->add_value_lengths(static_cast<uint32_t>(v.size()));
    r->mutable_values()->append(v);
  }
  const GetResult first(r, 0, 2, 0);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_TRUE(first.found(0));
  EXPECT_EQ(first.value(0), "ab");
  EXPECT_FALSE(first.found(1));
  EXPECT_EQ(first.value(1), "");
  EXPECT_EQ(first.value_bytes(), 2u);
  const GetResult rest(r, 2, 3, 2);
  ASSERT_EQ(rest.size(), 3u);
  EXPECT_EQ(rest.value(0), "cde");
  EXPECT_EQ(rest.value(1), "");
  EXPECT_EQ(rest.value(2), "f");
  EXPECT_EQ(rest.value(3), "") << "past the slice";
  EXPECT_EQ(rest.value_bytes(), 4u);
  // Lengths that run past the bytes: no values rather than bytes of others.
  const GetResult overrun(r, 2, 3, 4);
  EXPECT_EQ(overrun.value(0), "");
  EXPECT_EQ(overrun.value_bytes(), 0u);
  // More keys than the response holds: an empty result.
  EXPECT_EQ(GetResult(r, 4, 2, 5).size(), 0u);
}

TEST(Client, PutRefusesMismatchedValuesLocally) {
  auto client = Client::Connect("127.0.0.1:1");
  auto r = client->Put(std::vector<uint64_t>{1, 2}, std::vector<std::string_view>{"x"});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gphkv

// The gRPC service over loopback: every RPC, bad input, overload, deadlines,
// read-your-writes under concurrency, and shutdown with calls in flight.
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include "tests/server/read_your_writes.h"
#include "tests/server/test_server.h"

namespace gphkv {
namespace {

using testing::connect;
using testing::start_server;
using testing::test_options;

std::vector<std::string_view> views(const std::vector<std::string>& v) {
  return std::vector<std::string_view>(v.begin(), v.end());
}

// Waits until `n` async callbacks ran, at most `timeout`.
class Latch {
 public:
  explicit Latch(int n) : n_(n) {}
  void count_down() {
    std::lock_guard<std::mutex> l(mu_);
    if (--n_ == 0) cv_.notify_all();
  }
  bool wait(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, timeout, [&] { return n_ == 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int n_;
};

TEST(Service, PutGetDeleteStats) {
  auto server = start_server();
  ASSERT_NE(server, nullptr);
  auto client = connect(*server);
  const std::vector<uint64_t> keys{1, 2, 0xffffffffffffffffull};
  const std::vector<std::string> values{"one", std::string(5000, 'x'), ""};
  auto created = client->Put(keys, views(values));
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(*created, (std::vector<bool>{true, true, true}));
  created = client->Put({&keys[0], 1}, {std::vector<std::string_view>{"uno"}});
  ASSERT_TRUE(created.ok());
  EXPECT_EQ(*created, std::vector<bool>{false});

  const std::vector<uint64_t> lookup{1, 3, 2, 0xffffffffffffffffull, 1};
  auto got = client->Get(lookup);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 5u);
  EXPECT_EQ(got->value(0), "uno");
  EXPECT_FALSE(got->found(1));
  EXPECT_EQ(got->value(2), values[1]);
  EXPECT_TRUE(got->found(3));
  EXPECT_EQ(got->value(3), "");
  EXPECT_EQ(got->value(4), "uno");

  auto exists = client->Get(lookup, /*exists_only=*/true);
  ASSERT_TRUE(exists.ok());
  EXPECT_TRUE(exists->found(0));
  EXPECT_FALSE(exists->found(1));
  EXPECT_EQ(exists->value_bytes(), 0u);
  EXPECT_EQ(exists->value(0), "");

  auto deleted = client->Delete(std::vector<uint64_t>{2, 2, 99});
  ASSERT_TRUE(deleted.ok());
  EXPECT_EQ(*deleted, (std::vector<bool>{true, false, false}));
  got = client->Get(std::vector<uint64_t>{2});
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->found(0));

  auto stats = client->Stats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->backend(), "cpu");
  EXPECT_EQ(stats->keys(), 2u);
  EXPECT_GT(stats->table_bytes(), 0u);
  EXPECT_GT(stats->value_heap_bytes(), 0u);
  EXPECT_EQ(stats->memory_limit_bytes(), 256u << 20);
  EXPECT_GE(stats->batches(), 6u);
  EXPECT_FALSE(stats->version().empty());
}

// An operator's Shrink after mass deletes: the table is rebuilt for the keys
// left, in the background, and every key left (and no deleted one) is still
// there with its value.
TEST(Service, ShrinkRebuildsForTheKeysLeftAndKeepsThem) {
  auto server = start_server();  // initial capacity 1024: 40k keys grow it several times
  ASSERT_NE(server, nullptr);
  auto client = connect(*server);
  std::mt19937_64 rng(std::random_device{}());
  std::map<uint64_t, std::string> model;
  std::vector<uint64_t> all;
  while (all.size() < 40000) {
    std::vector<uint64_t> keys;
    std::vector<std::string> values;
    for (int i = 0; i < 1000; ++i) {
      const uint64_t k = rng();
      if (!model.emplace(k, std::to_string(k % 100000)).second) continue;
      keys.push_back(k);
      values.push_back(model[k]);
      all.push_back(k);
    }
    ASSERT_TRUE(client->Put(keys, views(values)).ok());
  }
  const size_t keep = 1000;
  for (size_t i = keep; i < all.size(); i += 1000) {
    const std::vector<uint64_t> gone(all.begin() + i, all.begin() + std::min(all.size(), i + 1000));
    ASSERT_TRUE(client->Delete(gone).ok());
    for (uint64_t k : gone) model.erase(k);
  }
  const std::vector<uint64_t> kept(all.begin(), all.begin() + keep);
  auto stats = client->Stats();
  ASSERT_TRUE(stats.ok());
  const uint64_t rebuilds_before = stats->rebuilds();

  // A growth rebuild may still be running: that is FAILED_PRECONDITION, and
  // the next call swaps it in.
  absl::StatusOr<v1::ShrinkResponse> shrink;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (;;) {
    shrink = client->Shrink();
    if (shrink.ok() || std::chrono::steady_clock::now() > give_up) break;
    ASSERT_EQ(shrink.status().code(), absl::StatusCode::kFailedPrecondition) << shrink.status();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_TRUE(client->Get(kept).ok());
  }
  ASSERT_TRUE(shrink.ok()) << shrink.status();
  EXPECT_TRUE(shrink->started());
  EXPECT_EQ(shrink->keys(), keep);
  EXPECT_GT(shrink->new_table_bytes(), 0u);
  EXPECT_LT(shrink->new_table_bytes(), shrink->table_bytes() / 4);

  // The new table is swapped in between batches: calls keep going meanwhile,
  // and each answer is checked against the model.
  for (;;) {
    auto got = client->Get(kept);
    ASSERT_TRUE(got.ok()) << got.status();
    for (size_t i = 0; i < keep; ++i) ASSERT_EQ(got->value(i), model.at(kept[i])) << "key " << kept[i];
    stats = client->Stats();
    ASSERT_TRUE(stats.ok());
    if (stats->table_bytes() == shrink->new_table_bytes()) break;
    ASSERT_LT(std::chrono::steady_clock::now(), give_up) << "the shrunk table was never swapped in";
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(stats->keys(), keep);
  EXPECT_GT(stats->rebuilds(), rebuilds_before);
  const std::vector<uint64_t> deleted(all.begin() + keep, all.begin() + keep + 1000);
  auto got = client->Get(deleted, /*exists_only=*/true);
  ASSERT_TRUE(got.ok());
  for (size_t i = 0; i < deleted.size(); ++i) EXPECT_FALSE(got->found(i)) << "deleted key " << deleted[i];

  // Now it fits: nothing to do.
  shrink = client->Shrink();
  ASSERT_TRUE(shrink.ok()) << shrink.status();
  EXPECT_FALSE(shrink->started());
  EXPECT_EQ(shrink->new_table_bytes(), 0u);
}

TEST(Service, PipelineAnswersEveryOpByIdInStreamOrder) {
  auto server = start_server();
  ASSERT_NE(server, nullptr);
  auto client = connect(*server);
  auto stream = client->OpenPipeline();
  std::map<uint64_t, int> kind_of;  // id -> 0 get, 1 put, 2 delete, 3 bad
  const int kRounds = 200;
  for (int i = 0; i < kRounds; ++i) {
    const uint64_t key = 1000 + i % 17;
    const std::string v = "v" + std::to_string(i);
    auto put = stream->SendPut({&key, 1}, {std::vector<std::string_view>{v}});
    ASSERT_TRUE(put.ok());
    kind_of[*put] = 1;
    auto get = stream->SendGet({&key, 1});
    ASSERT_TRUE(get.ok());
    kind_of[*get] = 0;
  }
  const uint64_t many[3] = {1000, 1001, 5};
  auto del = stream->SendDelete(many);
  ASSERT_TRUE(del.ok());
  kind_of[*del] = 2;
  std::map<uint64_t, v1::PipelineResponse> answers;
  for (size_t i = 0; i < kind_of.size(); ++i) {
    auto r = stream->Receive();
    ASSERT_TRUE(r.ok()) << r.status();
    answers[r->id()] = *r;
  }
  EXPECT_TRUE(stream->Close().ok());
  ASSERT_EQ(answers.size(), kind_of.size());
  // Ops of one stream take effect in the order sent: each get sees the put
  // just before it on the same key.
  for (int i = 0; i < kRounds; ++i) {
    const uint64_t get_id = 2 * i + 2;
    const auto& a = answers.at(get_id);
    ASSERT_EQ(a.code(), 0) << a.message();
    ASSERT_TRUE(a.has_get());
    EXPECT_TRUE(a.get().found(0));
    EXPECT_EQ(a.get().values(), "v" + std::to_string(i));
  }
  const auto& d = answers.at(*del);
  ASSERT_TRUE(d.has_delete_());
  EXPECT_TRUE(d.delete_().deleted(0));
  EXPECT_TRUE(d.delete_().deleted(1));
  EXPECT_FALSE(d.delete_().deleted(2));
}

TEST(Service, PipelineReportsABadOpAndKeepsGoing) {
  auto server = start_server();
  ASSERT_NE(server, nullptr);
  auto client = connect(*server);
  grpc::ClientContext ctx;
  auto rw = client->stub()->Pipeline(&ctx);
  v1::PipelineRequest empty;
  empty.set_id(41);
  ASSERT_TRUE(rw->Write(empty));
  v1::PipelineRequest oversize;
  oversize.set_id(42);
  oversize.mutable_get();  // no keys
  ASSERT_TRUE(rw->Write(oversize));
  v1::PipelineRequest good;
  good.set_id(43);
  good.mutable_get()->add_keys(7);
  ASSERT_TRUE(rw->Write(good));
  rw->WritesDone();
  std::map<uint64_t, v1::PipelineResponse> got;
  v1::PipelineResponse r;
  while (rw->Read(&r)) got[r.id()] = r;
  EXPECT_TRUE(rw->Finish().ok());
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[41].code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(got[41].message().find("no get, put or delete"), std::string::npos);
  EXPECT_EQ(got[42].code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_FALSE(got[42].has_get());
  EXPECT_EQ(got[43].code(), 0);
  EXPECT_FALSE(got[43].get().found(0));
}

// Sends a raw request through the stub so the client library cannot refuse it first.
template <typename Req, typename Resp, typename Fn>
grpc::Status raw(Client& c, const Req& req, Fn method) {
  Resp resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  return (c.stub()->*method)(&ctx, req, &resp);
}

void expect_invalid(const grpc::Status& s, const std::string& needle) {
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_NE(s.error_message().find(needle), std::string::npos)
      << "message '" << s.error_message() << "' lacks '" << needle << "'";
}

TEST(Service, BadInputGetsInvalidArgumentNamingTheLimitAndWritesNothing) {
  auto o = test_options();
  o.limits.max_call_keys = 100;
  o.limits.max_value_bytes = 1000;
  auto server = start_server(o);
  ASSERT_NE(server, nullptr);
  auto client = connect(*server);
  using GetFn = grpc::Status (v1::KeyValue::Stub::*)(grpc::ClientContext*, const v1::GetRequest&, v1::GetResponse*);
  using PutFn = grpc::Status (v1::KeyValue::Stub::*)(grpc::ClientContext*, const v1::PutRequest&, v1::PutResponse*);
  using DelFn =
      grpc::Status (v1::KeyValue::Stub::*)(grpc::ClientContext*, const v1::DeleteRequest&, v1::DeleteResponse*);
  const GetFn get = &v1::KeyValue::Stub::Get;
  const PutFn put = &v1::KeyValue::Stub::Put;
  const DelFn del = &v1::KeyValue::Stub::Delete;

  expect_invalid(raw<v1::GetRequest, v1::GetResponse>(*client, v1::GetRequest(), get), "no keys");
  v1::GetRequest big_get;
  for (int i = 0; i < 101; ++i) big_get.add_keys(i);
  expect_invalid(raw<v1::GetRequest, v1::GetResponse>(*client, big_get, get), "--max_call_keys) is 100");
  v1::GetRequest bad_mode;
  bad_mode.add_keys(1);
  bad_mode.set_value_mode(static_cast<v1::ValueMode>(7));
  expect_invalid(raw<v1::GetRequest, v1::GetResponse>(*client, bad_mode, get), "value_mode 7");
  expect_invalid(raw<v1::DeleteRequest, v1::DeleteResponse>(*client, v1::DeleteRequest(), del), "no keys");
  v1::DeleteRequest big_del;
  for (int i = 0; i < 101; ++i) big_del.add_keys(i);
  expect_invalid(raw<v1::DeleteRequest, v1::DeleteResponse>(*client, big_del, del), "limit");

  expect_invalid(raw<v1::PutRequest, v1::PutResponse>(*client, v1::PutRequest(), put), "no keys");
  // One oversize value among good ones: the whole call is refused.
  v1::PutRequest oversize = make_put_request(std::vector<uint64_t>{10, 11, 12},
                                             std::vector<std::string_view>{"a", std::string(1001, 'b'), "c"});
  expect_invalid(raw<v1::PutRequest, v1::PutResponse>(*client, oversize, put), "--max_value_bytes) is 1000");
  v1::PutRequest mismatch = make_put_request(std::vector<uint64_t>{10, 11}, std::vector<std::string_view>{"a", "b"});
  mismatch.add_value_lengths(1);
  expect_invalid(raw<v1::PutRequest, v1::PutResponse>(*client, mismatch, put), "value_lengths");
  v1::PutRequest short_values =
      make_put_request(std::vector<uint64_t>{10, 11}, std::vector<std::string_view>{"a", "b"});
  short_values.mutable_values()->pop_back();
  expect_invalid(raw<v1::PutRequest, v1::PutResponse>(*client, short_values, put), "sum to 2");

  auto got = client->Get(std::vector<uint64_t>{10, 11, 12});
  ASSERT_TRUE(got.ok());
  for (size_t i = 0; i < 3; ++i) EXPECT_FALSE(got->found(i)) << "refused put wrote key " << 10 + i;
}

TEST(Service, ACallWhoseDeadlinePassesInTheQueueChangesNothing) {
  auto o = test_options();
  o.batcher.max_delay = std::chrono::milliseconds(300);  // hold batches long
  o.batcher.max_batch_keys = 1 << 20;
  auto server = start_server(o);
  ASSERT_NE(server, nullptr);
  ClientOptions co;
  co.timeout = std::chrono::milliseconds(50);
  co.max_attempts = 1;
  co.coalesce.streams = 1;  // the put's stream shares the channel Stats warms
  auto hasty = connect(*server, co);
  // Connect first: on a busy machine (the sanitizer builds in CI) the first
  // dial can outlast the 25 ms a stream waits for it, and the put would be
  // UNAVAILABLE before it ever reached the queue this test is about. Stats
  // is not batched, so it comes back within its deadline once connected.
  bool connected = false;
  for (int i = 0; i < 100 && !connected; ++i) connected = hasty->Stats().ok();
  ASSERT_TRUE(connected) << "no connection to the test server";
  auto r = hasty->Put(std::vector<uint64_t>{77}, std::vector<std::string_view>{"late"});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded) << r.status();
  // Let the held batch run, then look: the put must not have happened.
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  auto patient = connect(*server);
  auto got = patient->Get(std::vector<uint64_t>{77});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_FALSE(got->found(0));
}

TEST(Service, OverloadIsRefusedPromptly) {
  auto o = test_options();
  o.batcher.max_delay = std::chrono::milliseconds(500);
  o.batcher.max_batch_keys = 1 << 20;
  o.batcher.max_queue_keys = 100;
  o.limits.max_call_keys = 100;
  auto server = start_server(o);
  ASSERT_NE(server, nullptr);
  auto client = connect(*server);
  std::vector<uint64_t> keys(80);
  for (int i = 0; i < 80; ++i) keys[i] = i;
  Latch latch(1);
  absl::Status first;
  client->GetAsync(keys, false, [&](absl::StatusOr<GetResult> r) {
    first = r.status();
    latch.count_down();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // first is queued, batch held
  const auto t0 = std::chrono::steady_clock::now();
  auto second = client->Get(keys);
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(second.status().code(), absl::StatusCode::kResourceExhausted) << second.status();
  EXPECT_NE(std::string(second.status().message()).find("--max_queue_keys"), std::string::npos);
  EXPECT_LT(took, std::chrono::milliseconds(300)) << "refusal waited for the queue";
  ASSERT_TRUE(latch.wait(std::chrono::seconds(10)));
  EXPECT_TRUE(first.ok()) << first;
}

TEST(Service, ReadYourWritesUnderManyConcurrentClients) {
  auto server = start_server();
  ASSERT_NE(server, nullptr);
  testing::ReadYourWritesLoad load;  // 16 clients x 150 calls of 1..8 keys
  load.seed = std::random_device{}();
  EXPECT_EQ(testing::run_read_your_writes(*server, load), 0);
  auto stats = connect(*server)->Stats();
  ASSERT_TRUE(stats.ok());
  // Cross-call batching happened: fewer engine launches than calls.
  EXPECT_LT(stats->batches(), static_cast<uint64_t>(load.clients * load.ops));
}

TEST(Service, ShutdownAnswersEveryCallInFlight) {
  auto o = test_options();
  o.batcher.max_delay = std::chrono::milliseconds(100);  // calls wait in the queue
  o.batcher.max_batch_keys = 1 << 20;
  auto server = start_server(o);
  ASSERT_NE(server, nullptr);
  auto client = connect(*server);
  constexpr int kCalls = 64;
  Latch latch(kCalls);
  std::mutex mu;
  std::map<absl::StatusCode, int> codes;
  for (int i = 0; i < kCalls; ++i) {
    const uint64_t key = i;
    client->PutAsync({&key, 1}, {std::vector<std::string_view>{"v"}}, [&](absl::StatusOr<std::vector<bool>> r) {
      {
        std::lock_guard<std::mutex> l(mu);
        ++codes[r.status().code()];
      }
      latch.count_down();
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(30));  // calls reach the queue
  // An established stream (one round trip done) with an op sent just before
  // shutdown: the op is answered before the stream is ended.
  auto stream = client->OpenPipeline();
  const uint64_t k = 1;
  ASSERT_TRUE(stream->SendGet({&k, 1}).ok());
  ASSERT_TRUE(stream->Receive().ok());
  ASSERT_TRUE(stream->SendGet({&k, 1}).ok());
  const auto t0 = std::chrono::steady_clock::now();
  server->shutdown();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  ASSERT_TRUE(latch.wait(std::chrono::seconds(10))) << "a call was never answered";
  // Every queued put was carried out and acknowledged, none was dropped.
  EXPECT_EQ(codes[absl::StatusCode::kOk], kCalls);
  auto answer = stream->Receive();
  EXPECT_TRUE(answer.ok()) << answer.status();
  stream->Close().IgnoreError();
  EXPECT_FALSE(client->Health().ok());
}

TEST(Service, HealthIsServing) {
  auto server = start_server();
  ASSERT_NE(server, nullptr);
  EXPECT_TRUE(connect(*server)->Health().ok());
}

// The server's own threads carry names an operator can tell apart (top -H,
// /proc/PID/task/*/comm): the executor, and the completion threads.
TEST(Service, ThreadsAreNamed) {
  auto options = test_options();
  options.completion_threads = 2;
  auto server = start_server(options);
  ASSERT_NE(server, nullptr);
  std::multiset<std::string> names;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    names.insert(name);
  }
  EXPECT_EQ(names.count("gphkv-executor"), 1u);
  EXPECT_EQ(names.count("gphkv-fill"), 2u);
}

// Server reflection (what grpcurl uses) lists the service. The reflection
// proto ships no generated C++ in Debian, so the request is hand-encoded:
// ServerReflectionRequest{list_services: ""} is field 7, length 0.
TEST(Service, ReflectionListsTheService) {
  auto server = start_server();
  ASSERT_NE(server, nullptr);
  auto channel = grpc::CreateChannel(absl::StrCat("127.0.0.1:", server->port()), grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::CompletionQueue cq;
  auto call = stub.PrepareCall(&ctx, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", &cq);
  auto step = [&](intptr_t want) {
    void* tag = nullptr;
    bool ok = false;
    return cq.Next(&tag, &ok) && reinterpret_cast<intptr_t>(tag) == want && ok;
  };
  call->StartCall(reinterpret_cast<void*>(1));
  ASSERT_TRUE(step(1));
  const char list_services[] = {0x3a, 0x00};
  grpc::Slice slice(list_services, sizeof(list_services));
  grpc::ByteBuffer request(&slice, 1);
  call->Write(request, reinterpret_cast<void*>(2));
  ASSERT_TRUE(step(2));
  grpc::ByteBuffer response;
  call->Read(&response, reinterpret_cast<void*>(3));
  ASSERT_TRUE(step(3));
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(response.Dump(&slices).ok());
  std::string bytes;
  for (const auto& sl : slices) bytes.append(reinterpret_cast<const char*>(sl.begin()), sl.size());
  EXPECT_NE(bytes.find("gphkv.v1.KeyValue"), std::string::npos);
  EXPECT_NE(bytes.find("grpc.health.v1.Health"), std::string::npos);
  call->WritesDone(reinterpret_cast<void*>(4));
  ASSERT_TRUE(step(4));
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(5));
  EXPECT_TRUE(step(5));
  EXPECT_TRUE(status.ok()) << status.error_message();
  cq.Shutdown();
  void* tag;
  bool ok;
  while (cq.Next(&tag, &ok)) {
  }
}

TEST(Service, RefusesInconsistentLimits) {
  auto o = test_options();
  o.limits.max_call_keys = 1000;
  o.batcher.max_queue_keys = 10;
  auto s = server::Server::start(o);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gphkv

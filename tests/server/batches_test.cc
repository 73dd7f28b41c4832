// The Batches stream over loopback (many operations per message, one answer
// per message, each operation standing alone), and what the server does with
// bytes that are not a valid message on every method.
#include <map>
#include <random>
#include <string>
#include <thread>

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "tests/server/test_server.h"

namespace gphkv {
namespace {

using testing::connect;
using testing::start_server;
using testing::test_options;

v1::Operation get_op(std::vector<uint64_t> keys) {
  v1::Operation op;
  op.mutable_get()->mutable_keys()->Add(keys.begin(), keys.end());
  return op;
}

v1::Operation put_op(std::vector<uint64_t> keys, std::vector<std::string_view> values) {
  v1::Operation op;
  *op.mutable_put() = make_put_request(keys, values);
  return op;
}

v1::Operation delete_op(std::vector<uint64_t> keys) {
  v1::Operation op;
  op.mutable_delete_()->mutable_keys()->Add(keys.begin(), keys.end());
  return op;
}

// Sends `messages` on one Batches stream (all of them, then half-closes) and
// returns the answers by id, and the stream's status.
std::pair<std::map<uint64_t, v1::BatchResponse>, grpc::Status> send_batches(
    Client& client, const std::vector<v1::BatchRequest>& messages) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  auto rw = client.stub()->Batches(&ctx);
  for (const auto& m : messages) EXPECT_TRUE(rw->Write(m));
  rw->WritesDone();
  std::map<uint64_t, v1::BatchResponse> got;
  v1::BatchResponse r;
  while (rw->Read(&r)) got[r.id()] = r;
  return {got, rw->Finish()};
}

// Packs gets the way gphkv::Client does: keys back to back, a count each.
void pack_gets(v1::BatchRequest* m, const std::vector<std::vector<uint64_t>>& gets) {
  for (const auto& g : gets) {
    m->mutable_gets()->mutable_keys()->Add(g.begin(), g.end());
    m->add_get_counts(static_cast<uint32_t>(g.size()));
  }
}

TEST(Batches, OperationsTakeEffectInOrderWithinAndAcrossMessages) {
  auto server = start_server();
  ASSERT_NE(server, nullptr);
  auto client = connect(*server);
  v1::BatchRequest first;
  first.set_id(1);
  *first.add_ops() = put_op({5, 6}, {"a5", "a6"});
  *first.add_ops() = get_op({5, 6, 7});
  *first.add_ops() = delete_op({5, 7});
  *first.add_ops() = get_op({5});
  *first.add_ops() = put_op({5}, {"b5"});
  v1::BatchRequest second;
  second.set_id(2);
  *second.add_ops() = get_op({5, 6});
  auto [got, status] = send_batches(*client, {first, second});
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(got.size(), 2u);
  const v1::BatchResponse& a = got[1];
  ASSERT_EQ(a.results_size(), 5);
  for (const auto& r : a.results()) ASSERT_EQ(r.code(), 0) << r.message();
  EXPECT_TRUE(a.results(0).put().created(0));
  EXPECT_EQ(a.results(1).get().values(), "a5a6");
  EXPECT_FALSE(a.results(1).get().found(2));
  EXPECT_TRUE(a.results(2).delete_().deleted(0));
  EXPECT_FALSE(a.results(2).delete_().deleted(1));
  EXPECT_FALSE(a.results(3).get().found(0));
  EXPECT_TRUE(a.results(4).put().created(0));
  const v1::BatchResponse& b = got[2];
  ASSERT_EQ(b.results_size(), 1);
  EXPECT_EQ(b.results(0).get().values(), "b5a6");
}

TEST(Batches, ARefusedOperationLeavesTheOthersOfItsMessageAlone) {
  auto o = test_options();
  o.limits.max_value_bytes = 100;
  auto server = start_server(o);
  ASSERT_NE(server, nullptr);
  auto client = connect(*server);
  v1::BatchRequest m;
  m.set_id(9);
  *m.add_ops() = put_op({1}, {"one"});
  *m.add_ops() = put_op({2, 3}, {"two", std::string(101, 'x')});  // one value over the limit
  m.add_ops();                                                    // carries nothing
  *m.add_ops() = get_op({});                                      // no keys
  *m.add_ops() = get_op({1, 2, 3});
  auto [got, status] = send_batches(*client, {m});
  ASSERT_TRUE(status.ok()) << status.error_message();
  const v1::BatchResponse& r = got[9];
  ASSERT_EQ(r.results_size(), 5);
  EXPECT_EQ(r.results(0).code(), 0);
  EXPECT_EQ(r.results(1).code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(r.results(1).message().find("--max_value_bytes"), std::string::npos) << r.results(1).message();
  EXPECT_FALSE(r.results(1).has_put());
  EXPECT_EQ(r.results(2).code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(r.results(2).message().find("carries no get, put or delete"), std::string::npos);
  EXPECT_EQ(r.results(3).code(), grpc::StatusCode::INVALID_ARGUMENT);
  ASSERT_EQ(r.results(4).code(), 0);
  EXPECT_TRUE(r.results(4).get().found(0));
  EXPECT_FALSE(r.results(4).get().found(1)) << "the refused put wrote key 2";
  EXPECT_FALSE(r.results(4).get().found(2)) << "the refused put wrote key 3";
}

TEST(Batches, AnOperationPastItsTimeoutIsRefusedAndChangesNothing) {
  auto o = test_options();
  o.batcher.max_delay = std::chrono::milliseconds(300);  // hold batches long
  o.batcher.max_batch_keys = 1 << 20;
  auto server = start_server(o);
  ASSERT_NE(server, nullptr);
  auto client = connect(*server);
  v1::BatchRequest m;
  m.set_id(3);
  *m.add_ops() = put_op({70}, {"late"});
  m.mutable_ops(0)->set_timeout_us(20'000);
  *m.add_ops() = put_op({71}, {"patient"});  // no timeout of its own
  v1::BatchRequest late_gets;
  late_gets.set_id(4);
  pack_gets(&late_gets, {{71}});
  late_gets.set_gets_timeout_us(20'000);
  auto [got, status] = send_batches(*client, {m, late_gets});
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(got[3].results_size(), 2);
  EXPECT_EQ(got[3].results(0).code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_EQ(got[3].results(1).code(), 0);
  EXPECT_EQ(got[4].gets().code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_FALSE(got[4].gets().has_get());
  auto read = client->Get(std::vector<uint64_t>{70, 71});
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_FALSE(read->found(0)) << "the late put took effect";
  EXPECT_EQ(read->value(1), "patient");
}

TEST(Batches, PackedGetsTakeEffectAfterTheOperationsOfTheirMessage) {
  auto server = start_server();
  ASSERT_NE(server, nullptr);
  auto client = connect(*server);
  v1::BatchRequest m;
  m.set_id(4);
  pack_gets(&m, {{20, 21}, {22}, {20}});
  *m.add_ops() = put_op({20, 22}, {"twenty", "twenty-two"});
  auto [got, status] = send_batches(*client, {m});
  ASSERT_TRUE(status.ok()) << status.error_message();
  const v1::BatchResponse& r = got[4];
  ASSERT_EQ(r.results_size(), 1);
  EXPECT_EQ(r.results(0).code(), 0);
  ASSERT_TRUE(r.has_gets());
  ASSERT_EQ(r.gets().code(), 0) << r.gets().message();
  const v1::GetResponse& g = r.gets().get();
  ASSERT_EQ(g.found_size(), 4);
  EXPECT_TRUE(g.found(0));
  EXPECT_FALSE(g.found(1));
  EXPECT_TRUE(g.found(2));
  EXPECT_TRUE(g.found(3));
  EXPECT_EQ(g.values(), "twentytwenty-twotwenty");
}

TEST(Batches, PackedGetsWhoseCountsDoNotAddUpAreRefusedAlone) {
  auto server = start_server();
  ASSERT_NE(server, nullptr);
  auto client = connect(*server);
  v1::BatchRequest wrong_sum;
  wrong_sum.set_id(1);
  *wrong_sum.add_ops() = put_op({30}, {"thirty"});
  pack_gets(&wrong_sum, {{30, 31}});
  wrong_sum.set_get_counts(0, 3);
  v1::BatchRequest zero;
  zero.set_id(2);
  pack_gets(&zero, {{30}, {}});
  v1::BatchRequest no_counts;
  no_counts.set_id(3);
  no_counts.mutable_gets()->add_keys(30);
  auto [got, status] = send_batches(*client, {wrong_sum, zero, no_counts});
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(got[1].results(0).code(), 0) << "the message's operation stands alone";
  EXPECT_EQ(got[1].gets().code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(got[1].gets().message().find("add up to 3"), std::string::npos) << got[1].gets().message();
  EXPECT_EQ(got[2].gets().code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(got[2].gets().message().find("get_counts[1] is 0;"), std::string::npos) << got[2].gets().message();
  EXPECT_EQ(got[3].gets().code(), grpc::StatusCode::INVALID_ARGUMENT);
  auto read = client->Get(std::vector<uint64_t>{30});
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->value(0), "thirty");
}

TEST(Batches, ManyStreamsAtOnceMatchAModel) {
  auto server = start_server();
  ASSERT_NE(server, nullptr);
  const uint64_t seed = std::random_device{}();
  constexpr int kStreams = 8, kMessages = 40;
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < kStreams; ++t) {
    threads.emplace_back([&, t] {
      auto client = connect(*server);
      std::mt19937_64 rng(seed + t);
      std::vector<v1::BatchRequest> messages;  // this stream's keys: t + kStreams * i
      for (int m = 0; m < kMessages; ++m) {
        v1::BatchRequest req;
        req.set_id(m);
        const int ops = 1 + static_cast<int>(rng() % 12);
        for (int i = 0; i < ops; ++i) {
          const uint64_t key = t + kStreams * (rng() % 16);
          if (rng() % 3 == 0) {
            const std::string v = absl::StrCat(key, "@", m, ".", i);
            *req.add_ops() = put_op({key}, {v});
          } else {
            *req.add_ops() = get_op({key});
          }
        }
        messages.push_back(req);
      }
      // Replay the stream into a model while checking: every get sees the
      // stream's latest earlier put of its key.
      auto [got, status] = send_batches(*client, messages);
      if (!status.ok() || got.size() != messages.size()) {
        wrong.fetch_add(1);
        ADD_FAILURE() << "seed " << seed << " stream " << t << ": " << status.error_message();
        return;
      }
      std::map<uint64_t, std::string> replay;
      for (int m = 0; m < kMessages; ++m) {
        const auto& req = messages[m];
        const auto& resp = got[m];
        for (int i = 0; i < req.ops_size(); ++i) {
          const auto& op = req.ops(i);
          const auto& r = resp.results(i);
          if (op.has_put()) {
            replay[op.put().keys(0)] = op.put().values();
            continue;
          }
          const uint64_t key = op.get().keys(0);
          auto it = replay.find(key);
          const bool ok = r.code() == 0 && r.get().found(0) == (it != replay.end()) &&
                          (it == replay.end() || r.get().values() == it->second);
          if (!ok && wrong.fetch_add(1) < 5) {
            ADD_FAILURE() << "seed " << seed << " stream " << t << " message " << m << " op " << i << " key " << key;
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

// A generic unary call with raw request bytes.
grpc::Status raw_unary(const server::Server& s, const std::string& method, const std::string& bytes) {
  auto channel = grpc::CreateChannel(absl::StrCat("127.0.0.1:", s.port()), grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::Slice slice(bytes.data(), bytes.size());
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  grpc::Status status;
  stub.UnaryCall(&ctx, method, grpc::StubOptions(), &request, &response, [&](grpc::Status s) {
    std::lock_guard<std::mutex> l(mu);
    status = std::move(s);
    done = true;
    cv.notify_all();
  });
  std::unique_lock<std::mutex> l(mu);
  cv.wait(l, [&] { return done; });
  return status;
}

TEST(Service, BytesThatAreNotAMessageAreInvalidArgumentOnEveryMethodAndCounted) {
  auto server = start_server();
  ASSERT_NE(server, nullptr);
  auto client = connect(*server);
  ASSERT_TRUE(client->Put(std::vector<uint64_t>{1}, std::vector<std::string_view>{"kept"}).ok());
  // A packed key field that claims 16 bytes and carries 3; and a tag of
  // field 0 (never valid).
  const std::string truncated("\x0a\x10\x01\x02\x03", 5);
  const std::string garbage("\x00\xff\xff\xff\xff", 5);
  const std::pair<const char*, const char*> methods[] = {{"Get", "GetRequest"},
                                                         {"Put", "PutRequest"},
                                                         {"Delete", "DeleteRequest"},
                                                         {"Stats", "StatsRequest"},
                                                         {"Shrink", "ShrinkRequest"}};
  for (const auto& [method, type] : methods) {
    for (const std::string* bytes : {&truncated, &garbage}) {
      const grpc::Status s = raw_unary(*server, absl::StrCat("/gphkv.v1.KeyValue/", method), *bytes);
      EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << method << ": " << s.error_message();
      EXPECT_NE(s.error_message().find(type), std::string::npos) << method << ": " << s.error_message();
    }
  }
  auto got = client->Get(std::vector<uint64_t>{1});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->value(0), "kept");
  const std::string page = server->render_metrics();
  EXPECT_NE(page.find("gphkv_requests_total{code=\"INVALID_ARGUMENT\",op=\"get\"} 2"), std::string::npos) << page;
  EXPECT_NE(page.find("gphkv_requests_total{code=\"INVALID_ARGUMENT\",op=\"put\"} 2"), std::string::npos);
}

TEST(Batches, AMessageThatIsNotABatchRequestEndsTheStreamWithInvalidArgument) {
  auto server = start_server();
  ASSERT_NE(server, nullptr);
  auto channel = grpc::CreateChannel(absl::StrCat("127.0.0.1:", server->port()), grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::CompletionQueue cq;
  auto call = stub.PrepareCall(&ctx, "/gphkv.v1.KeyValue/Batches", &cq);
  auto step = [&](intptr_t want) {
    void* tag = nullptr;
    bool ok = false;
    return cq.Next(&tag, &ok) && reinterpret_cast<intptr_t>(tag) == want && ok;
  };
  call->StartCall(reinterpret_cast<void*>(1));
  ASSERT_TRUE(step(1));
  v1::BatchRequest good;
  good.set_id(1);
  *good.add_ops() = put_op({8}, {"eight"});
  const std::string good_bytes = good.SerializeAsString();
  grpc::Slice s1(good_bytes.data(), good_bytes.size());
  grpc::ByteBuffer b1(&s1, 1);
  call->Write(b1, reinterpret_cast<void*>(2));
  ASSERT_TRUE(step(2));
  grpc::ByteBuffer answer;
  call->Read(&answer, reinterpret_cast<void*>(3));
  ASSERT_TRUE(step(3)) << "the valid message is answered";
  const std::string bad("\x12\x7f\x01", 3);  // ops: a length past the end
  grpc::Slice s2(bad.data(), bad.size());
  grpc::ByteBuffer b2(&s2, 1);
  call->Write(b2, reinterpret_cast<void*>(4));
  ASSERT_TRUE(step(4));
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(5));
  ASSERT_TRUE(step(5));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
  EXPECT_NE(status.error_message().find("message 2 of this Batches stream"), std::string::npos)
      << status.error_message();
  cq.Shutdown();
  void* tag;
  bool ok;
  while (cq.Next(&tag, &ok)) {
  }
  auto client = connect(*server);
  auto got = client->Get(std::vector<uint64_t>{8});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->value(0), "eight");
}

}  // namespace
}  // namespace gphkv

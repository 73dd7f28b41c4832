// How the coalescing client puts byte-key requests into Batches messages,
// against a scripted server that records each message and answers every get
// with its key's own name as the value: a message's packed gets hold one kind
// of key, a get of the other kind rides as an operation of the same message,
// a put or delete after packed gets starts the next message, and every
// request gets its own slice of the answer. No gphkv server needed.
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <grpc/grpc.h>
#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "gphkv/client/client.h"
#include "gtest/gtest.h"

namespace gphkv {
namespace {

const bool kGrpcKept = (grpc_init(), true);

// A key's name: "u:N" for a uint64 key, "b:BYTES" for a byte key.
std::vector<std::string> names(const v1::GetRequest& g) {
  std::vector<std::string> out;
  for (uint64_t k : g.keys()) out.push_back(absl::StrCat("u:", k));
  size_t at = 0;
  for (uint32_t n : g.key_lengths()) {
    out.push_back("b:" + g.key_bytes().substr(at, n));
    at += n;
  }
  return out;
}

void answer_get(const v1::GetRequest& g, v1::GetResponse* r) {
  for (const std::string& name : names(g)) {
    r->add_found(true);
    r->add_value_lengths(static_cast<uint32_t>(name.size()));
    r->mutable_values()->append(name);
  }
}

// Records every message; holds the first one's answer for `hold_first`.
class RecordingBatches final : public v1::KeyValue::CallbackService {
 public:
  std::chrono::milliseconds hold_first{0};
  std::mutex mu;
  std::vector<v1::BatchRequest> seen;

  grpc::ServerBidiReactor<v1::BatchRequest, v1::BatchResponse>* Batches(grpc::CallbackServerContext*) override {
    class Reactor : public grpc::ServerBidiReactor<v1::BatchRequest, v1::BatchResponse> {
     public:
      explicit Reactor(RecordingBatches* svc) : svc_(svc) { StartRead(&req_); }
      void OnReadDone(bool ok) override {
        if (!ok) {
          Finish(grpc::Status::OK);
          return;
        }
        bool first;
        {
          std::lock_guard<std::mutex> l(svc_->mu);
          first = svc_->seen.empty();
          svc_->seen.push_back(req_);
        }
        if (first) std::this_thread::sleep_for(svc_->hold_first);
        resp_.Clear();
        resp_.set_id(req_.id());
        for (const auto& op : req_.ops()) {
          auto* r = resp_.add_results();
          if (op.has_get()) answer_get(op.get(), r->mutable_get());
          for (int i = 0; op.has_put() && i < op.put().keys_size() + op.put().key_lengths_size(); ++i) {
            r->mutable_put()->add_created(true);
          }
          for (int i = 0; op.has_delete_() && i < op.delete_().keys_size() + op.delete_().key_lengths_size(); ++i) {
            r->mutable_delete_()->add_deleted(true);
          }
        }
        if (req_.get_counts_size() > 0) answer_get(req_.gets(), resp_.mutable_gets()->mutable_get());
        StartWrite(&resp_);
      }
      void OnWriteDone(bool) override { StartRead(&req_); }
      void OnDone() override { delete this; }

     private:
      RecordingBatches* svc_;
      v1::BatchRequest req_;
      v1::BatchResponse resp_;
    };
    return new Reactor(this);
  }
};

// Async requests of one thread and their answers, checked by name.
struct Answers {
  std::mutex mu;
  std::condition_variable cv;
  int done = 0;
  std::vector<std::string> wrong;

  std::function<void(absl::StatusOr<GetResult>)> expect(std::vector<std::string> want) {
    return [this, want = std::move(want)](absl::StatusOr<GetResult> r) {
      std::string problem;
      if (!r.ok()) {
        problem = absl::StrCat(want[0], ": ", r.status().ToString());
      } else if (r->size() != want.size()) {
        problem = absl::StrCat(want[0], ": ", r->size(), " results");
      } else {
        for (size_t i = 0; i < want.size(); ++i) {
          if (!r->found(i) || r->value(i) != want[i])
            problem = absl::StrCat(want[i], " answered ", std::string(r->value(i)));
        }
      }
      finish(problem);
    };
  }
  std::function<void(absl::StatusOr<std::vector<bool>>)> expect_write(std::string what) {
    return [this, what](absl::StatusOr<std::vector<bool>> r) {
      finish(r.ok() ? "" : absl::StrCat(what, ": ", r.status().ToString()));
    };
  }
  void finish(const std::string& problem) {
    std::lock_guard<std::mutex> l(mu);
    if (!problem.empty()) wrong.push_back(problem);
    ++done;
    cv.notify_all();
  }
  bool wait_for(int n) {
    std::unique_lock<std::mutex> l(mu);
    return cv.wait_for(l, std::chrono::seconds(10), [&] { return done == n; });
  }
};

TEST(CoalescerByteKeys, PackedGetsHoldOneKindAndTheOtherRidesAsAnOperation) {
  RecordingBatches svc;
  svc.hold_first = std::chrono::milliseconds(300);
  grpc::ServerBuilder b;
  int port = 0;
  b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  b.RegisterService(&svc);
  auto server = b.BuildAndStart();
  ASSERT_NE(server, nullptr);
  ClientOptions o;
  o.coalesce.max_in_flight = 1;  // while the first message waits, the rest queue behind it
  auto client = Client::Connect(absl::StrCat("127.0.0.1:", port), o);
  const std::string nul("k\0ey", 4), longest(250, 'z');
  Answers a;
  const uint64_t seven = 7;
  client->GetAsync({&seven, 1}, false, a.expect({"u:7"}));  // goes alone, answered late
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  // Message 2: byte-key gets packed; a uint64 get joins as an operation.
  client->GetAsync(std::vector<std::string_view>{"user:1", nul}, false, a.expect({"b:user:1", "b:" + nul}));
  client->GetAsync(std::vector<uint64_t>{42, 43}, false, a.expect({"u:42", "u:43"}));
  client->GetAsync(std::vector<std::string_view>{"42", longest}, false, a.expect({"b:42", "b:" + longest}));
  // A put after packed gets starts message 3, whose first get sets its kind.
  client->PutAsync(std::vector<std::string_view>{"user:1"}, std::vector<std::string_view>{"v"}, a.expect_write("put"));
  client->GetAsync(std::vector<uint64_t>{1}, false, a.expect({"u:1"}));
  client->GetAsync(std::vector<std::string_view>{"user:2"}, false, a.expect({"b:user:2"}));
  client->GetAsync(std::vector<std::string_view>{"user:3"}, /*exists_only=*/true, a.expect({"b:user:3"}));
  ASSERT_TRUE(a.wait_for(8));
  EXPECT_TRUE(a.wrong.empty()) << a.wrong[0];

  std::lock_guard<std::mutex> l(svc.mu);
  ASSERT_EQ(svc.seen.size(), 3u);
  const v1::BatchRequest& m2 = svc.seen[1];
  EXPECT_EQ(names(m2.gets()), (std::vector<std::string>{"b:user:1", "b:" + nul, "b:42", "b:" + longest}));
  EXPECT_EQ(std::vector<uint32_t>(m2.get_counts().begin(), m2.get_counts().end()), (std::vector<uint32_t>{2, 2}));
  ASSERT_EQ(m2.ops_size(), 1);
  EXPECT_EQ(names(m2.ops(0).get()), (std::vector<std::string>{"u:42", "u:43"}));
  const v1::BatchRequest& m3 = svc.seen[2];
  ASSERT_EQ(m3.ops_size(), 3);
  EXPECT_TRUE(m3.ops(0).has_put());
  EXPECT_EQ(m3.ops(0).put().key_bytes(), "user:1");
  EXPECT_EQ(m3.ops(0).put().keys_size(), 0);
  EXPECT_EQ(names(m3.ops(1).get()), (std::vector<std::string>{"b:user:2"}));  // the packed gets are uint64
  EXPECT_EQ(m3.ops(2).get().value_mode(), v1::VALUE_MODE_EXISTS);
  EXPECT_EQ(names(m3.gets()), (std::vector<std::string>{"u:1"}));
  client.reset();
  server->Shutdown(std::chrono::system_clock::now());
}

}  // namespace
}  // namespace gphkv

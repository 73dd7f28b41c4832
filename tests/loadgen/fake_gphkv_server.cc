#include "tests/loadgen/fake_gphkv_server.h"

#include <condition_variable>
#include <thread>
#include <unordered_map>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "gphkv/v1/gphkv.grpc.pb.h"

namespace gphkv::loadgen::testing {

namespace v1 = ::gphkv::v1;

struct FakeGphkvServer::Impl final : public v1::KeyValue::CallbackService {
  mutable std::mutex mu;
  std::unordered_map<uint64_t, uint32_t> sizes;  // key -> value length
  std::vector<std::string> log;
  Clock::time_point stall_from{}, stall_until{};
  int fail_puts = 0;
  // Held calls: answered by the releaser thread at stall_until.
  std::vector<grpc::ServerUnaryReactor*> held;
  std::condition_variable cv;
  bool stopping = false;
  std::thread releaser;
  std::unique_ptr<grpc::Server> server;
  std::string address;

  void Record(const char* what, const google::protobuf::RepeatedField<uint64_t>& keys) {
    std::string line = what;
    for (uint64_t k : keys) absl::StrAppend(&line, " ", k);
    log.push_back(std::move(line));
  }

  grpc::ServerUnaryReactor* Answer(grpc::CallbackServerContext* ctx) {
    auto* reactor = ctx->DefaultReactor();
    const auto now = Clock::now();
    std::lock_guard<std::mutex> lock(mu);
    if (now >= stall_from && now < stall_until) {
      held.push_back(reactor);
      cv.notify_all();
    } else {
      reactor->Finish(grpc::Status::OK);
    }
    return reactor;
  }

  grpc::ServerUnaryReactor* Get(grpc::CallbackServerContext* ctx, const v1::GetRequest* req,
                                v1::GetResponse* resp) override {
    {
      std::lock_guard<std::mutex> lock(mu);
      Record("get", req->keys());
      for (uint64_t k : req->keys()) {
        auto it = sizes.find(k);
        const bool found = it != sizes.end();
        resp->add_found(found);
        resp->add_value_lengths(found ? it->second : 0);
        if (found) resp->mutable_values()->append(it->second, 'v');
      }
    }
    return Answer(ctx);
  }

  grpc::ServerUnaryReactor* Put(grpc::CallbackServerContext* ctx, const v1::PutRequest* req,
                                v1::PutResponse* resp) override {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (fail_puts != 0) {
        auto* r = ctx->DefaultReactor();
        r->Finish(grpc::Status(static_cast<grpc::StatusCode>(fail_puts), "refused by the test"));
        return r;
      }
    }
    if (req->keys_size() != req->value_lengths_size()) {
      auto* r = ctx->DefaultReactor();
      r->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "keys and value_lengths differ in count"));
      return r;
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      Record("put", req->keys());
      for (int i = 0; i < req->keys_size(); ++i) {
        resp->add_created(sizes.insert_or_assign(req->keys(i), req->value_lengths(i)).second);
      }
    }
    return Answer(ctx);
  }

  grpc::ServerUnaryReactor* Delete(grpc::CallbackServerContext* ctx, const v1::DeleteRequest* req,
                                   v1::DeleteResponse* resp) override {
    {
      std::lock_guard<std::mutex> lock(mu);
      Record("delete", req->keys());
      for (uint64_t k : req->keys()) resp->add_deleted(sizes.erase(k) > 0);
    }
    return Answer(ctx);
  }

  grpc::ServerUnaryReactor* Stats(grpc::CallbackServerContext* ctx, const v1::StatsRequest*,
                                  v1::StatsResponse* resp) override {
    {
      std::lock_guard<std::mutex> lock(mu);
      resp->set_backend("fake");
      resp->set_keys(sizes.size());
    }
    auto* r = ctx->DefaultReactor();
    r->Finish(grpc::Status::OK);
    return r;
  }

  void ReleaseLoop() {
    std::unique_lock<std::mutex> lock(mu);
    while (!stopping) {
      if (held.empty()) {
        cv.wait(lock);
        continue;
      }
      if (Clock::now() < stall_until) {
        cv.wait_until(lock, stall_until);
        continue;
      }
      for (auto* r : held) r->Finish(grpc::Status::OK);
      held.clear();
    }
    for (auto* r : held) r->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "shutting down"));
    held.clear();
  }
};

FakeGphkvServer::FakeGphkvServer() : impl_(std::make_unique<Impl>()) {
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(impl_.get());
  builder.SetMaxReceiveMessageSize(-1);
  impl_->server = builder.BuildAndStart();
  impl_->address = absl::StrCat("127.0.0.1:", port);
  impl_->releaser = std::thread([this] { impl_->ReleaseLoop(); });
}

FakeGphkvServer::~FakeGphkvServer() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stopping = true;
    impl_->cv.notify_all();
  }
  impl_->releaser.join();
  impl_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
}

const std::string& FakeGphkvServer::address() const { return impl_->address; }

void FakeGphkvServer::StallBetween(Clock::time_point from, Clock::time_point until) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->stall_from = from;
  impl_->stall_until = until;
}

void FakeGphkvServer::FailPutsWith(int code) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->fail_puts = code;
}

std::vector<std::string> FakeGphkvServer::Log() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->log;
}

size_t FakeGphkvServer::stored() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->sizes.size();
}

}  // namespace gphkv::loadgen::testing

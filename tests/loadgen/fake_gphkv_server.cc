#include "tests/loadgen/fake_gphkv_server.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <functional>
#include <thread>
#include <unordered_map>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "gphkv/v1/gphkv.grpc.pb.h"

namespace gphkv::loadgen::testing {

namespace v1 = ::gphkv::v1;

struct FakeGphkvServer::Impl final : public v1::KeyValue::CallbackService {
  // An answer to send: now, or at the end of a stall window; `shutting_down`
  // when the server goes away first.
  using Answer = std::function<void(bool shutting_down)>;

  mutable std::mutex mu;
  std::unordered_map<uint64_t, std::string> values;
  bool keep_first_values = false;
  std::vector<std::string> log;
  Clock::time_point stall_from{}, stall_until{};
  int fail_puts = 0;
  uint64_t pipeline_id_shift = 0;
  int pipeline_streams = 0;
  int max_pipeline_in_flight = 0;
  // Held answers: sent by the releaser thread at stall_until.
  std::vector<Answer> held;
  std::condition_variable cv;
  bool stopping = false;
  std::thread releaser;
  std::unique_ptr<grpc::Server> server;
  std::string address;

  // Under mu.
  void Record(const char* what, const google::protobuf::RepeatedField<uint64_t>& keys) {
    std::string line = what;
    for (uint64_t k : keys) absl::StrAppend(&line, " ", k);
    log.push_back(std::move(line));
  }

  // The map's side of each operation, shared by the unary calls and the
  // Pipeline stream.
  void DoGet(const v1::GetRequest& req, v1::GetResponse* resp) {
    std::lock_guard<std::mutex> lock(mu);
    Record("get", req.keys());
    for (uint64_t k : req.keys()) {
      auto it = values.find(k);
      const bool found = it != values.end();
      resp->add_found(found);
      resp->add_value_lengths(found ? it->second.size() : 0);
      if (found) resp->mutable_values()->append(it->second);
    }
  }

  grpc::Status DoPut(const v1::PutRequest& req, v1::PutResponse* resp) {
    std::lock_guard<std::mutex> lock(mu);
    if (fail_puts != 0) return grpc::Status(static_cast<grpc::StatusCode>(fail_puts), "refused by the test");
    if (req.keys_size() != req.value_lengths_size()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "keys and value_lengths differ in count");
    }
    Record("put", req.keys());
    size_t at = 0;
    for (int i = 0; i < req.keys_size(); ++i) {
      std::string value = req.values().substr(std::min(at, req.values().size()), req.value_lengths(i));
      at += req.value_lengths(i);
      if (keep_first_values) {
        resp->add_created(values.try_emplace(req.keys(i), std::move(value)).second);
      } else {
        resp->add_created(values.insert_or_assign(req.keys(i), std::move(value)).second);
      }
    }
    return grpc::Status::OK;
  }

  void DoDelete(const v1::DeleteRequest& req, v1::DeleteResponse* resp) {
    std::lock_guard<std::mutex> lock(mu);
    Record("delete", req.keys());
    for (uint64_t k : req.keys()) resp->add_deleted(values.erase(k) > 0);
  }

  v1::PipelineResponse DoPipeline(const v1::PipelineRequest& req) {
    v1::PipelineResponse resp;
    grpc::Status status;
    switch (req.op_case()) {
      case v1::PipelineRequest::kGet: DoGet(req.get(), resp.mutable_get()); break;
      case v1::PipelineRequest::kPut: status = DoPut(req.put(), resp.mutable_put()); break;
      case v1::PipelineRequest::kDelete: DoDelete(req.delete_(), resp.mutable_delete_()); break;
      default: status = grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "no operation"); break;
    }
    if (!status.ok()) {
      resp.Clear();
      resp.set_code(status.error_code());
      resp.set_message(status.error_message());
    }
    std::lock_guard<std::mutex> lock(mu);
    resp.set_id(req.id() + pipeline_id_shift);
    return resp;
  }

  // Sends `answer` now, or holds it when it arrives inside the stall window.
  void Deliver(Answer answer) {
    {
      const auto now = Clock::now();
      std::lock_guard<std::mutex> lock(mu);
      if (!stopping && now >= stall_from && now < stall_until) {
        held.push_back(std::move(answer));
        cv.notify_all();
        return;
      }
    }
    answer(false);
  }

  grpc::ServerUnaryReactor* FinishUnary(grpc::CallbackServerContext* ctx, const grpc::Status& status) {
    auto* reactor = ctx->DefaultReactor();
    if (!status.ok()) {
      reactor->Finish(status);  // refusals are not held
      return reactor;
    }
    Deliver([reactor](bool shutting_down) {
      reactor->Finish(shutting_down ? grpc::Status(grpc::StatusCode::UNAVAILABLE, "shutting down") : grpc::Status::OK);
    });
    return reactor;
  }

  grpc::ServerUnaryReactor* Get(grpc::CallbackServerContext* ctx, const v1::GetRequest* req,
                                v1::GetResponse* resp) override {
    DoGet(*req, resp);
    return FinishUnary(ctx, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* Put(grpc::CallbackServerContext* ctx, const v1::PutRequest* req,
                                v1::PutResponse* resp) override {
    return FinishUnary(ctx, DoPut(*req, resp));
  }

  grpc::ServerUnaryReactor* Delete(grpc::CallbackServerContext* ctx, const v1::DeleteRequest* req,
                                   v1::DeleteResponse* resp) override {
    DoDelete(*req, resp);
    return FinishUnary(ctx, grpc::Status::OK);
  }

  grpc::ServerBidiReactor<v1::PipelineRequest, v1::PipelineResponse>* Pipeline(grpc::CallbackServerContext*) override;

  grpc::ServerUnaryReactor* Stats(grpc::CallbackServerContext* ctx, const v1::StatsRequest*,
                                  v1::StatsResponse* resp) override {
    {
      std::lock_guard<std::mutex> lock(mu);
      resp->set_backend("fake");
      resp->set_keys(values.size());
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
      std::vector<Answer> due;
      due.swap(held);
      lock.unlock();
      for (auto& answer : due) answer(false);
      lock.lock();
    }
    std::vector<Answer> left;
    left.swap(held);
    lock.unlock();
    for (auto& answer : left) answer(true);
  }
};

namespace {

// One Pipeline stream: every operation is answered (or held, in a stall)
// as it is read; answers are written one at a time, in the order they are
// released. The stream ends once the client half-closed and all is answered.
class FakePipeline final : public grpc::ServerBidiReactor<v1::PipelineRequest, v1::PipelineResponse> {
 public:
  explicit FakePipeline(FakeGphkvServer::Impl* impl) : impl_(impl) { StartRead(&request_); }

  void OnReadDone(bool ok) override {
    if (!ok) {
      bool finish;
      {
        std::lock_guard<std::mutex> lock(mu_);
        reads_done_ = true;
        finish = ReadyToFinish();
      }
      if (finish) Finish(grpc::Status::OK);
      return;
    }
    v1::PipelineResponse answer = impl_->DoPipeline(request_);
    int in_flight;
    {
      std::lock_guard<std::mutex> lock(mu_);
      in_flight = ++outstanding_;
    }
    {
      std::lock_guard<std::mutex> lock(impl_->mu);
      impl_->max_pipeline_in_flight = std::max(impl_->max_pipeline_in_flight, in_flight);
    }
    impl_->Deliver(
        [this, answer = std::move(answer)](bool shutting_down) mutable { Send(std::move(answer), shutting_down); });
    StartRead(&request_);
  }

  void OnWriteDone(bool ok) override {
    bool finish;
    {
      std::lock_guard<std::mutex> lock(mu_);
      writes_.pop_front();
      writing_ = false;
      if (!ok) writes_.clear();  // the client is gone
      WriteNext();
      finish = ReadyToFinish();
    }
    if (finish) Finish(grpc::Status::OK);
  }

  void OnDone() override { delete this; }

 private:
  void Send(v1::PipelineResponse answer, bool drop) {
    bool finish;
    {
      std::lock_guard<std::mutex> lock(mu_);
      --outstanding_;
      if (!drop) writes_.push_back(std::move(answer));
      WriteNext();
      finish = ReadyToFinish();
    }
    if (finish) Finish(grpc::Status::OK);
  }

  // Under mu_.
  void WriteNext() {
    if (writing_ || writes_.empty()) return;
    writing_ = true;
    StartWrite(&writes_.front());
  }

  // Under mu_: true once, when the stream can end.
  bool ReadyToFinish() {
    if (!reads_done_ || outstanding_ > 0 || writing_ || finished_) return false;
    finished_ = true;
    return true;
  }

  FakeGphkvServer::Impl* impl_;
  v1::PipelineRequest request_;
  std::mutex mu_;
  std::deque<v1::PipelineResponse> writes_;  // front is being written when writing_
  int outstanding_ = 0;                      // read, not yet released for writing
  bool writing_ = false, reads_done_ = false, finished_ = false;
};

}  // namespace

grpc::ServerBidiReactor<v1::PipelineRequest, v1::PipelineResponse>* FakeGphkvServer::Impl::Pipeline(
    grpc::CallbackServerContext*) {
  {
    std::lock_guard<std::mutex> lock(mu);
    ++pipeline_streams;
  }
  return new FakePipeline(this);
}

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

void FakeGphkvServer::KeepFirstValues() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->keep_first_values = true;
}

void FakeGphkvServer::ShiftPipelineIdsBy(uint64_t offset) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->pipeline_id_shift = offset;
}

std::vector<std::string> FakeGphkvServer::Log() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->log;
}

size_t FakeGphkvServer::stored() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->values.size();
}

int FakeGphkvServer::pipeline_streams() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->pipeline_streams;
}

int FakeGphkvServer::max_pipeline_in_flight() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->max_pipeline_in_flight;
}

}  // namespace gphkv::loadgen::testing

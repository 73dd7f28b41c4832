#include "loadgen/gphkv_unary_session.h"

#include <unordered_set>
#include <vector>

#include "gphkv/v1/gphkv.grpc.pb.h"
#include "loadgen/gphkv_messages.h"
#include "loadgen/gphkv_target.h"
#include "loadgen/timed_completion_queue.h"

namespace gphkv::loadgen {
namespace {

namespace v1 = ::gphkv::v1;

// One call in flight: everything gRPC writes into lives here until Finish
// is delivered.
struct Call {
  uint64_t tag = 0;
  OpType type = OpType::kGet;
  uint64_t sent_bytes = 0;
  grpc::ClientContext context;
  grpc::Status status;
  v1::GetRequest get_request;
  v1::GetResponse get_response;
  v1::PutRequest put_request;
  v1::PutResponse put_response;
  v1::DeleteRequest delete_request;
  v1::DeleteResponse delete_response;
  std::unique_ptr<grpc::ClientAsyncResponseReader<v1::GetResponse>> get_reader;
  std::unique_ptr<grpc::ClientAsyncResponseReader<v1::PutResponse>> put_reader;
  std::unique_ptr<grpc::ClientAsyncResponseReader<v1::DeleteResponse>> delete_reader;
};

class UnarySession final : public Session {
 public:
  UnarySession(const std::string& address, size_t connections, const ValuePool* values) : values_(values) {
    for (size_t i = 0; i < connections; ++i) stubs_.push_back(v1::KeyValue::NewStub(MakeGphkvChannel(address)));
  }

  ~UnarySession() override {
    // Calls still in flight (a drain that timed out) are cancelled; the
    // queue must then be drained of every tag before it can be destroyed.
    for (Call* c : in_flight_) c->context.TryCancel();
    auto forget = [this](void* event, bool) {
      Call* c = static_cast<Call*>(event);
      in_flight_.erase(c);
      delete c;
    };
    queue_.Settle([this] { return !in_flight_.empty(); }, std::chrono::seconds(5), forget);
    queue_.Shutdown(forget);
  }

  size_t connections() const override { return stubs_.size(); }

  void Start(size_t connection, const Op& op, uint64_t tag) override {
    auto* c = new Call;
    c->tag = tag;
    c->type = op.type;
    v1::KeyValue::Stub& stub = *stubs_[connection % stubs_.size()];
    switch (op.type) {
      case OpType::kGet: {
        FillGetRequest(op, &c->get_request);
        c->get_reader = stub.PrepareAsyncGet(&c->context, c->get_request, queue_.cq());
        c->get_reader->StartCall();
        c->get_reader->Finish(&c->get_response, &c->status, c);
        break;
      }
      case OpType::kPut: {
        c->sent_bytes = FillPutRequest(op, *values_, &c->put_request);
        c->put_reader = stub.PrepareAsyncPut(&c->context, c->put_request, queue_.cq());
        c->put_reader->StartCall();
        c->put_reader->Finish(&c->put_response, &c->status, c);
        break;
      }
      case OpType::kDelete: {
        FillDeleteRequest(op, &c->delete_request);
        c->delete_reader = stub.PrepareAsyncDelete(&c->context, c->delete_request, queue_.cq());
        c->delete_reader->StartCall();
        c->delete_reader->Finish(&c->delete_response, &c->status, c);
        break;
      }
    }
    in_flight_.insert(c);
  }

 protected:
  int PollImpl(Clock::time_point deadline, DoneFn done, void* ctx) override {
    // Every event is a call's Finish: one event, one completion.
    return queue_.Next(deadline, [&](void* event, bool) {
      Call* c = static_cast<Call*>(event);
      in_flight_.erase(c);
      done(ctx, c->tag, ResultOf(*c));
      delete c;
    });
  }

 private:
  static OpResult ResultOf(const Call& c) {
    if (!c.status.ok()) return FailedOp(c.status.error_code());
    switch (c.type) {
      case OpType::kGet: return GetResult(c.get_response);
      case OpType::kPut: return PutResult(c.put_response, c.sent_bytes);
      case OpType::kDelete: return DeleteResult(c.delete_response);
    }
    return OpResult{};
  }

  const ValuePool* values_;
  std::vector<std::unique_ptr<v1::KeyValue::Stub>> stubs_;
  TimedCompletionQueue queue_;
  std::unordered_set<Call*> in_flight_;
};

}  // namespace

std::unique_ptr<Session> MakeGphkvUnarySession(const std::string& address, size_t connections,
                                               const ValuePool* values) {
  return std::make_unique<UnarySession>(address, connections, values);
}

}  // namespace gphkv::loadgen

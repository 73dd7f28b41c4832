#include "loadgen/gphkv_unary_session.h"

#include <optional>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "gphkv/client/shard_router.h"
#include "gphkv/v1/gphkv.grpc.pb.h"
#include "loadgen/gphkv_messages.h"
#include "loadgen/gphkv_target.h"
#include "loadgen/timed_completion_queue.h"

namespace gphkv::loadgen {
namespace {

namespace v1 = ::gphkv::v1;

// An op split over shards: done when its last part is.
struct SplitOp {
  uint64_t tag = 0;
  size_t parts_left = 0;
  OpResult result;  // the parts' answers added up
};

// One call in flight: everything gRPC writes into lives here until Finish
// is delivered.
struct Call {
  uint64_t tag = 0;
  SplitOp* split = nullptr;  // the op this call is a part of, if it was split
  OpType type = OpType::kGet;
  std::vector<uint64_t> ids;  // a get's keys as ids (its request may name them by bytes)
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
  UnarySession(const GphkvServers& servers, size_t connections, const ValuePool* values, bool inspect_reads,
               std::optional<ByteKeyNames> byte_keys)
      : values_(values),
        inspect_(inspect_reads ? values : nullptr),
        connections_(connections),
        router_(servers.shards.shards),
        byte_keys_(byte_keys) {
    for (const std::string& shard : servers.shards.shards) {
      for (size_t i = 0; i < connections; ++i) {
        stubs_.push_back(v1::KeyValue::NewStub(MakeGphkvChannel(shard, servers.tls)));
      }
    }
  }

  ~UnarySession() override {
    // Calls still in flight (a drain that timed out) are cancelled; the
    // queue must then be drained of every tag before it can be destroyed.
    for (Call* c : in_flight_) c->context.TryCancel();
    auto forget = [this](void* event, bool) {
      Call* c = static_cast<Call*>(event);
      in_flight_.erase(c);
      if (c->split != nullptr && --c->split->parts_left == 0) delete c->split;
      delete c;
    };
    queue_.Settle([this] { return !in_flight_.empty(); }, std::chrono::seconds(5), forget);
    queue_.Shutdown(forget);
  }

  size_t connections() const override { return connections_; }

  void Start(size_t connection, const Op& op, uint64_t tag) override {
    connection %= connections_;
    if (router_.shards() == 1) return StartCall(0, connection, op, tag, nullptr);
    // The op's keys (and value sizes) by shard, in request order.
    parts_.assign(router_.shards(), Op{});
    size_t used = 0;
    for (size_t i = 0; i < op.keys.size(); ++i) {
      Op& part = parts_[shard_of(op.keys[i])];
      used += part.keys.empty();
      part.type = op.type;
      part.keys.push_back(op.keys[i]);
      if (op.type == OpType::kPut) part.value_sizes.push_back(op.value_sizes[i]);
    }
    if (used <= 1) {
      const size_t shard = op.keys.empty() ? 0 : shard_of(op.keys[0]);
      return StartCall(shard, connection, op, tag, nullptr);
    }
    auto* split = new SplitOp{tag, used, OpResult{}};
    split->result.ok = true;
    for (size_t shard = 0; shard < parts_.size(); ++shard) {
      if (!parts_[shard].keys.empty()) StartCall(shard, connection, parts_[shard], tag, split);
    }
  }

 protected:
  int PollImpl(Clock::time_point deadline, DoneFn done, void* ctx) override {
    // Every event is a call's Finish; a split op completes with its last part.
    int completed = 0;
    queue_.Next(deadline, [&](void* event, bool) {
      Call* c = static_cast<Call*>(event);
      in_flight_.erase(c);
      OpResult r = ResultOf(*c);
      if (c->split == nullptr) {
        done(ctx, c->tag, r);
        ++completed;
      } else if (AddPart(c->split, std::move(r))) {
        done(ctx, c->split->tag, c->split->result);
        ++completed;
        delete c->split;
      }
      delete c;
    });
    return completed;
  }

 private:
  // The shard of a key: by its id, or by the byte key it names, as the
  // sharded client routes it.
  size_t shard_of(uint64_t id) const {
    return byte_keys_ ? router_.shard_of(std::string_view(byte_keys_->Name(id))) : router_.shard_of(id);
  }

  // Sends `op` (or the part of an op) to `shard` on the driver's connection.
  void StartCall(size_t shard, size_t connection, const Op& op, uint64_t tag, SplitOp* split) {
    auto* c = new Call;
    c->tag = tag;
    c->split = split;
    c->type = op.type;
    v1::KeyValue::Stub& stub = *stubs_[shard * connections_ + connection];
    switch (op.type) {
      case OpType::kGet: {
        FillGetRequest(op, &c->get_request, names());
        c->ids = op.keys;
        c->get_reader = stub.PrepareAsyncGet(&c->context, c->get_request, queue_.cq());
        c->get_reader->StartCall();
        c->get_reader->Finish(&c->get_response, &c->status, c);
        break;
      }
      case OpType::kPut: {
        c->sent_bytes = FillPutRequest(op, *values_, &c->put_request, names());
        c->put_reader = stub.PrepareAsyncPut(&c->context, c->put_request, queue_.cq());
        c->put_reader->StartCall();
        c->put_reader->Finish(&c->put_response, &c->status, c);
        break;
      }
      case OpType::kDelete: {
        FillDeleteRequest(op, &c->delete_request, names());
        c->delete_reader = stub.PrepareAsyncDelete(&c->context, c->delete_request, queue_.cq());
        c->delete_reader->StartCall();
        c->delete_reader->Finish(&c->delete_response, &c->status, c);
        break;
      }
    }
    in_flight_.insert(c);
  }

  // Adds a part's answer to its op's; true when it was the last part.
  static bool AddPart(SplitOp* split, OpResult part) {
    OpResult& r = split->result;
    r.found += part.found;
    r.value_bytes += part.value_bytes;
    r.seen.insert(r.seen.end(), part.seen.begin(), part.seen.end());
    if (!part.ok && r.ok) {
      r.ok = false;
      r.error = part.error;
    }
    return --split->parts_left == 0;
  }

  OpResult ResultOf(const Call& c) const {
    if (!c.status.ok()) return FailedOp(c.status.error_code());
    switch (c.type) {
      case OpType::kGet: return GetOpResult(c.get_response, c.ids, inspect_);
      case OpType::kPut: return PutOpResult(c.put_response, c.sent_bytes);
      case OpType::kDelete: return DeleteOpResult(c.delete_response);
    }
    return OpResult{};
  }

  const ValuePool* values_;
  const ValuePool* inspect_;  // null: gets' values are not read back
  const size_t connections_;
  const ShardRouter router_;
  // stubs_[shard * connections_ + connection]
  std::vector<std::unique_ptr<v1::KeyValue::Stub>> stubs_;
  const ByteKeyNames* names() const { return byte_keys_ ? &*byte_keys_ : nullptr; }

  const std::optional<ByteKeyNames> byte_keys_;  // --key_format=bytes|tao
  std::vector<Op> parts_;                        // Start's scratch: an op's keys by shard
  TimedCompletionQueue queue_;
  std::unordered_set<Call*> in_flight_;
};

}  // namespace

std::unique_ptr<Session> MakeGphkvUnarySession(const GphkvServers& servers, size_t connections, const ValuePool* values,
                                               bool inspect_reads, std::optional<ByteKeyNames> byte_keys) {
  return std::make_unique<UnarySession>(servers, connections, values, inspect_reads, byte_keys);
}

}  // namespace gphkv::loadgen

// One queued operation: a get, put or delete of one request (a unary RPC, a
// pipelined op or one operation of a batch message), or an operator's shrink
// request, with the request it reads, the response it fills and the callback
// that answers it. Plain protobuf messages: the batcher and executor know
// nothing of gRPC.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <variant>

#include "absl/status/status.h"
#include "gphkv/v1/gphkv.pb.h"

namespace gphkv::server {

using Clock = std::chrono::steady_clock;

// The request and the response of each kind of operation. Both belong to the
// caller and stay valid until the call's `done` has run.
struct GetOp {
  const v1::GetRequest* request;
  v1::GetResponse* response;
  // The packed gets of a Batches message: many requests' keys, validated as
  // such (validate_packed_gets) instead of as one request.
  bool packed = false;
};
struct PutOp {
  const v1::PutRequest* request;
  v1::PutResponse* response;
};
struct DeleteOp {
  const v1::DeleteRequest* request;
  v1::DeleteResponse* response;
};
// Goes through the queue like the others because only the executor thread
// may touch the store; it carries no keys.
struct ShrinkOp {
  v1::ShrinkResponse* response;
};

// The order of the alternatives is OpKind's.
using Operation = std::variant<GetOp, PutOp, DeleteOp, ShrinkOp>;
enum class OpKind : uint8_t { kGet = 0, kPut = 1, kDelete = 2, kShrink = 3 };

struct Call {
  Operation op;

  // A call whose deadline passed before its batch ran is answered
  // DEADLINE_EXCEEDED and changes nothing.
  Clock::time_point deadline = Clock::time_point::max();
  Clock::time_point enqueued{};

  // Runs exactly once, on the executor thread or a completion thread, after
  // the call's operations took effect (OK) or were refused (then nothing
  // changed).
  std::function<void(absl::Status)> done;

  OpKind kind() const { return static_cast<OpKind>(op.index()); }
  const GetOp& get() const { return std::get<GetOp>(op); }
  const PutOp& put() const { return std::get<PutOp>(op); }
  const DeleteOp& del() const { return std::get<DeleteOp>(op); }
  const ShrinkOp& shrink() const { return std::get<ShrinkOp>(op); }

  // Value bytes the call carries in (puts): what it holds while queued.
  uint64_t payload_bytes() const {
    const auto* p = std::get_if<PutOp>(&op);
    return p ? p->request->values().size() : 0;
  }

  uint32_t num_keys() const {
    switch (kind()) {
      case OpKind::kGet: return static_cast<uint32_t>(get().request->keys_size());
      case OpKind::kPut: return static_cast<uint32_t>(put().request->keys_size());
      case OpKind::kDelete: return static_cast<uint32_t>(del().request->keys_size());
      case OpKind::kShrink: return 0;
    }
    return 0;
  }
};

}  // namespace gphkv::server

// One queued operation: a get, put or delete of one RPC (or one pipelined
// op), or an operator's shrink request, with the request it reads, the response it fills and the callback
// that answers it. Plain protobuf messages: the batcher and executor know
// nothing of gRPC.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "gphkv/v1/gphkv.pb.h"

namespace gphkv::server {

using Clock = std::chrono::steady_clock;

// kShrink goes through the queue like the others because only the executor
// thread may touch the store; it carries no keys.
enum class OpKind : uint8_t { kGet = 0, kPut = 1, kDelete = 2, kShrink = 3 };

struct Call {
  OpKind kind = OpKind::kGet;
  // Exactly the pair matching `kind` is set. They belong to the caller and
  // stay valid until `done` has run.
  const v1::GetRequest* get = nullptr;
  v1::GetResponse* get_out = nullptr;
  const v1::PutRequest* put = nullptr;
  v1::PutResponse* put_out = nullptr;
  const v1::DeleteRequest* del = nullptr;
  v1::DeleteResponse* del_out = nullptr;
  v1::ShrinkResponse* shrink_out = nullptr;

  // A call whose deadline passed before its batch ran is answered
  // DEADLINE_EXCEEDED and changes nothing.
  Clock::time_point deadline = Clock::time_point::max();
  Clock::time_point enqueued{};

  // Runs exactly once, on the executor thread, after the call's operations
  // took effect (OK) or were refused (then nothing changed).
  std::function<void(absl::Status)> done;

  // Value bytes the call carries in (puts): what it holds while queued.
  uint64_t payload_bytes() const { return kind == OpKind::kPut ? put->values().size() : 0; }

  uint32_t num_keys() const {
    switch (kind) {
      case OpKind::kGet: return static_cast<uint32_t>(get->keys_size());
      case OpKind::kPut: return static_cast<uint32_t>(put->keys_size());
      case OpKind::kDelete: return static_cast<uint32_t>(del->keys_size());
      default: return 0;
    }
  }
};

}  // namespace gphkv::server

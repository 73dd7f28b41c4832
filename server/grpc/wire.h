// The bytes on the wire: requests are parsed here, not by gRPC, so that a
// message that is not valid protobuf gets INVALID_ARGUMENT with a message
// (and is counted) instead of gRPC's own answer, and responses are
// serialized by whichever thread finishes the call.
#pragma once

#include <chrono>

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/status.h>

#include "absl/status/status.h"
#include "google/protobuf/message_lite.h"

namespace gphkv::server::wire {

// Parses `bytes` into `msg`. INVALID_ARGUMENT naming the message type when
// they are not a valid encoding of it.
absl::Status parse(const grpc::ByteBuffer& bytes, google::protobuf::MessageLite* msg);

// `msg`'s encoding.
grpc::ByteBuffer serialize(const google::protobuf::MessageLite& msg);

grpc::Status to_grpc(const absl::Status& s);

// A call's gRPC deadline on the steady clock (max() when it has none).
std::chrono::steady_clock::time_point steady_deadline(std::chrono::system_clock::time_point deadline);

}  // namespace gphkv::server::wire

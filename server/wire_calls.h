// The protocol-neutral operations of server/call.h over gphkv.v1 requests:
// views of the request's fields, valid while the request is. The gRPC front
// ends (server/grpc) build their calls with these.
#pragma once

#include "absl/status/statusor.h"
#include "gphkv/v1/gphkv.pb.h"
#include "server/call.h"
#include "server/request_validation.h"

namespace gphkv::server {

inline KeySpan key_span(const google::protobuf::RepeatedField<uint64_t>& keys) {
  return KeySpan(keys.data(), static_cast<size_t>(keys.size()));
}

// INVALID_ARGUMENT for a value_mode that is not a ValueMode.
inline absl::StatusOr<GetOp> get_op(const v1::GetRequest& req, v1::GetResponse* response, bool packed = false) {
  if (absl::Status s = validate_value_mode(req); !s.ok()) return s;
  return GetOp{key_span(req.keys()), req.value_mode() == v1::VALUE_MODE_EXISTS, packed, response};
}

inline PutOp put_op(const v1::PutRequest& req, v1::PutResponse* response) {
  return PutOp{key_span(req.keys()),
               absl::Span<const uint32_t>(req.value_lengths().data(), static_cast<size_t>(req.value_lengths_size())),
               req.values(), response};
}

inline DeleteOp delete_op(const v1::DeleteRequest& req, v1::DeleteResponse* response) {
  return DeleteOp{key_span(req.keys()), response};
}

// The operation of a request of any kind, for front ends that handle them
// alike.
inline absl::StatusOr<Operation> operation(const v1::GetRequest& req, v1::GetResponse* response) {
  absl::StatusOr<GetOp> op = get_op(req, response);
  if (!op.ok()) return op.status();
  return Operation(*op);
}
inline absl::StatusOr<Operation> operation(const v1::PutRequest& req, v1::PutResponse* response) {
  return Operation(put_op(req, response));
}
inline absl::StatusOr<Operation> operation(const v1::DeleteRequest& req, v1::DeleteResponse* response) {
  return Operation(delete_op(req, response));
}

}  // namespace gphkv::server

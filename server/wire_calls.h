// The protocol-neutral operations of server/call.h over gphkv.v1 requests:
// views of the request's fields, valid while the request is. The gRPC front
// ends (server/grpc) build their calls with these.
#pragma once

#include <type_traits>
#include <vector>

#include "absl/status/statusor.h"
#include "gphkv/v1/gphkv.pb.h"
#include "server/call.h"
#include "server/request_validation.h"

namespace gphkv::server {

inline KeySpan key_span(const google::protobuf::RepeatedField<uint64_t>& keys) {
  return KeySpan(keys.data(), static_cast<size_t>(keys.size()));
}

// A request's keys: its uint64 keys, or its byte keys (key_bytes and
// key_lengths) with their table keys computed into *table_keys, the Call's
// (server/call.h). INVALID_ARGUMENT, naming `request`, for both kinds in one
// request, or key lengths that do not add up to key_bytes. The lengths'
// limits are the intake's to check (validate, server/request_validation.h).
struct WireKeys {
  KeySpan keys;
  ByteKeys byte_keys;
};
absl::StatusOr<WireKeys> wire_keys(const char* request, const google::protobuf::RepeatedField<uint64_t>& keys,
                                   const std::string& key_bytes,
                                   const google::protobuf::RepeatedField<uint32_t>& key_lengths,
                                   std::vector<uint64_t>* table_keys);
template <class Request>
absl::StatusOr<WireKeys> wire_keys(const char* request, const Request& req, std::vector<uint64_t>* table_keys) {
  return wire_keys(request, req.keys(), req.key_bytes(), req.key_lengths(), table_keys);
}

// INVALID_ARGUMENT for a value_mode that is not a ValueMode, and as wire_keys.
absl::StatusOr<GetOp> get_op(const v1::GetRequest& req, v1::GetResponse* response, std::vector<uint64_t>* table_keys,
                             bool packed = false);
absl::StatusOr<PutOp> put_op(const v1::PutRequest& req, v1::PutResponse* response, std::vector<uint64_t>* table_keys);
absl::StatusOr<DeleteOp> delete_op(const v1::DeleteRequest& req, v1::DeleteResponse* response,
                                   std::vector<uint64_t>* table_keys);

// The same for a request of uint64 keys, which needs no table keys: the
// shorthand of tests and tools that build calls of their own. A request
// with byte keys is INVALID_ARGUMENT here.
inline absl::StatusOr<GetOp> get_op(const v1::GetRequest& req, v1::GetResponse* response, bool packed = false) {
  return get_op(req, response, nullptr, packed);
}
inline absl::StatusOr<PutOp> put_op(const v1::PutRequest& req, v1::PutResponse* response) {
  return put_op(req, response, nullptr);
}
inline absl::StatusOr<DeleteOp> delete_op(const v1::DeleteRequest& req, v1::DeleteResponse* response) {
  return delete_op(req, response, nullptr);
}

// The operation of a request of any kind, for front ends that handle them
// alike; *table_keys is the Call's that will carry it.
template <class Request, class Response>
absl::StatusOr<Operation> operation(const Request& req, Response* response,
                                    std::vector<uint64_t>* table_keys = nullptr) {
  absl::StatusOr<Operation> out;
  if constexpr (std::is_same_v<Request, v1::GetRequest>) {
    auto op = get_op(req, response, table_keys);
    if (op.ok())
      out = Operation(*std::move(op));
    else
      out = op.status();
  } else if constexpr (std::is_same_v<Request, v1::PutRequest>) {
    auto op = put_op(req, response, table_keys);
    if (op.ok())
      out = Operation(*std::move(op));
    else
      out = op.status();
  } else {
    auto op = delete_op(req, response, table_keys);
    if (op.ok())
      out = Operation(*std::move(op));
    else
      out = op.status();
  }
  return out;
}

}  // namespace gphkv::server

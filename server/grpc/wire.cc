#include "server/grpc/wire.h"

#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/support/proto_buffer_reader.h>

#include "absl/strings/str_cat.h"

namespace gphkv::server::wire {

absl::Status parse(const grpc::ByteBuffer& bytes, google::protobuf::MessageLite* msg) {
  // The reader only reads, but its constructor takes a mutable buffer.
  grpc::ProtoBufferReader reader(const_cast<grpc::ByteBuffer*>(&bytes));
  if (!reader.status().ok() || !msg->ParseFromZeroCopyStream(&reader)) {
    return absl::InvalidArgumentError(absl::StrCat("the request is not a valid ", msg->GetTypeName(), " (",
                                                   bytes.Length(), " bytes); nothing was changed"));
  }
  return absl::OkStatus();
}

grpc::ByteBuffer serialize(const google::protobuf::MessageLite& msg) {
  grpc::ByteBuffer out;
  bool own_buffer = false;
  // gRPC's own serializer (one slice when small, the writer's blocks when large).
  (void)grpc::SerializationTraits<google::protobuf::MessageLite>::Serialize(msg, &out, &own_buffer);
  return out;
}

grpc::Status to_grpc(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

std::chrono::steady_clock::time_point steady_deadline(std::chrono::system_clock::time_point deadline) {
  const auto remaining = deadline - std::chrono::system_clock::now();
  // gRPC reports "no deadline" as a time far in the future.
  if (remaining > std::chrono::hours(24 * 365)) return std::chrono::steady_clock::time_point::max();
  return std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(remaining);
}

}  // namespace gphkv::server::wire

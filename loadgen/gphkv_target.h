// gphkv over gRPC. The target knows the address and how to ask for
// readiness; --api picks the client path each driver thread's session takes
// (gphkv_unary_session.h, gphkv_pipeline_session.h,
// gphkv_coalesced_session.h).
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "loadgen/target.h"

namespace grpc {
class Channel;
}

namespace gphkv::loadgen {

enum class GphkvApi {
  kUnary,      // an RPC per call
  kPipeline,   // a Pipeline stream per connection, many calls in flight on it
  kCoalesced,  // gphkv::Client's coalescing (Batches streams)
};
// "unary", "pipeline" or "coalesced"; InvalidArgument for anything else.
absl::StatusOr<GphkvApi> ParseGphkvApi(const std::string& name);

std::unique_ptr<Target> MakeGphkvTarget(const std::string& address, GphkvApi api, const ValuePool* values);

// A channel of its own, hence a TCP connection of its own.
std::shared_ptr<grpc::Channel> MakeGphkvChannel(const std::string& address);

// "DEADLINE_EXCEEDED" for grpc::StatusCode::DEADLINE_EXCEEDED, and so on.
const char* GrpcStatusCodeName(int code);

}  // namespace gphkv::loadgen

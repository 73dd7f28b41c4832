// gphkv over gRPC. The target knows the servers and how to ask for
// readiness; --api picks the client path each driver thread's session takes
// (gphkv_unary_session.h, gphkv_pipeline_session.h,
// gphkv_coalesced_session.h).
//
// Several servers (--address=a:1,b:2 or dns:///NAME:PORT) are shards: each
// key goes to its own by gphkv::ShardRouter, as gphkv::ShardedClient routes
// it. The coalesced API is ShardedClient; the unary API splits each call by
// shard and counts it done when every part is; the pipeline API talks to one
// server only.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gphkv/client/shard_list.h"
#include "gphkv/client/tls.h"
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

// Where the shards are and how to reach them.
struct GphkvServers {
  std::string list;  // the server list as given (shard_list.h)
  ShardList shards;  // what it resolved to
  TlsOptions tls;    // the shards' (ShardTlsOptions)
};

// Resolves `servers`; INVALID_ARGUMENT for a malformed list, for several
// shards under --api=pipeline, or for a shared client on another API than
// coalesced. `options.api` is not read (`api` is it, parsed).
absl::StatusOr<std::unique_ptr<Target>> MakeGphkvTarget(const std::string& servers, GphkvApi api,
                                                        const ValuePool* values, const TargetOptions& options = {});

// A channel of its own, hence a TCP connection of its own.
std::shared_ptr<grpc::Channel> MakeGphkvChannel(const std::string& address, const TlsOptions& tls);

// "DEADLINE_EXCEEDED" for grpc::StatusCode::DEADLINE_EXCEEDED, and so on.
const char* GrpcStatusCodeName(int code);

}  // namespace gphkv::loadgen

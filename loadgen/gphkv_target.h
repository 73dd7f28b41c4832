// gphkv over gRPC, through the generated gphkv.v1.KeyValue stubs' async
// (completion-queue) API: each driver thread owns one completion queue and
// its own channels, one TCP connection per channel, and polls completions
// with the deadline of its next scheduled send.
#pragma once

#include <memory>
#include <string>

#include "loadgen/target.h"

namespace gphkv::loadgen {

// api: "unary" (an RPC per call) or "coalesced" (gphkv::Client's coalescing).
std::unique_ptr<Target> MakeGphkvTarget(const std::string& address, const std::string& api, const ValuePool* values);

// "DEADLINE_EXCEEDED" for grpc::StatusCode::DEADLINE_EXCEEDED, and so on.
const char* GrpcStatusCodeName(int code);

}  // namespace gphkv::loadgen

// --api=unary (the default): every op is one Get, Put or Delete RPC on the
// generated stubs' async (completion-queue) API. Each session (driver
// thread) owns one completion queue and, per shard, its `connections`
// channels, one TCP connection each, and polls completions itself with the
// deadline of its next scheduled send.
//
// With several shards an op is split by shard (gphkv::ShardRouter): one RPC
// per shard holding some of its keys, on that shard's channel of the
// driver's connection; the op completes when its last part does, with the
// parts' hits and bytes added up and the first failure's status.
#pragma once

#include <memory>
#include <string>

#include "loadgen/gphkv_target.h"

namespace gphkv::loadgen {

// `inspect_reads`: fill OpResult::seen for gets.
std::unique_ptr<Session> MakeGphkvUnarySession(const GphkvServers& servers, size_t connections, const ValuePool* values,
                                               bool inspect_reads);

}  // namespace gphkv::loadgen

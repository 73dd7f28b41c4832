// --api=unary (the default): every op is one Get, Put or Delete RPC on the
// generated stubs' async (completion-queue) API. Each session (driver
// thread) owns one completion queue and, per shard, its `connections`
// channels, one TCP connection each, and polls completions itself with the
// deadline of its next scheduled send.
//
// With several shards an op is split by shard (gphkv::ShardRouter): one RPC
// per shard holding some of its keys, on that shard's channel of the
// driver's connection; the op completes when its last part does, with the
// parts' hits and bytes added up and the first failure's status. Byte keys
// (--key_format=bytes|tao) are routed by their bytes.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "loadgen/gphkv_target.h"
#include "loadgen/key_format.h"

namespace gphkv::loadgen {

// `inspect_reads`: fill OpResult::seen for gets. `byte_keys`: the ops' ids go
// out as the byte keys they name (--key_format=bytes|tao), routed to their
// shards by those bytes as the sharded client routes them.
std::unique_ptr<Session> MakeGphkvUnarySession(const GphkvServers& servers, size_t connections, const ValuePool* values,
                                               bool inspect_reads,
                                               std::optional<ByteKeyNames> byte_keys = std::nullopt);

}  // namespace gphkv::loadgen

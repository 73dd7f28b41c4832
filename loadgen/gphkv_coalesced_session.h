// --api=coalesced: every op is one request of gphkv::ShardedClient, whose
// clients (one per shard) coalesce, the way an application uses the store:
// the session's outstanding requests ride together as the operations of
// Batches messages, over `connections` streams per shard. Each session
// (driver thread) has a client of its own; completions come back on gRPC's
// threads and are handed to the session's thread through a queue.
#pragma once

#include <memory>
#include <string>

#include "loadgen/gphkv_target.h"

namespace gphkv::loadgen {

absl::StatusOr<std::unique_ptr<Session>> MakeGphkvCoalescedSession(const GphkvServers& servers, size_t connections,
                                                                   const ValuePool* values, int max_in_flight);

}  // namespace gphkv::loadgen

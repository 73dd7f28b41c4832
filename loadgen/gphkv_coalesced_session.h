// --api=coalesced: every op is one request of gphkv::ShardedClient, whose
// clients (one per shard) coalesce, the way an application uses the store:
// outstanding requests ride together as the operations of Batches messages,
// over `connections` streams per shard. A session (driver thread) has a
// client of its own (--clients=per_thread) or shares one with every other
// session of the run (--clients=shared: an application server's many threads
// over one client); completions come back on gRPC's threads and are handed
// to the session's thread through a queue.
#pragma once

#include <memory>
#include <string>

#include <optional>
#include "gphkv/client/sharded_client.h"

#include "loadgen/gphkv_target.h"
#include "loadgen/key_format.h"

namespace gphkv::loadgen {

// A coalescing client with `streams` Batches streams per shard.
absl::StatusOr<std::shared_ptr<ShardedClient>> MakeGphkvCoalescingClient(const GphkvServers& servers, size_t streams,
                                                                         int max_in_flight);

// A session over `client`; `connections` is only what connections() reports
// (the client picks each request's stream by its thread). `inspect_reads`:
// fill OpResult::seen for gets. With `byte_keys`, each op's ids go out as
// the byte keys it names (--key_format=bytes).
std::unique_ptr<Session> MakeGphkvCoalescedSession(std::shared_ptr<ShardedClient> client, size_t connections,
                                                   const ValuePool* values, bool inspect_reads,
                                                   std::optional<ByteKeyNames> byte_keys = std::nullopt);

}  // namespace gphkv::loadgen

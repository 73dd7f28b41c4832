// --api=coalesced: every op is one request of gphkv::Client with coalescing
// on, the way an application uses the store: the session's outstanding
// requests ride together as the operations of Batches messages, over
// `connections` streams. Each session (driver thread) has a Client of its
// own; completions come back on gRPC's threads and are handed to the
// session's thread through a queue.
#pragma once

#include <memory>
#include <string>

#include "loadgen/target.h"

namespace gphkv::loadgen {

std::unique_ptr<Session> MakeGphkvCoalescedSession(const std::string& address, size_t connections,
                                                   const ValuePool* values);

}  // namespace gphkv::loadgen

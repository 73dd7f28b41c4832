// --api=pipeline: each connection is one bidirectional Pipeline stream, on
// the generated stubs' async (completion-queue) API; every op is one
// PipelineRequest carrying the driver's tag as its id, and its answer is
// matched by that id, so up to --depth ops ride each stream at once.
//
// gRPC allows one Write in flight per stream: ops that arrive meanwhile wait
// in the stream's queue, in order, and go out as soon as the write before
// them completes (flagged as buffered, so gRPC may pack them into fewer
// frames; the last one of a burst flushes). The server applies a stream's
// ops in the order sent. A stream that breaks fails the ops it carried with
// its final status; later ops on it fail at once with the same name.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "gphkv/client/tls.h"
#include "loadgen/key_format.h"
#include "loadgen/target.h"

namespace gphkv::loadgen {

// Opens the `connections` streams and waits (up to `open_timeout`) until
// each has started; UNAVAILABLE when one does not.
// `inspect_reads`: fill OpResult::seen for gets. `byte_keys`: the ops' ids
// go out as the byte keys they name (--key_format=bytes|tao).
absl::StatusOr<std::unique_ptr<Session>> MakeGphkvPipelineSession(const std::string& address, const TlsOptions& tls,
                                                                  size_t connections, const ValuePool* values,
                                                                  Clock::duration open_timeout,
                                                                  bool inspect_reads = false,
                                                                  std::optional<ByteKeyNames> byte_keys = std::nullopt);

}  // namespace gphkv::loadgen

// The status of a ShardedClient call that failed on some shards: a message a
// person can read (the failed shards, their statuses, the keys the other
// shards applied) and the same account as a payload a program can read
// (ShardedCallFailureOf, sharded_client.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "gphkv/client/sharded_client.h"

namespace gphkv::detail {

// `failure.failed` is not empty; the call had `call_keys` keys;
// `applied_keys[i]` is the key at index failure.applied[i] (the message names
// the first few); `verb` says what the other shards did with theirs
// ("applied", "answered").
absl::Status ShardedCallStatus(const ShardedCallFailure& failure, size_t call_keys,
                               absl::Span<const uint64_t> applied_keys, absl::string_view verb);

}  // namespace gphkv::detail

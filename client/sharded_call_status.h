// The status of a ShardedClient call that failed on some shards: a message a
// person can read (the failed shards, their statuses, the keys the other
// shards applied) and the same account as a payload a program can read
// (ShardedCallFailureOf, sharded_client.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "gphkv/client/sharded_client.h"

namespace gphkv::detail {

// `failure.failed` is not empty; the call had `call_keys` keys;
// `applied_keys[i]` names the key at index failure.applied[i], as the message
// shows it (it names the first kKeysNamed; more are not read); `verb` says what the other shards did with theirs
// ("applied", "answered").
absl::Status ShardedCallStatus(const ShardedCallFailure& failure, size_t call_keys,
                               absl::Span<const std::string> applied_keys, absl::string_view verb);

// Applied keys named in a failure's message; the payload has them all.
constexpr size_t kKeysNamed = 16;

}  // namespace gphkv::detail

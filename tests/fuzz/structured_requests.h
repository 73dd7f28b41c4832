// Messages built by a FuzzedDataProvider from a record's payload: well-formed
// encodings whose fields probe the validator and the store (keys from a small
// space so requests meet, the sentinel key, counts around --max_call_keys,
// value lengths around --max_value_bytes, value_lengths that disagree with
// the keys or the bytes, value modes outside the enum, packed gets whose
// counts do not add up).
#pragma once

#include <fuzzer/FuzzedDataProvider.h>

#include <string>

#include "tests/fuzz/fuzz_records.h"

namespace gphkv::fuzz {

// The limits the fuzzed server runs with (small, so they are met).
constexpr uint32_t kMaxCallKeys = 64;
constexpr uint32_t kMaxValueBytes = 4096;
constexpr uint64_t kMaxQueueKeys = 128;  // bounds a message's packed gets

// The wire bytes of a `message` built from `fdp`.
std::string structured_request(Message message, FuzzedDataProvider& fdp);

}  // namespace gphkv::fuzz

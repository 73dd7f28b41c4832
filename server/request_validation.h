// Checks a request as a whole before any of it is queued, so a refused call
// changes nothing. Each error names the field, the value and the limit.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "gphkv/v1/gphkv.pb.h"

namespace gphkv::server {

struct RequestLimits {
  uint32_t max_call_keys = 65536;
  uint32_t max_value_bytes = 1 << 20;
};

absl::Status validate(const v1::GetRequest& req, const RequestLimits& limits);
absl::Status validate(const v1::PutRequest& req, const RequestLimits& limits);
absl::Status validate(const v1::DeleteRequest& req, const RequestLimits& limits);
// The packed gets of a Batches message (BatchRequest.gets and get_counts):
// each request 1 .. max_call_keys keys, the counts adding up to the keys, and
// all of them at most `max_keys` (what the batcher can ever queue at once).
absl::Status validate_packed_gets(const v1::BatchRequest& req, const RequestLimits& limits, uint64_t max_keys);

}  // namespace gphkv::server

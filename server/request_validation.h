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

}  // namespace gphkv::server

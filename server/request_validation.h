// Checks a request as a whole before any of it is queued, so a refused call
// changes nothing. Each error names the field, the value and the limit.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "gphkv/v1/gphkv.pb.h"
#include "server/call.h"

namespace gphkv::server {

struct RequestLimits {
  uint32_t max_call_keys = 65536;
  uint32_t max_value_bytes = 1 << 20;
  // A byte key's length: 1 .. this (--max_key_bytes; server/byte_key.h).
  uint32_t max_key_bytes = 250;
};

// The keys a GetRequest, PutRequest or DeleteRequest carries, of either kind.
template <class Request>
int wire_key_count(const Request& req) {
  return req.keys_size() + req.key_lengths_size();
}

// A call's keys and values (the intake checks every call it queues): 1 to
// max_call_keys keys (packed gets are checked whole, below), and a put's
// value lengths one per key, each within max_value_bytes, adding up to its
// values. Errors name the request as the wire does (GetRequest, ...).
absl::Status validate(const Call& call, const RequestLimits& limits);
// What only the wire can get wrong, checked where its requests become calls
// (server/wire_calls.h): a GetRequest's value_mode.
absl::Status validate_value_mode(const v1::GetRequest& req);
// The item fields (issue 27, docs/service.md "Item fields"), which only byte
// keys carry: a put's flags and exptime, WRITE_MODE_CAS and its cas (cas
// only with that mode); a get's with_items and touch (touch not with
// VALUE_MODE_EXISTS; neither in a Batches message's packed gets).
// INVALID_ARGUMENT naming the field.
absl::Status validate_item_fields(const v1::PutRequest& req, bool uint64_keys);
absl::Status validate_item_fields(const v1::GetRequest& req, bool uint64_keys, bool packed);
// The packed gets of a Batches message (BatchRequest.gets and get_counts):
// each request 1 .. max_call_keys keys, the counts adding up to the keys, and
// all of them at most `max_keys` (what the batcher can ever queue at once).
absl::Status validate_packed_gets(const v1::BatchRequest& req, const RequestLimits& limits, uint64_t max_keys);

}  // namespace gphkv::server

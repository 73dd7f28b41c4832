// Building gphkv.v1 requests from keys of either kind: uint64 keys, or byte
// keys (docs/byte-keys.md), which travel packed the way values do: key i is
// the next key_lengths[i] bytes of key_bytes. A request carries one kind.
//
// gphkv::Client builds every request here; tests and tools that use the stub
// directly may too. Nothing is checked: empty keys, too many keys or keys
// longer than the server's --max_key_bytes are the server's to refuse.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/types/span.h"
#include "gphkv/v1/gphkv.pb.h"

namespace gphkv {

// Appends `keys` to the keys of `req` (a GetRequest, PutRequest or
// DeleteRequest) that hold their kind. The coalescing client packs many
// gets into one GetRequest this way.
template <class Request>
void append_keys(Request* req, absl::Span<const uint64_t> keys) {
  req->mutable_keys()->Add(keys.begin(), keys.end());
}
template <class Request>
void append_keys(Request* req, absl::Span<const std::string_view> keys) {
  size_t total = req->key_bytes().size();
  for (std::string_view k : keys) total += k.size();
  std::string* bytes = req->mutable_key_bytes();
  bytes->reserve(total);
  req->mutable_key_lengths()->Reserve(req->key_lengths_size() + static_cast<int>(keys.size()));
  for (std::string_view k : keys) {
    req->add_key_lengths(static_cast<uint32_t>(k.size()));
    bytes->append(k.data(), k.size());
  }
}

// How many keys a request carries, of either kind.
template <class Request>
uint64_t key_count(const Request& req) {
  return static_cast<uint64_t>(req.keys_size()) + static_cast<uint64_t>(req.key_lengths_size());
}

// exists_only: VALUE_MODE_EXISTS (found flags, no value bytes).
v1::GetRequest make_get_request(absl::Span<const uint64_t> keys, bool exists_only = false);
v1::GetRequest make_get_request(absl::Span<const std::string_view> keys, bool exists_only = false);
// values[i] is keys[i]'s value; the caller checks that the sizes match.
v1::PutRequest make_put_request(absl::Span<const uint64_t> keys, absl::Span<const std::string_view> values);
v1::PutRequest make_put_request(absl::Span<const std::string_view> keys, absl::Span<const std::string_view> values);
v1::DeleteRequest make_delete_request(absl::Span<const uint64_t> keys);
v1::DeleteRequest make_delete_request(absl::Span<const std::string_view> keys);

}  // namespace gphkv

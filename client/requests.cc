#include "gphkv/client/requests.h"

namespace gphkv {
namespace {

template <class Key>
v1::GetRequest get_request(absl::Span<const Key> keys, bool exists_only) {
  v1::GetRequest req;
  append_keys(&req, keys);
  if (exists_only) req.set_value_mode(v1::VALUE_MODE_EXISTS);
  return req;
}

template <class Key>
v1::PutRequest put_request(absl::Span<const Key> keys, absl::Span<const std::string_view> values) {
  v1::PutRequest req;
  append_keys(&req, keys);
  size_t total = 0;
  for (std::string_view v : values) total += v.size();
  std::string* buf = req.mutable_values();
  buf->reserve(total);
  req.mutable_value_lengths()->Reserve(static_cast<int>(values.size()));
  for (std::string_view v : values) {
    req.add_value_lengths(static_cast<uint32_t>(v.size()));
    buf->append(v.data(), v.size());
  }
  return req;
}

template <class Key>
v1::DeleteRequest delete_request(absl::Span<const Key> keys) {
  v1::DeleteRequest req;
  append_keys(&req, keys);
  return req;
}

}  // namespace

v1::GetRequest make_get_request(absl::Span<const uint64_t> keys, bool exists_only) {
  return get_request(keys, exists_only);
}
v1::GetRequest make_get_request(absl::Span<const std::string_view> keys, bool exists_only) {
  return get_request(keys, exists_only);
}
v1::PutRequest make_put_request(absl::Span<const uint64_t> keys, absl::Span<const std::string_view> values) {
  return put_request(keys, values);
}
v1::PutRequest make_put_request(absl::Span<const std::string_view> keys, absl::Span<const std::string_view> values) {
  return put_request(keys, values);
}
v1::DeleteRequest make_delete_request(absl::Span<const uint64_t> keys) { return delete_request(keys); }
v1::DeleteRequest make_delete_request(absl::Span<const std::string_view> keys) { return delete_request(keys); }

}  // namespace gphkv

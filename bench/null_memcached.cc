#include "bench/null_memcached.h"

#include <utility>
#include <variant>

namespace gphkv::bench {

NullMemcachedSink::NullMemcachedSink() : filler_(kMaxValueBytes, 'v') {}

absl::Status NullMemcachedSink::submit(server::Call call) const {
  if (auto* get = std::get_if<server::GetOp>(&call.op)) {
    v1::GetResponse* r = get->response;
    const int n = static_cast<int>(get->keys.size());
    r->mutable_found()->Resize(n, true);
    r->mutable_value_lengths()->Resize(n, 0);
    std::string* values = r->mutable_values();
    for (int i = 0; i < n; ++i) {
      const uint32_t length = get->exists_only ? 0 : value_bytes(get->keys[i]);
      r->set_value_lengths(i, length);
      values->append(filler_.data(), length);
    }
  } else if (auto* put = std::get_if<server::PutOp>(&call.op)) {
    put->response->mutable_created()->Resize(static_cast<int>(put->keys.size()), true);
  } else if (auto* del = std::get_if<server::DeleteOp>(&call.op)) {
    del->response->mutable_deleted()->Resize(static_cast<int>(del->keys.size()), false);
  }
  // Answered here, on the loop thread that submitted it: the connection
  // writes the reply as soon as this returns.
  std::function<void(absl::Status)> done = std::move(call.done);
  done(absl::OkStatus());
  return absl::OkStatus();
}

}  // namespace gphkv::bench

#include "client/sharded_call_status.h"

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "gphkv/client/v1/sharded_call_failure.pb.h"

namespace gphkv {
namespace {

constexpr absl::string_view kTypeUrl = "type.googleapis.com/gphkv.client.v1.ShardedCallFailure";

}  // namespace

namespace detail {

absl::Status ShardedCallStatus(const ShardedCallFailure& failure, size_t call_keys,
                               absl::Span<const std::string> applied_keys, absl::string_view verb) {
  const auto& first = failure.failed.front();
  std::string message;
  for (const auto& f : failure.failed) {
    absl::StrAppend(&message, message.empty() ? "" : "; also ", "shard ", f.shard, " failed ", f.keys.size(), " of ",
                    call_keys, " keys: ", absl::StatusCodeToString(f.status.code()), ": ", f.status.message());
  }
  if (failure.applied.empty()) {
    absl::StrAppend(&message, "; no other shard ", verb, " any key");
  } else {
    absl::StrAppend(&message, "; the other shards ", verb, " ", failure.applied.size(), " keys (");
    for (size_t i = 0; i < applied_keys.size() && i < kKeysNamed; ++i) {
      absl::StrAppend(&message, i ? ", " : "", applied_keys[i]);
    }
    if (failure.applied.size() > kKeysNamed)
      absl::StrAppend(&message, ", and ", failure.applied.size() - kKeysNamed, " more");
    absl::StrAppend(&message, ")");
  }

  client::v1::ShardedCallFailure payload;
  for (const auto& f : failure.failed) {
    auto* p = payload.add_failed();
    p->set_shard(f.shard);
    p->set_code(static_cast<int32_t>(f.status.code()));
    p->set_message(std::string(f.status.message()));
    p->mutable_keys()->Add(f.keys.begin(), f.keys.end());
  }
  payload.mutable_applied()->Add(failure.applied.begin(), failure.applied.end());
  absl::Status status(first.status.code(), message);
  status.SetPayload(kTypeUrl, absl::Cord(payload.SerializeAsString()));
  return status;
}

}  // namespace detail

std::optional<ShardedCallFailure> ShardedCallFailureOf(const absl::Status& status) {
  const auto bytes = status.GetPayload(kTypeUrl);
  client::v1::ShardedCallFailure payload;
  if (!bytes || !payload.ParseFromString(std::string(*bytes))) return std::nullopt;
  ShardedCallFailure out;
  for (const auto& f : payload.failed()) {
    out.failed.push_back({f.shard(), absl::Status(static_cast<absl::StatusCode>(f.code()), f.message()),
                          std::vector<uint32_t>(f.keys().begin(), f.keys().end())});
  }
  out.applied.assign(payload.applied().begin(), payload.applied().end());
  return out;
}

}  // namespace gphkv

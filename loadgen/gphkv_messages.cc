#include "loadgen/gphkv_messages.h"

#include <algorithm>
#include <string_view>
#include <vector>

#include "loadgen/gphkv_target.h"

namespace gphkv::loadgen {

namespace {

// The op's keys into the request: its ids, or the byte keys they name.
template <class Request>
void SetKeys(const Op& op, const ByteKeyNames* names, Request* request) {
  if (names == nullptr) {
    request->mutable_keys()->Add(op.keys.begin(), op.keys.end());
    return;
  }
  std::vector<std::string_view> views;
  names->Name(op.keys, request->mutable_key_bytes(), &views);
  for (std::string_view k : views) request->add_key_lengths(static_cast<uint32_t>(k.size()));
}

}  // namespace

void FillGetRequest(const Op& op, v1::GetRequest* request, const ByteKeyNames* names) {
  SetKeys(op, names, request);
  request->set_value_mode(v1::VALUE_MODE_VALUES);
}

uint64_t FillPutRequest(const Op& op, const ValuePool& values, v1::PutRequest* request, const ByteKeyNames* names) {
  SetKeys(op, names, request);
  request->mutable_value_lengths()->Add(op.value_sizes.begin(), op.value_sizes.end());
  uint64_t total = 0;
  for (uint32_t s : op.value_sizes) total += s;
  std::string* bytes = request->mutable_values();
  bytes->reserve(total);
  for (size_t i = 0; i < op.keys.size(); ++i) values.AppendValue(op.keys[i], op.value_sizes[i], op.version, bytes);
  return total;
}

void FillDeleteRequest(const Op& op, v1::DeleteRequest* request, const ByteKeyNames* names) {
  SetKeys(op, names, request);
}

OpResult GetOpResult(const v1::GetResponse& response, absl::Span<const uint64_t> keys, const ValuePool* inspect) {
  OpResult r;
  r.ok = true;
  for (bool f : response.found()) r.found += f;
  r.value_bytes = response.values().size();
  if (inspect == nullptr) return r;
  // Values lie end to end in request order; a length list that does not
  // cover the bytes (a broken answer) yields what it covers.
  const std::string& bytes = response.values();
  uint64_t at = 0;
  const int n = std::min({response.found_size(), response.value_lengths_size(), static_cast<int>(keys.size())});
  for (int i = 0; i < n; ++i) {
    const uint64_t len = response.value_lengths(i);
    if (at + len > bytes.size()) break;
    if (response.found(i)) r.seen.push_back(inspect->Inspect(keys[i], absl::string_view(bytes).substr(at, len)));
    at += len;
  }
  return r;
}

OpResult PutOpResult(const v1::PutResponse& response, uint64_t sent_bytes) {
  OpResult r;
  r.ok = true;
  r.found = response.created_size();
  r.value_bytes = sent_bytes;
  return r;
}

OpResult DeleteOpResult(const v1::DeleteResponse& response) {
  OpResult r;
  r.ok = true;
  for (bool d : response.deleted()) r.found += d;
  return r;
}

OpResult FailedOp(int code) {
  OpResult r;
  r.error = GrpcStatusCodeName(code);
  return r;
}

}  // namespace gphkv::loadgen

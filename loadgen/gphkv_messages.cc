#include "loadgen/gphkv_messages.h"

#include "loadgen/gphkv_target.h"

namespace gphkv::loadgen {

void FillGetRequest(const Op& op, v1::GetRequest* request) {
  request->mutable_keys()->Add(op.keys.begin(), op.keys.end());
  request->set_value_mode(v1::VALUE_MODE_VALUES);
}

uint64_t FillPutRequest(const Op& op, const ValuePool& values, v1::PutRequest* request) {
  request->mutable_keys()->Add(op.keys.begin(), op.keys.end());
  request->mutable_value_lengths()->Add(op.value_sizes.begin(), op.value_sizes.end());
  uint64_t total = 0;
  for (uint32_t s : op.value_sizes) total += s;
  std::string* bytes = request->mutable_values();
  bytes->reserve(total);
  for (size_t i = 0; i < op.keys.size(); ++i) {
    absl::string_view v = values.ValueFor(op.keys[i], op.value_sizes[i]);
    bytes->append(v.data(), v.size());
  }
  return total;
}

void FillDeleteRequest(const Op& op, v1::DeleteRequest* request) {
  request->mutable_keys()->Add(op.keys.begin(), op.keys.end());
}

OpResult GetResult(const v1::GetResponse& response) {
  OpResult r;
  r.ok = true;
  for (bool f : response.found()) r.found += f;
  r.value_bytes = response.values().size();
  return r;
}

OpResult PutResult(const v1::PutResponse& response, uint64_t sent_bytes) {
  OpResult r;
  r.ok = true;
  r.found = response.created_size();
  r.value_bytes = sent_bytes;
  return r;
}

OpResult DeleteResult(const v1::DeleteResponse& response) {
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

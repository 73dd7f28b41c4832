#include "server/wire_calls.h"

#include "absl/strings/str_cat.h"
#include "server/byte_key.h"

namespace gphkv::server {

absl::StatusOr<WireKeys> wire_keys(const char* request, const google::protobuf::RepeatedField<uint64_t>& keys,
                                   const std::string& key_bytes,
                                   const google::protobuf::RepeatedField<uint32_t>& key_lengths,
                                   std::vector<uint64_t>* table_keys) {
  if (key_lengths.empty() && key_bytes.empty()) return WireKeys{key_span(keys), {}};
  if (!keys.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(request, " carries ", keys.size(), " uint64 keys and ",
                                                   key_lengths.size(), " byte keys; send one kind of key per request"));
  }
  if (table_keys == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(request, " carries byte keys where only uint64 keys are taken"));
  }
  uint64_t total = 0;
  for (uint32_t len : key_lengths) total += len;
  if (total != key_bytes.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(request, ".key_bytes holds ", key_bytes.size(), " bytes but key_lengths sum to ", total));
  }
  ByteKeys byte_keys{key_bytes, absl::Span<const uint32_t>(key_lengths.data(), key_lengths.size())};
  table_keys->resize(byte_keys.size());
  byte_keys.for_each([&](size_t i, std::string_view key) { (*table_keys)[i] = byte_key::table_key(key); });
  return WireKeys{KeySpan(*table_keys), byte_keys};
}

absl::StatusOr<GetOp> get_op(const v1::GetRequest& req, v1::GetResponse* response, std::vector<uint64_t>* table_keys,
                             bool packed) {
  if (absl::Status s = validate_value_mode(req); !s.ok()) return s;
  absl::StatusOr<WireKeys> keys = wire_keys("GetRequest", req, table_keys);
  if (!keys.ok()) return keys.status();
  if (absl::Status s = validate_item_fields(req, keys->byte_keys.empty(), packed); !s.ok()) return s;
  GetOp op{keys->keys, req.value_mode() == v1::VALUE_MODE_EXISTS, packed, response, keys->byte_keys};
  // Item fields and touch are the placed path's (server/store_placed.cc),
  // which needs_cas makes serve the call.
  op.with_items = req.with_items();
  op.touch = req.touch();
  op.touch_exptime = req.touch_exptime();
  op.needs_cas = op.with_items || op.touch;
  return op;
}

absl::StatusOr<PutOp> put_op(const v1::PutRequest& req, v1::PutResponse* response, std::vector<uint64_t>* table_keys) {
  if (!v1::WriteMode_IsValid(req.mode())) {
    return absl::InvalidArgumentError(absl::StrCat("PutRequest.mode ", req.mode(),
                                                   " is not a WriteMode (0 SET, 1 ADD, 2 REPLACE, 3 APPEND, "
                                                   "4 PREPEND, 5 INCREMENT, 6 DECREMENT, 7 CAS)"));
  }
  absl::StatusOr<WireKeys> keys = wire_keys("PutRequest", req, table_keys);
  if (!keys.ok()) return keys.status();
  if (absl::Status s = validate_item_fields(req, keys->byte_keys.empty()); !s.ok()) return s;
  // WriteMode's numbers are PutMode's (WRITE_MODE_CAS is kCompareAndSet).
  return PutOp{keys->keys,
               absl::Span<const uint32_t>(req.value_lengths().data(), static_cast<size_t>(req.value_lengths_size())),
               req.values(),
               response,
               keys->byte_keys,
               static_cast<PutMode>(req.mode()),
               req.flags(),
               req.exptime(),
               req.cas()};
}

absl::StatusOr<DeleteOp> delete_op(const v1::DeleteRequest& req, v1::DeleteResponse* response,
                                   std::vector<uint64_t>* table_keys) {
  absl::StatusOr<WireKeys> keys = wire_keys("DeleteRequest", req, table_keys);
  if (!keys.ok()) return keys.status();
  return DeleteOp{keys->keys, response, keys->byte_keys};
}

}  // namespace gphkv::server

#include "server/pair_call.h"

#include "server/byte_key.h"

namespace gphkv::server {

void PairCall::pack_values(absl::Span<const std::string_view> values) {
  value_lengths_.reserve(values.size());
  size_t total = 0;
  for (std::string_view v : values) total += v.size();
  values_.reserve(total);
  for (std::string_view v : values) {
    value_lengths_.push_back(static_cast<uint32_t>(v.size()));
    values_.append(v);
  }
}

void PairCall::pack_keys(absl::Span<const std::string_view> keys, int hash_bits) {
  keys_.reserve(keys.size());
  key_lengths_.reserve(keys.size());
  for (std::string_view k : keys) {
    keys_.push_back(byte_key::table_key(k, hash_bits));
    key_lengths_.push_back(static_cast<uint32_t>(k.size()));
    key_bytes_.append(k);
  }
}

PairCall::PairCall(absl::Span<const uint64_t> keys, absl::Span<const std::string_view> values) {
  pack_values(values);
  call_.op = PutOp{keys, value_lengths_, values_, &put_response_, {}};
}

PairCall::PairCall(absl::Span<const std::string_view> keys, absl::Span<const std::string_view> values, int hash_bits,
                   absl::Span<const byte_key::ItemMeta> metas)
    : metas_(metas.begin(), metas.end()) {
  pack_keys(keys, hash_bits);
  pack_values(values);
  PutOp put{keys_, value_lengths_, values_, &put_response_, ByteKeys{key_bytes_, key_lengths_}};
  put.item_metas = metas_;
  call_.op = put;
}

PairCall::PairCall(absl::Span<const uint64_t> keys) { call_.op = DeleteOp{keys, &delete_response_, {}}; }

PairCall::PairCall(absl::Span<const std::string_view> keys, int hash_bits) {
  pack_keys(keys, hash_bits);
  call_.op = DeleteOp{keys_, &delete_response_, ByteKeys{key_bytes_, key_lengths_}};
}

}  // namespace gphkv::server

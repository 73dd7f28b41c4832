// A put or a delete Call made from pairs, for the store's general (placed)
// path: recovery replays the log's and snapshots' runs, whose byte keys come
// without table keys, through the same planning as a client's call once the
// store holds byte keys (server/key_places.h), so both take one path.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/types/span.h"
#include "server/call.h"
#include "server/item_meta.h"

namespace gphkv::server {

class PairCall {
 public:
  // Puts: values[i] is key i's.
  PairCall(absl::Span<const uint64_t> keys, absl::Span<const std::string_view> values);
  // Puts of byte keys, their table keys made with `hash_bits`
  // (StoreOptions::byte_key_hash_bits); metas[i] is keys[i]'s item fields
  // (empty: all 0).
  PairCall(absl::Span<const std::string_view> keys, absl::Span<const std::string_view> values, int hash_bits,
           absl::Span<const byte_key::ItemMeta> metas = {});
  // Deletes.
  explicit PairCall(absl::Span<const uint64_t> keys);
  PairCall(absl::Span<const std::string_view> keys, int hash_bits);

  // The call views this object's buffers: it neither copies nor moves.
  PairCall(const PairCall&) = delete;
  PairCall& operator=(const PairCall&) = delete;

  Call* call() { return &call_; }

 private:
  void pack_values(absl::Span<const std::string_view> values);
  void pack_keys(absl::Span<const std::string_view> keys, int hash_bits);

  std::vector<uint64_t> keys_;
  std::vector<uint32_t> key_lengths_;
  std::string key_bytes_;
  std::vector<uint32_t> value_lengths_;
  std::string values_;
  std::vector<byte_key::ItemMeta> metas_;
  v1::PutResponse put_response_;
  v1::DeleteResponse delete_response_;
  Call call_;
};

}  // namespace gphkv::server

#include "server/store_recovery.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "server/bulk_load.h"
#include "server/byte_key.h"
#include "server/byte_size.h"

namespace gphkv::server {

absl::Status StoreRecovery::memory_error(const absl::Status& s) const {
  if (s.code() != absl::StatusCode::kResourceExhausted) return s;
  const uint64_t held = store_.keys() + store_.bulk_load_pairs_taken();
  return absl::ResourceExhaustedError(absl::StrCat(
      "the data directory holds more than --memory=", format_byte_size(store_.memory_limit_bytes()), " can keep: ",
      held, " keys stored after ", puts_, " pairs recovered, then ", s.message(), "; start with a larger --memory"));
}

absl::Status StoreRecovery::on_snapshot_begin(uint64_t pairs, uint64_t value_bytes) {
  (void)value_bytes;
  // Only into an empty store (on_reset empties it before another snapshot
  // is tried); otherwise the pairs take the ordinary path.
  if (store_.bulk_loading() || store_.keys() != 0 || pairs > BulkLoad::kMaxPairs) return absl::OkStatus();
  return store_.begin_bulk_load(pairs);
}

absl::Status StoreRecovery::on_puts(const durability::Pairs& pairs) {
  absl::Status s;
  if (pairs.has_byte_keys() && store_.bulk_loading()) {
    // Fields are kept once some pair has any: the ones before get zeros.
    const bool fields = pairs.has_item_fields();
    const bool keep_metas = fields || !kept_metas_.empty();
    if (keep_metas) kept_metas_.resize(kept_key_lengths_.size());
    for (size_t i = 0; i < pairs.size(); ++i) {
      kept_bytes_.append(pairs.byte_keys[i]);
      kept_bytes_.append(pairs.values[i]);
      kept_key_lengths_.push_back(static_cast<uint32_t>(pairs.byte_keys[i].size()));
      kept_value_lengths_.push_back(static_cast<uint32_t>(pairs.values[i].size()));
      if (keep_metas) kept_metas_.push_back(fields ? pairs.metas[i] : byte_key::ItemMeta{});
    }
    return s;  // counted in puts_ once put
  }
  if (pairs.has_item_fields()) return put_byte_items(pairs.byte_keys, pairs.values, pairs.metas);
  if (pairs.has_byte_keys()) {
    s = store_.put_byte_pairs(pairs.byte_keys, pairs.values);
  } else {
    s = store_.bulk_loading() ? store_.bulk_load_pairs(pairs.keys, pairs.values)
                              : store_.put_pairs(pairs.keys, pairs.values);
  }
  if (!s.ok()) return memory_error(s);
  puts_ += pairs.size();
  return s;
}

absl::Status StoreRecovery::put_byte_items(absl::Span<const std::string_view> keys,
                                           absl::Span<const std::string_view> values,
                                           absl::Span<const byte_key::ItemMeta> metas) {
  const uint32_t now = store_.now();
  // Stretches of live items are put, stretches of expired ones erased, in order.
  for (size_t first = 0; first < keys.size();) {
    const bool expired = byte_key::is_expired(metas[first].exptime, now);
    size_t end = first + 1;
    while (end < keys.size() && byte_key::is_expired(metas[end].exptime, now) == expired) ++end;
    const size_t n = end - first;
    absl::Status s =
        expired ? store_.erase_byte_keys(keys.subspan(first, n))
                : store_.put_byte_pairs(keys.subspan(first, n), values.subspan(first, n), metas.subspan(first, n));
    if (!s.ok()) return memory_error(s);
    (expired ? expired_ : puts_) += n;
    first = end;
  }
  return absl::OkStatus();
}

absl::Status StoreRecovery::finish_bulk() {
  if (!store_.bulk_loading()) return absl::OkStatus();
  if (absl::Status s = store_.finish_bulk_load(); !s.ok()) return memory_error(s);
  return put_kept_byte_pairs();
}

absl::Status StoreRecovery::put_kept_byte_pairs() {
  std::vector<std::string_view> keys, values;
  const absl::Span<const byte_key::ItemMeta> metas = kept_metas_;
  size_t off = 0;
  for (size_t first = 0; first < kept_key_lengths_.size(); first += kKeptPairsPerPut) {
    const size_t n = std::min(kKeptPairsPerPut, kept_key_lengths_.size() - first);
    keys.clear();
    values.clear();
    for (size_t i = first; i < first + n; ++i) {
      keys.push_back(std::string_view(kept_bytes_).substr(off, kept_key_lengths_[i]));
      off += kept_key_lengths_[i];
      values.push_back(std::string_view(kept_bytes_).substr(off, kept_value_lengths_[i]));
      off += kept_value_lengths_[i];
    }
    if (!metas.empty()) {
      if (absl::Status s = put_byte_items(keys, values, metas.subspan(first, n)); !s.ok()) return s;
      continue;
    }
    if (absl::Status s = store_.put_byte_pairs(keys, values); !s.ok()) return memory_error(s);
    puts_ += n;
  }
  kept_bytes_ = std::string();
  kept_key_lengths_ = {};
  kept_value_lengths_ = {};
  kept_metas_ = {};
  return absl::OkStatus();
}

absl::Status StoreRecovery::on_snapshot_loaded(uint64_t sequence) {
  (void)sequence;
  return finish_bulk();
}

absl::Status StoreRecovery::on_flush(const durability::FlushMark& mark) {
  if (absl::Status s = finish_bulk(); !s.ok()) return s;
  store_.recover_flush(mark);
  return absl::OkStatus();
}

absl::Status StoreRecovery::on_deletes(absl::Span<const uint64_t> keys) {
  // Never before on_snapshot_loaded; a sink keeps its order whatever comes.
  if (absl::Status s = finish_bulk(); !s.ok()) return s;
  return store_.erase_keys(keys);
}

absl::Status StoreRecovery::on_byte_deletes(absl::Span<const std::string_view> keys) {
  if (absl::Status s = finish_bulk(); !s.ok()) return s;
  return store_.erase_byte_keys(keys);
}

absl::Status StoreRecovery::on_reset() {
  puts_ = 0;
  expired_ = 0;
  kept_bytes_ = std::string();
  kept_key_lengths_ = {};
  kept_value_lengths_ = {};
  kept_metas_ = {};
  return store_.clear();  // abandons a bulk load in progress
}

}  // namespace gphkv::server

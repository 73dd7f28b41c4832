#include "server/store_recovery.h"

#include "absl/strings/str_cat.h"
#include "server/bulk_load.h"
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
  absl::Status s = store_.bulk_loading() ? store_.bulk_load_pairs(pairs.keys, pairs.values)
                                         : store_.put_pairs(pairs.keys, pairs.values);
  if (!s.ok()) return memory_error(s);
  puts_ += pairs.keys.size();
  return s;
}

absl::Status StoreRecovery::finish_bulk() {
  if (!store_.bulk_loading()) return absl::OkStatus();
  return memory_error(store_.finish_bulk_load());
}

absl::Status StoreRecovery::on_snapshot_loaded(uint64_t sequence) {
  (void)sequence;
  return finish_bulk();
}

absl::Status StoreRecovery::on_deletes(absl::Span<const uint64_t> keys) {
  // Never before on_snapshot_loaded; a sink keeps its order whatever comes.
  if (absl::Status s = finish_bulk(); !s.ok()) return s;
  return store_.erase_keys(keys);
}

absl::Status StoreRecovery::on_reset() {
  puts_ = 0;
  return store_.clear();  // abandons a bulk load in progress
}

}  // namespace gphkv::server

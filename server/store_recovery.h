// Recovery's sink (server/durability/pairs.h) over the store: a snapshot's
// pairs and the log's puts and deletes go into the store, under the same
// --memory cap as any put, on the executor thread that will own the store
// afterwards.
//
// A snapshot loaded into an empty store takes the bulk path
// (server/bulk_load.h): its values go to the value heap block by block and
// the table is made in one bulk build once the snapshot is in, sized for its
// pairs, with no insert and no growth rebuild. The log after it is replayed
// through the store's pair operations (put_pairs, erase_keys), as any
// write.
//
// Byte keys (issue 26) take the store's general path, which the bulk build
// does not: a snapshot's byte-key pairs are kept here, copied, while its
// uint64 pairs are bulk-loaded, and put once the table is built, in the order
// they came. The two kinds never name the same key, so putting one kind
// after the other ends in the state the snapshot's order gives.
//
// Items that carry fields (issue 27) keep them. One whose expiry has passed
// by the store's clock is dropped: its key is erased where it came, since
// the put it came in replaced what the key held before.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "server/durability/pairs.h"
#include "server/store.h"

namespace gphkv::server {

class StoreRecovery final : public durability::RecoverySink {
 public:
  // While it lives, a delayed flush_all does not come due (the replay's
  // versions are not the time's: Store::hold_delayed_flushes).
  explicit StoreRecovery(Store& store) : store_(store) { store_.hold_delayed_flushes(true); }
  ~StoreRecovery() override { store_.hold_delayed_flushes(false); }
  StoreRecovery(const StoreRecovery&) = delete;
  StoreRecovery& operator=(const StoreRecovery&) = delete;

  absl::Status on_snapshot_begin(uint64_t pairs, uint64_t value_bytes) override;
  // RESOURCE_EXHAUSTED, naming --memory and what was loaded, when the
  // directory holds more than the store may keep.
  absl::Status on_puts(const durability::Pairs& pairs) override;
  absl::Status on_snapshot_loaded(uint64_t sequence) override;
  absl::Status on_deletes(absl::Span<const uint64_t> keys) override;
  absl::Status on_byte_deletes(absl::Span<const std::string_view> keys) override;
  // flush_all (issue 27): the items written before it are hidden, and the
  // expiry sweep deletes them, as in the store that logged it.
  absl::Status on_flush(const durability::FlushMark& mark) override;
  absl::Status on_reset() override;

  // Items dropped because they had expired.
  uint64_t expired() const { return expired_; }

 private:
  // Byte-key pairs put at most at once from the kept ones.
  static constexpr size_t kKeptPairsPerPut = 4096;

  // The bulk load in progress, if any, builds the table; then the byte-key
  // pairs kept meanwhile are put.
  absl::Status finish_bulk();
  absl::Status put_kept_byte_pairs();
  // Puts byte keys' pairs with their fields, erasing those expired, in order.
  absl::Status put_byte_items(absl::Span<const std::string_view> keys, absl::Span<const std::string_view> values,
                              absl::Span<const byte_key::ItemMeta> metas);
  absl::Status memory_error(const absl::Status& s) const;

  Store& store_;
  uint64_t puts_ = 0;  // pairs put so far, for the error
  uint64_t expired_ = 0;
  // A bulk-loaded snapshot's byte-key pairs: keys and values back to back,
  // and their fields (empty while none had any).
  std::string kept_bytes_;
  std::vector<uint32_t> kept_key_lengths_, kept_value_lengths_;
  std::vector<byte_key::ItemMeta> kept_metas_;
};

}  // namespace gphkv::server

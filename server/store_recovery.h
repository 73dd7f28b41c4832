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
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "server/durability/pairs.h"
#include "server/store.h"

namespace gphkv::server {

class StoreRecovery final : public durability::RecoverySink {
 public:
  explicit StoreRecovery(Store& store) : store_(store) {}

  absl::Status on_snapshot_begin(uint64_t pairs, uint64_t value_bytes) override;
  // RESOURCE_EXHAUSTED, naming --memory and what was loaded, when the
  // directory holds more than the store may keep.
  absl::Status on_puts(const durability::Pairs& pairs) override;
  absl::Status on_snapshot_loaded(uint64_t sequence) override;
  absl::Status on_deletes(absl::Span<const uint64_t> keys) override;
  absl::Status on_reset() override;

 private:
  // The bulk load in progress, if any, builds the table.
  absl::Status finish_bulk();
  absl::Status memory_error(const absl::Status& s) const;

  Store& store_;
  uint64_t puts_ = 0;  // pairs put so far, for the error
};

}  // namespace gphkv::server

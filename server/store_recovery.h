// Recovery's sink (server/durability/pairs.h) over the store: a snapshot's
// pairs and the log's puts and deletes go into the store through its pair
// operations, under the same --memory cap as any put, on the executor thread
// that will own the store afterwards.
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

  // RESOURCE_EXHAUSTED, naming --memory and what was loaded, when the
  // directory holds more than the store may keep.
  absl::Status on_puts(const durability::Pairs& pairs) override;
  absl::Status on_deletes(absl::Span<const uint64_t> keys) override;
  absl::Status on_reset() override;

 private:
  Store& store_;
  uint64_t puts_ = 0;  // pairs put so far, for the error
};

}  // namespace gphkv::server

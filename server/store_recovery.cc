#include "server/store_recovery.h"

#include "absl/strings/str_cat.h"
#include "server/byte_size.h"

namespace gphkv::server {

absl::Status StoreRecovery::on_puts(const durability::Pairs& pairs) {
  absl::Status s = store_.put_pairs(pairs.keys, pairs.values);
  if (s.code() == absl::StatusCode::kResourceExhausted) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the data directory holds more than --memory=", format_byte_size(store_.memory_limit_bytes()),
                     " can keep: ", store_.keys(), " keys stored after ", puts_, " pairs recovered, then ", s.message(),
                     "; start with a larger --memory"));
  }
  puts_ += pairs.keys.size();
  return s;
}

absl::Status StoreRecovery::on_deletes(absl::Span<const uint64_t> keys) { return store_.erase_keys(keys); }

absl::Status StoreRecovery::on_reset() {
  puts_ = 0;
  return store_.clear();
}

}  // namespace gphkv::server

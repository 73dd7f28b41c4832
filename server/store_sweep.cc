// The expiry sweep (issue 27): items that expired or that a flush_all hid
// are misses wherever a key is compared, but their memory comes back only
// when their key is written or deleted. The sweep deletes them between
// batches, a bounded chunk of table slots a step, so a cache whose items
// expire unread gives their memory back without a client's help.
#include <string_view>
#include <vector>

#include "server/byte_key.h"
#include "server/store.h"

namespace gphkv::server {

bool Store::sweep_wanted() const {
  if (options_.sweep_interval_seconds == 0) return false;
  if (sweeping_) return true;
  return (items_may_expire_ || flushed_below_ > 0) && now() >= next_sweep_at_;
}

absl::Status Store::sweep_step() {
  begin_run("sweep_step");
  durability::PairChunk ids, byte_pairs;
  if (!sweeping_) {
    // The slots are listed when a pass starts (not while a rebuild runs:
    // the serving table then misses the overlay's writes); the keys that
    // lost their slot to a collision are few, and swept at once.
    if (rebuilding()) return absl::OkStatus();
    if (absl::Status s = stored_keys(&sweep_keys_); !s.ok()) return s;
    sweep_next_ = 0;
    sweeping_ = true;
    if (absl::Status s = read_collided(&ids, &byte_pairs); !s.ok()) return s;
    if (absl::Status s = erase_gone(byte_pairs); !s.ok()) return s;
    byte_pairs.clear();
  }
  const size_t n = std::min(kSweepKeys, sweep_keys_.size() - sweep_next_);
  absl::Status s = read_pairs(absl::MakeConstSpan(sweep_keys_).subspan(sweep_next_, n), &ids, &byte_pairs);
  if (s.ok()) s = erase_gone(byte_pairs);
  sweep_next_ += n;
  if (!s.ok() || sweep_next_ >= sweep_keys_.size()) {
    sweeping_ = false;
    next_sweep_at_ = now() + options_.sweep_interval_seconds;
  }
  return s;
}

absl::Status Store::erase_gone(const durability::PairChunk& byte_pairs) {
  // The items read now: a key written since the pass listed it holds its new item.
  const uint32_t t = now();
  std::vector<std::string_view> gone;
  size_t off = 0;
  for (size_t i = 0; i < byte_pairs.key_lengths.size(); ++i) {
    const std::string_view key = std::string_view(byte_pairs.key_bytes).substr(off, byte_pairs.key_lengths[i]);
    off += byte_pairs.key_lengths[i];
    const byte_key::ItemMeta& m = byte_pairs.metas[i];
    if (byte_key::is_expired(m.exptime, t) || m.cas < flushed_below_) gone.push_back(key);
  }
  if (gone.empty()) return absl::OkStatus();
  if (absl::Status s = erase_byte_keys(gone); !s.ok()) return s;
  counters_.items_swept += gone.size();
  return absl::OkStatus();
}

}  // namespace gphkv::server

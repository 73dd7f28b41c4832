#include "server/snapshot_export.h"

#include <algorithm>

namespace gphkv::server {

absl::StatusOr<StoreExport> StoreExport::start(Store& store, std::vector<uint64_t> buffer) {
  if (absl::Status s = store.stored_keys(&buffer); !s.ok()) return s;
  return StoreExport(std::move(buffer));
}

absl::Status StoreExport::next_chunk(Store& store, durability::PairChunk* chunk) {
  const size_t n = std::min(kChunkKeys, keys_.size() - next_);
  chunk->keys.clear();
  chunk->lengths.clear();
  chunk->bytes.clear();
  absl::Status s =
      store.read_pairs(absl::MakeConstSpan(keys_).subspan(next_, n), &chunk->keys, &chunk->lengths, &chunk->bytes);
  if (s.ok()) next_ += n;
  return s;
}

absl::StatusOr<bool> StorePairSource::next(durability::Pairs* out) {
  do {
    if (export_.done()) return false;
    if (absl::Status s = export_.next_chunk(store_, &chunk_); !s.ok()) return s;
  } while (chunk_.keys.empty());  // every key of the chunk deleted since the start
  *out = chunk_.as_pairs(&values_);
  return true;
}

}  // namespace gphkv::server

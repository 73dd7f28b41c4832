#include "server/key_places.h"

#include "absl/container/flat_hash_set.h"
#include "server/byte_key.h"
#include "server/value_handle.h"

namespace gphkv::server {

std::string KeyRef::identity() const {
  return is_bytes() ? CollidedKeys::identity_of_bytes(bytes) : CollidedKeys::identity(table_key);
}

absl::Status place_keys(absl::Span<const KeyRef> keys, engine::ElasticTable& table, const ValueHeap& heap,
                        const CollidedKeys& collided, bool with_values, uint32_t now, PlacedKeys* out,
                        uint64_t flushed_below) {
  const size_t n = keys.size();
  // A byte key's item that expired, or was written before a flush_all
  // (uint64 keys have no item fields: neither applies).
  auto gone = [&](size_t i, const byte_key::ItemMeta& m) {
    return keys[i].is_bytes() && (byte_key::is_expired(m.exptime, now) || m.cas < flushed_below);
  };
  std::vector<uint64_t> table_keys(n), handles(n);
  std::vector<uint8_t> found(n);
  for (size_t i = 0; i < n; ++i) table_keys[i] = keys[i].table_key;
  if (absl::Status s = table.find(table_keys, absl::MakeSpan(handles), absl::MakeSpan(found)); !s.ok()) return s;

  // The slots that may be the keys' own, read in one gather: a byte key's
  // record (to compare its key), and with values a uint64 key's value.
  std::vector<size_t> read;
  std::vector<ValueHandle> read_handles;
  for (size_t i = 0; i < n; ++i) {
    if (!found[i]) continue;
    const bool record = value_handle::is_record(handles[i]);
    if (keys[i].is_bytes() ? record : (!record && with_values)) {
      read.push_back(i);
      read_handles.push_back(handles[i]);
    }
  }
  std::string& bytes = out->bytes;
  bytes.clear();
  if (absl::Status s = heap.gather(read_handles, &bytes); !s.ok()) return s;

  std::vector<KeyPlace>& places = out->places;
  places.assign(n, KeyPlace{});
  // Where each key's read bytes start; resolved into views once `bytes` stops growing.
  std::vector<uint64_t> offset(n, 0);
  std::vector<uint8_t> owned(n, 0);
  std::vector<byte_key::ItemMeta> meta(n);
  for (size_t i = 0; i < n; ++i) owned[i] = found[i] && !keys[i].is_bytes() && !value_handle::is_record(handles[i]);
  uint64_t off = 0;
  for (size_t j = 0; j < read.size(); ++j) {
    const size_t i = read[j];
    const uint32_t len = value_handle::length(read_handles[j]);
    offset[i] = off;
    if (keys[i].is_bytes()) {
      const std::optional<byte_key::Record> r = byte_key::parse_record(std::string_view(bytes.data() + off, len));
      owned[i] = r && r->key == keys[i].bytes;
      if (owned[i]) meta[i] = r->meta;
    }
    off += len;
  }

  // The keys the table does not hold: in CollidedKeys, or where a put goes.
  absl::flat_hash_set<uint64_t> claimed;
  std::vector<size_t> from_collided;
  std::vector<ValueHandle> collided_handles;
  for (size_t i = 0; i < n; ++i) {
    KeyPlace& p = places[i];
    if (owned[i]) {
      p = KeyPlace{KeyHome::kTable, true, handles[i], {}, meta[i], gone(i, meta[i])};
      continue;
    }
    if (!collided.empty()) {
      if (std::optional<ValueHandle> h = collided.find(keys[i].identity())) {
        p = KeyPlace{KeyHome::kCollided, true, *h, {}, {}, false};
        from_collided.push_back(i);
        collided_handles.push_back(*h);
        continue;
      }
    }
    const bool free = !found[i] && claimed.insert(keys[i].table_key).second;
    p = KeyPlace{free ? KeyHome::kTable : KeyHome::kCollided, false, 0, {}, {}, false};
  }
  if (with_values && !collided_handles.empty()) {
    const uint64_t base = bytes.size();
    if (absl::Status s = heap.gather(collided_handles, &bytes); !s.ok()) return s;
    uint64_t at = base;
    for (size_t j = 0; j < from_collided.size(); ++j) {
      offset[from_collided[j]] = at;
      at += value_handle::length(collided_handles[j]);
    }
  }
  if (!with_values) return absl::OkStatus();
  for (size_t i = 0; i < n; ++i) {
    KeyPlace& p = places[i];
    if (!p.stored) continue;
    const std::string_view stored(bytes.data() + offset[i], value_handle::length(p.handle));
    if (!keys[i].is_bytes()) {
      p.value = stored;
      continue;
    }
    const std::optional<byte_key::Record> r = byte_key::parse_record(stored);
    p.value = r->value;
    p.meta = r->meta;
    p.expired = gone(i, r->meta);
  }
  return absl::OkStatus();
}

}  // namespace gphkv::server

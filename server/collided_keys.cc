#include "server/collided_keys.h"

#include "absl/strings/string_view.h"

namespace gphkv::server {
namespace {

// The identity's first byte names the kind of key.
constexpr char kUint64Key = 0;
constexpr char kByteKey = 1;

// Debian's Abseil has a string_view of its own, which the map's heterogeneous
// lookup takes.
absl::string_view as_absl(std::string_view s) { return absl::string_view(s.data(), s.size()); }

}  // namespace

std::string CollidedKeys::identity(uint64_t key) {
  std::string id(1 + sizeof(key), kUint64Key);
  for (size_t i = 0; i < sizeof(key); ++i) id[1 + i] = static_cast<char>(key >> (8 * i));
  return id;
}

std::string CollidedKeys::identity_of_bytes(std::string_view key) {
  std::string id(1, kByteKey);
  id.append(key);
  return id;
}

std::optional<uint64_t> CollidedKeys::uint64_key(std::string_view identity) {
  if (identity.size() != 1 + sizeof(uint64_t) || identity[0] != kUint64Key) return std::nullopt;
  uint64_t key = 0;
  for (size_t i = 0; i < sizeof(key); ++i) key |= uint64_t{static_cast<uint8_t>(identity[1 + i])} << (8 * i);
  return key;
}

std::optional<ValueHandle> CollidedKeys::find(std::string_view identity) const {
  const auto it = handles_.find(as_absl(identity));
  if (it == handles_.end()) return std::nullopt;
  return it->second;
}

std::optional<ValueHandle> CollidedKeys::assign(std::string_view identity, ValueHandle handle) {
  auto [it, inserted] = handles_.try_emplace(as_absl(identity), handle);
  if (inserted) {
    bytes_ += kEntryBytes + identity.size();
    return std::nullopt;
  }
  const ValueHandle old = it->second;
  it->second = handle;
  return old;
}

std::optional<ValueHandle> CollidedKeys::erase(std::string_view identity) {
  const auto it = handles_.find(as_absl(identity));
  if (it == handles_.end()) return std::nullopt;
  const ValueHandle old = it->second;
  bytes_ -= kEntryBytes + it->first.size();
  handles_.erase(it);
  return old;
}

}  // namespace gphkv::server

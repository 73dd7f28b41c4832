// The keys that lost their table slot to another key with the same table key
// (server/byte_key.h): a byte key whose XXH3 table key another byte key, or
// a uint64 key equal to it, already holds; or a uint64 key whose slot holds a
// byte key's record. Each maps to its value's handle in the store's value
// heap, like a table slot. With 64-bit table keys this is empty but for one
// key in about 2^64 / n of n stored; its job is that the rare collision
// costs a miss of the table and a host lookup, never a wrong answer.
//
// The store looks here only when the table did not answer for the key (a
// miss, or a slot holding another key), so a key found here is never also in
// the table: a put of a key that is here updates it here, and a delete of
// it deletes it here. Owned by the store's owner thread: no locks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "server/value_heap.h"

namespace gphkv::server {

class CollidedKeys {
 public:
  // A key's identity: a uint64 key and a byte key never have the same one.
  static std::string identity(uint64_t key);
  static std::string identity_of_bytes(std::string_view key);
  // The uint64 key an identity names; nullopt for a byte key's.
  static std::optional<uint64_t> uint64_key(std::string_view identity);

  bool empty() const { return handles_.empty(); }
  uint64_t size() const { return handles_.size(); }
  // Host memory the entries take, about (identities and the map's slots).
  uint64_t bytes() const { return bytes_; }

  std::optional<ValueHandle> find(std::string_view identity) const;
  // Stores `handle` for the key; returns the handle it replaced, if any
  // (the caller releases it).
  std::optional<ValueHandle> assign(std::string_view identity, ValueHandle handle);
  // Removes the key; returns its handle, if it was here.
  std::optional<ValueHandle> erase(std::string_view identity);

  // f(identity, handle) for every key here, in no particular order.
  template <class F>
  void for_each(F&& f) const {
    for (const auto& [id, handle] : handles_) f(std::string_view(id), handle);
  }

 private:
  // The map's own share of an entry: the string and handle of its slot, and
  // its control byte, rounded up.
  static constexpr uint64_t kEntryBytes = sizeof(std::string) + sizeof(ValueHandle) + 8;

  absl::flat_hash_map<std::string, ValueHandle> handles_;
  uint64_t bytes_ = 0;
};

}  // namespace gphkv::server

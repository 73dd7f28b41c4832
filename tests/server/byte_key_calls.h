// Calls of byte keys for tests that drive the store directly, like
// owned_calls.h's for uint64 keys. `hash_bits` < 64 gives the calls table
// keys of that few bits (byte_key::table_key), so keys collide on purpose.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "server/byte_key.h"
#include "server/wire_calls.h"
#include "tests/server/owned_calls.h"

namespace gphkv::server {

template <class Request>
void add_byte_keys(const std::vector<std::string>& keys, Request* req) {
  for (const std::string& k : keys) {
    req->add_key_lengths(static_cast<uint32_t>(k.size()));
    req->mutable_key_bytes()->append(k);
  }
}

// The calls' table keys, recomputed with `hash_bits` (the op views them).
inline void use_hash_bits(Call* call, int hash_bits) {
  call->byte_keys().for_each(
      [&](size_t i, std::string_view key) { call->table_keys[i] = byte_key::table_key(key, hash_bits); });
}

inline std::unique_ptr<OwnedCall> make_byte_get(const std::vector<std::string>& keys, int hash_bits = 64,
                                                bool exists_only = false) {
  auto c = std::make_unique<OwnedCall>();
  add_byte_keys(keys, &c->get);
  if (exists_only) c->get.set_value_mode(v1::VALUE_MODE_EXISTS);
  c->call.op = get_op(c->get, &c->get_out, &c->call.table_keys).value();
  use_hash_bits(&c->call, hash_bits);
  return c;
}

inline std::unique_ptr<OwnedCall> make_byte_put(const std::vector<std::string>& keys,
                                                const std::vector<std::string>& values, int hash_bits = 64) {
  auto c = std::make_unique<OwnedCall>();
  add_byte_keys(keys, &c->put);
  for (const auto& v : values) {
    c->put.add_value_lengths(static_cast<uint32_t>(v.size()));
    c->put.mutable_values()->append(v);
  }
  c->call.op = put_op(c->put, &c->put_out, &c->call.table_keys).value();
  use_hash_bits(&c->call, hash_bits);
  return c;
}

inline std::unique_ptr<OwnedCall> make_byte_del(const std::vector<std::string>& keys, int hash_bits = 64) {
  auto c = std::make_unique<OwnedCall>();
  add_byte_keys(keys, &c->del);
  c->call.op = delete_op(c->del, &c->del_out, &c->call.table_keys).value();
  use_hash_bits(&c->call, hash_bits);
  return c;
}

}  // namespace gphkv::server

// Calls that own their request and response, for tests that drive the store
// (or its durability) with runs of calls the way the executor does.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "server/call.h"
#include "server/wire_calls.h"
#include "tests/server/call_messages.h"

namespace gphkv::server {

// Owns a call's request and response. The call views the request's fields:
// fill the request before the call is made (make_*), never after.
struct OwnedCall : testing::CallMessages {
  Call call;
};

inline std::unique_ptr<OwnedCall> make_get(const std::vector<uint64_t>& keys, bool exists_only = false) {
  auto c = std::make_unique<OwnedCall>();
  c->get.mutable_keys()->Add(keys.begin(), keys.end());
  if (exists_only) c->get.set_value_mode(v1::VALUE_MODE_EXISTS);
  c->call.op = get_op(c->get, &c->get_out).value();
  return c;
}

inline std::unique_ptr<OwnedCall> make_put(const std::vector<uint64_t>& keys, const std::vector<std::string>& values) {
  auto c = std::make_unique<OwnedCall>();
  c->put.mutable_keys()->Add(keys.begin(), keys.end());
  for (const auto& v : values) {
    c->put.add_value_lengths(static_cast<uint32_t>(v.size()));
    c->put.mutable_values()->append(v);
  }
  c->call.op = put_op(c->put, &c->put_out).value();
  return c;
}

inline std::unique_ptr<OwnedCall> make_del(const std::vector<uint64_t>& keys) {
  auto c = std::make_unique<OwnedCall>();
  c->del.mutable_keys()->Add(keys.begin(), keys.end());
  c->call.op = delete_op(c->del, &c->del_out).value();
  return c;
}

}  // namespace gphkv::server

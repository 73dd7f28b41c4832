// The memcached port with no table: gphkv-server's own listener, loops,
// parser and replies (server/memcache/) over a CallSink that answers every
// call at once, on the loop thread, from a fixed value set, so a load test
// against it measures the memcached transport alone (null_server
// --memcached_address; docs/memcached.md).
//
// Every get key is found, its value `value_bytes(key)` bytes of filler:
// 8 to 158 bytes by the key's table key, the spread of the default
// workload's associations (TAOBench's edge rows), so the replies carry bytes
// as the store's do. Sets are stored, deletes find nothing; nothing is kept.
#pragma once

#include <cstdint>
#include <string>

#include "server/memcache/call_sink.h"

namespace gphkv::bench {

class NullMemcachedSink final : public server::memcache::CallSink {
 public:
  static constexpr uint32_t kMinValueBytes = 8;
  static constexpr uint32_t kMaxValueBytes = 158;
  static uint32_t value_bytes(uint64_t table_key) {
    return kMinValueBytes + static_cast<uint32_t>(table_key % (kMaxValueBytes - kMinValueBytes + 1));
  }

  NullMemcachedSink();
  absl::Status submit(server::Call call) const override;

 private:
  std::string filler_;  // kMaxValueBytes bytes; a value is a prefix of it
};

}  // namespace gphkv::bench

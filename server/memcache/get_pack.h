// The plain gets that a loop's connections sent in one round, packed into
// one call (docs/memcached.md, "Packed gets"). The executor's cost is per
// call as well as per key (a batch's calls are ordered, validated, staged
// and answered one by one), and a memcached client sends a call a get,
// often of one key: a loop that queued each get alone spent most of the
// executor's time on calls. So a loop gathers the `get`s it parses in a
// round of its events and queues them as one packed call (GetOp::packed),
// whose answer it cuts back into each get's reply.
//
// Order: each key keeps the session of the connection it came on
// (GetOp::key_sessions), so the executor orders it after that connection's
// earlier writes of the key; a connection that sends any other call while
// its gets wait in the pack has the pack queued first (Loop::flush_gets), so
// its later writes follow them too.
//
// Size: a pack holds at most ListenerOptions::pack_max_keys keys, which the
// server sets so that no pack's values can pass the store's bound on one
// answer (max_response_bytes / max_value_bytes): a get answered alone within
// the bound is answered within it in a pack as well. A get of more keys is
// queued alone.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gphkv/v1/gphkv.pb.h"
#include "server/call.h"

namespace gphkv::server::memcache {

class Connection;

// The most keys a pack may hold when no answer may pass max_response_bytes
// and no value max_value_bytes (ListenerOptions::pack_max_keys): at least 1,
// at most max_call_keys.
inline uint32_t pack_max_keys_for(uint64_t max_response_bytes, uint64_t max_value_bytes, uint32_t max_call_keys) {
  const uint64_t keys = max_value_bytes == 0 ? max_call_keys : max_response_bytes / max_value_bytes;
  return static_cast<uint32_t>(std::max<uint64_t>(1, std::min<uint64_t>(keys, max_call_keys)));
}

// One get of a pack, and where its reply goes.
struct PackedGet {
  std::shared_ptr<Connection> connection;  // kept alive until its reply is posted
  void* slot = nullptr;                    // the connection's slot for the reply
  std::string* reply = nullptr;            // that slot's reply buffer
  uint32_t keys = 0;                       // its keys: the pack's next `keys` keys
  uint32_t key_bytes = 0;                  // and their bytes
};

// Reused: clear() keeps the buffers' capacity, so a warm loop's packs
// allocate nothing.
class GetPack {
 public:
  bool empty() const { return gets_.empty(); }
  size_t num_keys() const { return table_keys_.size(); }
  size_t size() const { return gets_.size(); }
  std::vector<PackedGet>& gets() { return gets_; }

  // Adds a plain get: `get` is the call IntakeCommand::make_call built for
  // it (its byte keys, their table keys and its session are copied; its
  // `done` is not used).
  void add(const Call& get, PackedGet answer_to);
  // The packed call over this pack's keys and response; valid until the
  // pack is added to or cleared.
  Call make_call(std::function<void(absl::Status)> done);
  // Writes each get's reply from the packed call's answer (status as its
  // `done` got it, or the sink's refusal).
  void write_replies(const absl::Status& status);
  // Empties the pack, giving back buffers whose capacity passed max_bytes.
  void clear(size_t max_bytes);

 private:
  std::string key_bytes_;
  std::vector<uint32_t> key_lengths_;
  std::vector<uint64_t> table_keys_;
  std::vector<uint64_t> key_sessions_;
  std::vector<PackedGet> gets_;
  Clock::time_point received_{};  // the first get's
  v1::GetResponse response_;
  std::vector<byte_key::ItemMeta> items_;
};

}  // namespace gphkv::server::memcache

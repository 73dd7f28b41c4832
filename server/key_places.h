// Where each key of a run lives, once the store holds byte keys or keys that
// collided (docs/byte-keys.md): the general path of gets, puts and deletes.
// While the store holds neither, every table slot belongs to the uint64 key
// that names it and the store takes its plain paths instead.
//
// A key's table slot is the one its table key names. The slot is the key's
// own when it holds the key: a uint64 key's plain value (record bit clear),
// or a byte key's record of the same key bytes (read from the value heap and
// compared). Otherwise the key lives in CollidedKeys, if it is stored at all.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "gphkv/engine/elastic_table.h"
#include "server/byte_key.h"
#include "server/call.h"
#include "server/collided_keys.h"
#include "server/value_heap.h"

namespace gphkv::server {

// One key of a call: a uint64 key (its table key is itself), or a byte key.
struct KeyRef {
  uint64_t table_key = 0;
  std::string_view bytes;  // a byte key's bytes (never empty); empty for a uint64 key
  bool is_bytes() const { return !bytes.empty(); }
  // CollidedKeys' identity of the key.
  std::string identity() const;
};

// The keys of a call's op, in order.
template <class Op>
void append_key_refs(const Op& op, std::vector<KeyRef>* out) {
  if (op.byte_keys.empty()) {
    for (uint64_t k : op.keys) out->push_back(KeyRef{k, {}});
  } else {
    op.byte_keys.for_each([&](size_t i, std::string_view key) { out->push_back(KeyRef{op.keys[i], key}); });
  }
}

enum class KeyHome : uint8_t { kTable, kCollided };

struct KeyPlace {
  // Where the key is stored, or where a put of it goes.
  KeyHome home = KeyHome::kTable;
  bool stored = false;
  ValueHandle handle = 0;  // when stored (a byte key's: its record's, record bit set)
  // When asked for (place_keys' with_values) and stored: the key's value,
  // without a byte key's record around it. Views PlacedKeys::bytes.
  std::string_view value;
  // A byte key's item fields (issue 27), read with its record: from the
  // table slot's record always, from CollidedKeys with values.
  byte_key::ItemMeta meta;
  // Stored, but expired at place_keys' `now` or flushed: a miss for reads (gets, and
  // the conditional writes' read), while a put overwrites the slot in place
  // and a delete frees it, giving the memory back.
  bool expired = false;
};

struct PlacedKeys {
  std::vector<KeyPlace> places;
  std::string bytes;  // what the views point into
};

// Finds each key's place. A key not stored goes to its table slot when the
// slot is free and no earlier key of `keys` claimed it, else to
// CollidedKeys: for puts, whose keys are distinct. `with_values` also reads
// the values of the stored keys (gets); without it, the heap is read only
// for byte keys whose slot holds a record (to compare its key).
// `now` (unix seconds) marks the byte keys' items that expired (expired),
// and so are those whose CAS version is below `flushed_below` (written
// before a flush_all, PutMode::kFlush).
absl::Status place_keys(absl::Span<const KeyRef> keys, engine::ElasticTable& table, const ValueHeap& heap,
                        const CollidedKeys& collided, bool with_values, uint32_t now, PlacedKeys* out,
                        uint64_t flushed_below = 0);

}  // namespace gphkv::server

// The two interfaces between the durability module and the store that
// owns the data: RecoverySink takes what recovery reads back, PairSource
// yields the store's pairs for a snapshot. Both pass runs of pairs as views.
#pragma once

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "server/item_meta.h"

namespace gphkv::server::durability {

// Some of the items' fields are not all 0.
inline bool any_item_fields(absl::Span<const byte_key::ItemMeta> metas) {
  for (const byte_key::ItemMeta& m : metas) {
    if (!m.empty()) return true;
  }
  return false;
}

// memcached's flush_all in the log (issue 27): byte-key items whose CAS
// version is below `below` were written before a flush and are gone (0:
// none); `at`, when not 0, is a delayed flush's time (unix seconds) still to
// come, which replaces any earlier pending one. A flush that took effect is
// logged with `below` (the store's next version then) and at = 0.
struct FlushMark {
  uint64_t below = 0;
  uint32_t at = 0;
  bool operator==(const FlushMark& o) const { return below == o.below && at == o.at; }
};

// values[i] is key i's value. A run holds one kind of key: uint64 keys in
// `keys`, or byte keys (1 to 4096 arbitrary bytes each, docs/byte-keys.md) in
// `byte_keys`, the other span empty. The two kinds never name the same key.
// A run of byte keys may carry their items' fields (issue 27): metas[i] is
// byte_keys[i]'s flags, absolute expiry and CAS; empty: all 0. The views
// point into a buffer that lives until the call that passed them returns
// (or, from a PairSource, until its next call).
struct Pairs {
  absl::Span<const uint64_t> keys;
  absl::Span<const std::string_view> values;
  absl::Span<const std::string_view> byte_keys;
  absl::Span<const byte_key::ItemMeta> metas;

  bool has_byte_keys() const { return !byte_keys.empty(); }
  // Some item's fields are not all 0: the run needs entries that carry them.
  bool has_item_fields() const { return any_item_fields(metas); }
  size_t size() const { return values.size(); }
};

// Where recovery delivers the data, in the order it took effect: first the
// snapshot's pairs (a key may come more than once: the last one wins), then
// the log's puts and deletes. An error from any call ends recovery with it.
class RecoverySink {
 public:
  virtual ~RecoverySink() = default;
  // A snapshot's pairs follow: its header counts `pairs` (repeats
  // included) and `value_bytes` of values. A hint, before its first
  // on_puts, for a sink that loads a snapshot in bulk (sizes its table once,
  // builds it at on_snapshot_loaded); damaged blocks may deliver fewer
  // (--recover=skip-corrupt), and on_reset may follow.
  virtual absl::Status on_snapshot_begin(uint64_t pairs, uint64_t value_bytes) {
    (void)pairs;
    (void)value_bytes;
    return absl::OkStatus();
  }
  virtual absl::Status on_puts(const Pairs& pairs) = 0;
  virtual absl::Status on_deletes(absl::Span<const uint64_t> keys) = 0;
  virtual absl::Status on_byte_deletes(absl::Span<const std::string_view> keys) = 0;
  // A flush_all's mark, in its place among the log's puts and deletes.
  virtual absl::Status on_flush(const FlushMark& mark) = 0;
  // The snapshot is in (`sequence`: the last batch it covers); the log's
  // batches follow. A store may bulk-build its table here.
  virtual absl::Status on_snapshot_loaded(uint64_t sequence) {
    (void)sequence;
    return absl::OkStatus();
  }
  // Forget everything delivered so far: the newest snapshot turned out
  // corrupt part way and an older one is loaded instead.
  virtual absl::Status on_reset() = 0;
};

// The pairs a snapshot saves. Called on the snapshot writer's thread.
class PairSource {
 public:
  virtual ~PairSource() = default;
  // The next run of pairs into *out (views valid until the next call);
  // false once every pair was given; an error abandons the snapshot.
  virtual absl::StatusOr<bool> next(Pairs* out) = 0;
};

}  // namespace gphkv::server::durability

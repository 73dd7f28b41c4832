// The order in which a batch's calls take effect. The executor applies a
// batch as runs of consecutive same-kind calls, and every write run ends the
// get pipeline (in-flight reads finish before the table changes), so a batch
// that alternates reads and writes pays a drain and an engine round trip per
// stretch of writes. The contract orders operations per key (the order the
// server received them); operations on different keys commute, and no client
// can tell their order apart. So when no get of the batch reads a key that a
// write of the batch writes, the writes go first, in arrival order, then the
// gets, in arrival order: one write stretch and one get run.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "server/call.h"

namespace gphkv::server {

class RunOrder {
 public:
  // Reorders `calls` (one batch, arrival order) writes-first when that merges
  // stretches and no key is both read and written; returns whether it did.
  // Puts, deletes and shrinks keep their order among themselves, gets theirs.
  bool writes_first(std::vector<Call*>& calls);

 private:
  // The batch's written keys (reused across batches), and a 64-bit filter of
  // them that most read keys fail, so the set is rarely probed.
  absl::flat_hash_set<uint64_t> written_;
  uint64_t filter_ = 0;
};

}  // namespace gphkv::server

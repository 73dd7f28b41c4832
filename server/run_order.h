// The order in which a batch's calls take effect. The executor applies a
// batch as runs of consecutive same-kind calls, and every write run ends the
// get pipeline (in-flight reads finish before the table changes) and costs
// an engine round trip or more, so a batch that alternates reads and writes
// pays that per stretch of writes (measured: a 10% write mix on CUDA spent
// 13 put runs a batch, docs/performance.md "What writes cost the reads").
//
// The contract orders each session's operations per key (the order its
// stream or connection sent them; server/call.h, Call::session); operations
// on different keys commute, and calls of different sessions in one batch
// are concurrent (none was answered before the other was sent: a batch's
// calls are all held when it starts), so no client can tell their order
// apart, and any order of them is linearizable. A batch with a call of no
// known session orders every key across sessions. So each call goes to the
// earliest run that the earlier calls of its keys (of its session) allow,
// runs taking turns by kind (puts, deletes, shrinks, gets, puts, ...):
//   - a write after every earlier call of one of its keys: in the run of an
//     earlier write of its kind (a run applies its calls in arrival order),
//     in a later one than another kind's;
//   - a get after every earlier write of one of its keys; gets of one key
//     with no write between them see the same value, so they need no order;
//   - a get that touches (memcached's touch, gat, gats: it rewrites the
//     item) is ordered like a write, but in get runs: a get run applies its
//     touches and reads in arrival order (server/store_touch.cc).
// Within a run the calls keep their arrival order. A batch keeps its arrival
// order when that has as few runs, and when it holds a flush_all (it writes
// every key).
#pragma once

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "server/call.h"

namespace gphkv::server {

class RunOrder {
 public:
  // Reorders `calls` (one batch, arrival order) into fewer runs as the rules
  // above allow; returns whether it did.
  bool reorder(std::vector<Call*>& calls);

 private:
  // Per key that a call of the batch changes: the latest level of a call
  // that touched it, and of one that changed it (-1: none), and a 64-bit
  // filter of those keys that most other keys fail. Reused across batches.
  struct KeyLevels {
    int any = -1;
    int changed = -1;
  };
  absl::flat_hash_map<uint64_t, KeyLevels> levels_;
  uint64_t filter_ = 0;
  std::vector<int> level_of_;
  std::vector<uint32_t> order_;
  std::vector<Call*> sorted_;
};

}  // namespace gphkv::server

// Where a put run spent its time (seconds), for the gphkv_put_stage_seconds
// histograms and docs/performance.md (issue 25: a write must not hold the
// reads queued with it; these say what it holds them for). Host clock on
// the executor thread; a CUDA stage's time includes the launches and the
// synchronization that ends it.
#pragma once

#include <array>

namespace gphkv::server {

enum PutStage : int {
  kPutDrain = 0,  // executor: pipelined gets in flight finished before the run
  kPutPlan,       // the run's keys looked up (find_stored, or the placed path's places)
  kPutAdmit,      // --memory admission (the value heap's compaction included), less kPutEvict
  kPutEvict,      // the eviction admission asks for (--eviction=lru: the CLOCK's steps)
  kPutHeap,       // the admitted values written to the value heap
  kPutTable,      // the table learns the handles (insert_or_assign)
  kPutFinish,     // replaced values freed, collided keys, a small rebuild swapped in
  kNumPutStages
};

inline const char* put_stage_name(int s) {
  static const char* const kNames[kNumPutStages] = {"drain", "plan", "admit", "evict", "heap", "table", "finish"};
  return kNames[s];
}

struct PutStageTimes {
  std::array<double, kNumPutStages> seconds{};
  void clear() { seconds.fill(0); }
};

}  // namespace gphkv::server

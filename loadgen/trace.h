// Reading back gphkv-loadgen's --trace: one line per call, "THREAD OP KEY...",
// OP get, put or delete; a thread's calls in its send order, the threads one
// after another (the trace is written at the end of the run).
#pragma once

#include <cstdint>
#include <istream>
#include <vector>

#include "absl/status/statusor.h"
#include "loadgen/cache_model.h"
#include "loadgen/workload.h"

namespace gphkv::loadgen {

struct TraceCall {
  OpType type = OpType::kGet;
  std::vector<uint64_t> keys;
};

// Per thread (by its number), its calls in send order. A malformed line is
// an error naming its line number.
using Trace = std::vector<std::vector<TraceCall>>;
absl::StatusOr<Trace> ReadTrace(std::istream& in);

// Plays the trace into `model`. The trace does not say how the threads'
// calls interleaved in time, so they take turns, a call each (thread 0's
// first, then thread 1's first, ...): exact for one thread at depth 1, an
// approximation of threads running at the same pace otherwise. Returns the
// calls played.
uint64_t ReplayTrace(const Trace& trace, CacheModel* model);

}  // namespace gphkv::loadgen

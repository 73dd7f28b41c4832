// What every engine_bench measurement shares: the arguments, the stream the
// timed work runs on, the report it adds to, and the timing and checking
// helpers. Every figure is the median of --reps timed runs (CUDA events on
// the stream) after a warm-up run, in G operations per second.
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>

#include "absl/status/status.h"
#include "engine/bench/args.h"
#include "engine/bench/cuda_check.h"
#include "engine/bench/report.h"
#include "gphkv/engine/table.h"

// OK(status): a benchmark's check of an engine call: on an error, print it
// with the place and exit 2.
#define OK(x)                                                                           \
  do {                                                                                  \
    absl::Status s_ = (x);                                                              \
    if (!s_.ok()) {                                                                     \
      std::fprintf(stderr, "%s at %s:%d\n", s_.ToString().c_str(), __FILE__, __LINE__); \
      std::exit(2);                                                                     \
    }                                                                                   \
  } while (0)

namespace gphkv::bench {

struct Context {
  Args args;
  cudaStream_t s = nullptr;
  int sms = 0;
  Report report;
};

// Median of `reps` timings of `body` (after one untimed warm-up) in ms;
// `between` runs before each, untimed.
double median_ms(int reps, cudaStream_t s, const std::function<void()>& body,
                 const std::function<void()>& between = nullptr);

inline double gops(uint64_t n, double ms) { return static_cast<double>(n) / (ms * 1e-3) / 1e9; }

inline unsigned blocks_for(uint64_t n) { return static_cast<unsigned>((n + 255) / 256); }

inline double host_ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// The device buffers of one table's measurements: a batch of keys and values
// (inserts, a burst) with their outcomes and erased flags, and nq queries
// with their answers; `count` is a device counter.
struct TableBuffers {
  TableBuffers(uint64_t batch, uint64_t nq);
  ~TableBuffers();
  TableBuffers(const TableBuffers&) = delete;
  TableBuffers& operator=(const TableBuffers&) = delete;

  uint64_t *keys = nullptr, *values = nullptr;
  engine::UpsertOutcome* outcomes = nullptr;
  uint8_t* erased = nullptr;
  uint64_t *queries = nullptr, *out = nullptr;
  uint8_t* found = nullptr;
  unsigned long long* count = nullptr;
};

// Exits 3 unless hit_pct% (within one point) of the nq flags are 1; `count`
// is a device counter to use.
void check_hits(Context& c, const uint8_t* found, uint64_t nq, int hit_pct, unsigned long long* count, const char* who);

// Frees what the stream-ordered pool keeps (the tables' CudaTable::init set
// it to keep everything), so the next section's cudaMalloc finds the memory.
void trim_memory_pool();

}  // namespace gphkv::bench

// What a run measured: per operation type counters, errors by status and a
// latency histogram; a per-interval series for the plot and progress line.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "loadgen/latency_histogram.h"
#include "loadgen/workload.h"

namespace gphkv::loadgen {

struct OpStats {
  uint64_t calls = 0;        // completed calls, errors included
  uint64_t keys = 0;         // keys carried by those calls
  uint64_t found = 0;        // gets: keys found (hits)
  uint64_t value_bytes = 0;  // value bytes moved (gets: received, puts: sent)
  uint64_t errors = 0;
  std::map<std::string, uint64_t> errors_by_status;
  LatencyHistogram latency;  // ns; errors included (a timeout is a latency too)

  void Merge(const OpStats& other);
};

struct RunStats {
  std::array<OpStats, kOpTypes> by_type;
  // Cache-aside fills (cache_aside.h): the puts that follow a get's misses,
  // apart from the workload's own puts (not in by_type nor in Overall()).
  OpStats fills;
  double seconds = 0;        // measured window: its start to the last measured completion
  uint64_t scheduled = 0;    // open loop: calls whose intended send time fell in the window
  uint64_t dropped = 0;      // open loop: calls never sent (backlog cap or drain timeout)
  uint64_t max_backlog = 0;  // open loop: the longest queue of overdue sends seen
  // Open loop: actual send time minus intended send time, per measured call.
  // Large values mean the generator (or its machine) could not keep the
  // schedule; that lag is inside the reported latencies, as it should be.
  LatencyHistogram send_lag;
  OpStats Overall() const;
  void Merge(const RunStats& other);
};

// One point of the time series (one reporting interval, all threads).
struct SeriesPoint {
  double t_s = 0;  // interval end, seconds since the run's start (warm-up included)
  bool warmup = false;
  double calls_per_s = 0, keys_per_s = 0, bytes_per_s = 0;
  double hit_ratio = 0;
  uint64_t errors = 0;
  double p50_us = 0, p90_us = 0, p99_us = 0, p999_us = 0, max_us = 0;
};

// Per-thread counters for the current interval, swapped out by the reporter.
// The lock is uncontended but for one swap per interval.
class IntervalRecorder {
 public:
  void Record(uint64_t keys, uint64_t found, uint64_t get_keys, uint64_t bytes, bool error, uint64_t latency_ns);
  struct Snapshot {
    uint64_t calls = 0, keys = 0, get_keys = 0, found = 0, bytes = 0, errors = 0;
    LatencyHistogram latency;
  };
  // Adds this interval's counts to *into and starts a new interval.
  void TakeInto(Snapshot* into);

 private:
  std::mutex mu_;
  Snapshot current_;
};

}  // namespace gphkv::loadgen

// The drivers: when each call is sent, on which connection, and from which
// instant its latency counts.
//
// Closed loop (memtier_benchmark, YCSB): every connection keeps `depth` calls
// outstanding; a completion immediately sends the next call on the same slot.
// Throughput is what the store gives back; latency counts from the actual
// send, so a stalled store simply slows the generator down (coordinated
// omission by design: use it to find peak throughput, not to judge tails).
//
// Open loop (wrk2): calls are due on a fixed schedule, `rate` per second in
// all (uniform spacing, or Poisson arrivals), whatever the store does. A due
// call waits for a free slot if all connections are at `depth`; its latency
// counts from its intended send time, so a stall shows up in the tail
// instead of hiding.
//
// Each driver thread runs its own Session (connections) and OpSource; the
// threads share only the clock origin and the interval recorders.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "loadgen/cpu_usage.h"
#include "loadgen/read_check.h"
#include "loadgen/run_stats.h"
#include "loadgen/server_stages.h"
#include "loadgen/target.h"

namespace gphkv::loadgen {

class OpSource {
 public:
  virtual ~OpSource() = default;
  // Fills *op with the next call; false when the source is exhausted.
  virtual bool Next(Op* op) = 0;
};

struct DriveOptions {
  enum class Mode { kClosed, kOpen };
  Mode mode = Mode::kClosed;
  uint32_t threads = 1;
  uint32_t connections = 1;           // per thread
  uint32_t depth = 1;                 // calls outstanding per connection, at most
  double rate = 0;                    // open loop: calls per second, all threads together
  bool poisson = false;               // open loop: exponential gaps instead of uniform ones
  double warmup_s = 0;                // run, but do not measure, this long first
  double duration_s = 10;             // measured window length (when count == 0)
  uint64_t count = 0;                 // measured calls in all (0: by duration)
  double drain_timeout_s = 10;        // after the window: wait this long for calls in flight
  uint64_t max_backlog = 10'000'000;  // open loop: overdue sends remembered, per thread
  // Open loop: busy-poll for the last spin_us before each due send instead of
  // sleeping through it; a sleeping thread wakes tens of microseconds late.
  // Costs a core per thread at high rates; worth it on a dedicated client.
  double spin_us = 0;
  uint64_t seed = 1;   // for Poisson gaps (kept apart from the op stream)
  int server_pid = 0;  // a process (the store) whose CPU use over the window is reported beside ours
  // A gphkv server's metrics endpoint (HOST:PORT), scraped as the window
  // opens and closes for its time per call by stage (server_stages.h).
  std::string server_metrics;
  // Cache-aside (cache_aside.h): when set, a get that misses is followed, on
  // its connection and in its slot, by a put of the keys it missed (value
  // sizes from this workload) before the slot takes its next call; the
  // fills are counted in RunStats::fills. Needs the session to list the
  // values found (TargetOptions::inspect_reads).
  const Workload* cache_aside = nullptr;
};

// Called once per reporting interval with the interval's point.
using IntervalCallback = std::function<void(const SeriesPoint&)>;

struct DriveResult {
  RunStats stats;
  std::vector<SeriesPoint> series;
  // From the measured window's start until every driver thread is done (the
  // drain included), the same span as the throughput's.
  CpuUsage cpu;
  // The server's own time per call over the same span, by stage.
  ServerStages server_stages;
  // What the read checks found, warm-up and drain included (all threads).
  ReadCheckStats read_check;
};

// Runs the drivers to completion. `make_source(t)` gives thread t its ops;
// `make_checker(t)`, when given, the check of what thread t reads against
// what it wrote (read_check.h), told of every op it sends and every answer.
absl::StatusOr<DriveResult> Drive(Target& target, const DriveOptions& options,
                                  const std::function<std::unique_ptr<OpSource>(uint32_t)>& make_source,
                                  double interval_s, const IntervalCallback& on_interval,
                                  const std::function<std::unique_ptr<ReadChecker>(uint32_t)>& make_checker = nullptr);

}  // namespace gphkv::loadgen

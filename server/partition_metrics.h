// The table gauges of every partition (label gpu: the CUDA device id, or the
// partition index on the CPU backend) and of the server in total, set from
// the executors' published figures each time /metrics is collected.
//
// The totals keep the names and the unlabelled series the dashboards and
// alerts have always read (gphkv_table_keys, gphkv_memory_limit_bytes, ...:
// deploy/ uses them as they are). The parts are families of their own,
// gphkv_gpu_* with the gpu label, rather than a gpu label on the old names:
// one family holding both a total and its parts would make every sum() over
// it count each key twice.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include "server/executor.h"
#include "server/service_metrics.h"

namespace gphkv::server {

class PartitionMetrics {
 public:
  // labels[k]: partition k's gpu label.
  PartitionMetrics(ServiceMetrics& metrics, const std::vector<std::string>& labels);

  // stats[k] and queued_keys[k] are partition k's. Runs on the collecting
  // thread, one collection at a time (ServiceMetrics::on_collect).
  void refresh(const std::vector<ExecutorStats>& stats, const std::vector<uint64_t>& queued_keys);

 private:
  struct Series {
    prometheus::Gauge* keys;
    prometheus::Gauge* load_factor;
    prometheus::Gauge* table_bytes;
    prometheus::Gauge* value_heap_bytes;
    prometheus::Gauge* memory_limit_bytes;
    prometheus::Gauge* queue_keys;
    prometheus::Gauge* rebuilding;
    prometheus::Counter* batches;
    prometheus::Counter* batched_keys;
    prometheus::Counter* rebuilds;
    // What the counters were last brought to (they only move forward).
    uint64_t reported_batches = 0;
    uint64_t reported_batched_keys = 0;
    uint64_t reported_rebuilds = 0;
    // The executor's waits (ExecutorStats' *_ns): for calls, a free get slot, the device.
    std::array<prometheus::Counter*, 3> waits{};
    std::array<uint64_t, 3> reported_wait_ns{};
  };
  ServiceMetrics& metrics_;
  std::vector<Series> series_;
};

}  // namespace gphkv::server

// The service's metrics, by the names the dashboards and alerts use
// (deploy/ relies on these exact names and labels).
#pragma once

#include <array>
#include <atomic>
#include <string>

#include "absl/status/status.h"
#include "server/get_stages.h"
#include "server/metrics/registry.h"

namespace gphkv::server {

// Operations as labelled in metrics.
// kPipeline and kBatches count streams (their operations count as get, put, delete).
enum class OpLabel { kGet = 0, kPut, kDelete, kPipeline, kStats, kShrink, kBatches, kCount };
const char* op_label_name(OpLabel op);

// The status-code label: gRPC's code names (OK, INVALID_ARGUMENT, ...).
const char* code_label_name(absl::StatusCode code);

class ServiceMetrics {
 public:
  ServiceMetrics();

  metrics::Registry& registry() { return registry_; }

  // One finished request (or pipelined op) of `keys` keys with its end-to-end time.
  void record_request(OpLabel op, absl::StatusCode code, uint64_t keys, double seconds) {
    record_requests(op, code, 1, keys, seconds);
  }
  // `count` requests of `keys` keys in all, answered together after `seconds`.
  void record_requests(OpLabel op, absl::StatusCode code, uint64_t count, uint64_t keys, double seconds);

  // The executor's per-batch figures.
  metrics::Histogram* batch_keys;      // keys per engine launch
  metrics::Histogram* batch_calls;     // calls coalesced per batch
  metrics::Histogram* queue_wait;      // seconds from enqueue to batch start, per call
  std::array<metrics::Histogram*, 3> device_seconds;  // engine time per launch: get, put, delete
  // Pipelined CUDA gets, per batch and stage (server/get_stages.h).
  std::array<metrics::Histogram*, kNumGetStages> get_stage_seconds;

  // Table and memory state, set by the executor after each batch.
  metrics::Gauge* table_keys;
  metrics::Gauge* table_load_factor;
  metrics::Gauge* table_bytes;
  metrics::Gauge* value_heap_bytes;
  metrics::Gauge* memory_limit_bytes;
  metrics::Gauge* queue_keys;  // keys waiting in the batcher

  metrics::Family<metrics::Counter>* rebuilds;  // label cause
  metrics::Counter* insert_relocations;

  // gphkv_build_info{version,backend,device} 1.
  void set_build_info(const std::string& version, const std::string& backend,
                      const std::string& device);

 private:
  static constexpr int kCodes = 17;
  metrics::Registry registry_;
  metrics::Family<metrics::Gauge>* build_info_;
  metrics::Family<metrics::Counter>* requests_family_;
  metrics::Family<metrics::Counter>* keys_family_;
  // Resolved series per (op, code); filled lazily, read lock-free.
  std::array<std::array<std::atomic<metrics::Counter*>, kCodes>, static_cast<int>(OpLabel::kCount)> requests_{};
  std::array<std::array<std::atomic<metrics::Counter*>, kCodes>, static_cast<int>(OpLabel::kCount)> keys_{};
  std::array<metrics::Histogram*, static_cast<int>(OpLabel::kCount)> duration_{};
};

}  // namespace gphkv::server

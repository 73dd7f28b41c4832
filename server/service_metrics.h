// The service's metrics, by the names the dashboards and alerts use
// (deploy/ relies on these exact names and labels), in a prometheus-cpp
// registry.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "absl/status/status.h"
#include "server/call_stages.h"
#include "server/get_stages.h"
#include "server/put_stages.h"

namespace gphkv::server {

// Operations as labelled in metrics.
// kPipeline and kBatches count streams (their operations count as get, put, delete).
enum class OpLabel { kGet = 0, kPut, kDelete, kPipeline, kStats, kShrink, kBatches, kCount };
const char* op_label_name(OpLabel op);

// The status-code label: gRPC's code names (OK, INVALID_ARGUMENT, ...).
const char* code_label_name(absl::StatusCode code);

class RefreshedRegistry;

class ServiceMetrics {
 public:
  ServiceMetrics();

  // Shared because prometheus::Exposer holds the registry by weak_ptr.
  const std::shared_ptr<prometheus::Registry>& registry() const { return registry_; }
  // Every series now, in the text exposition format (for tools that embed a server).
  std::string render() const;
  // Runs `refresh` (on the scraping thread) before every collection of the
  // registry: for gauges that change with time rather than with batches,
  // such as the age of the last snapshot.
  void on_collect(std::function<void()> refresh);

  // One finished request (or pipelined op) of `keys` keys with its end-to-end time.
  void record_request(OpLabel op, absl::StatusCode code, uint64_t keys, double seconds) {
    record_requests(op, code, 1, keys, seconds);
  }
  // `count` requests of `keys` keys in all, answered together after `seconds`.
  void record_requests(OpLabel op, absl::StatusCode code, uint64_t count, uint64_t keys, double seconds);

  // The executor's per-batch figures. Series are resolved here once; an
  // update is then a few atomic operations (a histogram also takes its own
  // series' mutex in prometheus-cpp 1.0.1).
  prometheus::Histogram* batch_keys;                     // keys per engine launch
  prometheus::Histogram* batch_calls;                    // calls coalesced per batch
  prometheus::Histogram* queue_wait;                     // seconds from enqueue to batch start, per call
  std::array<prometheus::Histogram*, 3> device_seconds;  // engine time per launch: get, put, delete
  // Pipelined CUDA gets, per batch and stage (server/get_stages.h).
  std::array<prometheus::Histogram*, kNumGetStages> get_stage_seconds;
  // Put runs, per stage (server/put_stages.h).
  std::array<prometheus::Histogram*, kNumPutStages> put_stage_seconds;
  // Every call, per stage of its time in the server (server/call_stages.h).
  std::array<prometheus::Histogram*, kNumCallStages> call_stage_seconds;

  // Table and memory state, set by the executor after each batch.
  prometheus::Gauge* table_keys;
  prometheus::Gauge* collided_keys;
  prometheus::Gauge* table_load_factor;
  prometheus::Gauge* table_bytes;
  prometheus::Gauge* value_heap_bytes;
  prometheus::Gauge* memory_limit_bytes;
  prometheus::Gauge* queue_keys;  // keys waiting in the batcher

  prometheus::Family<prometheus::Counter>* rebuilds;  // label cause
  prometheus::Counter* insert_relocations;
  prometheus::Counter* items_swept;
  prometheus::Counter* evictions;

  // gphkv_build_info{version,backend,device} 1.
  void set_build_info(const std::string& version, const std::string& backend, const std::string& device);

 private:
  static constexpr int kCodes = 17;
  static constexpr int kOps = static_cast<int>(OpLabel::kCount);
  std::shared_ptr<prometheus::Registry> registry_;
  RefreshedRegistry* refreshed_;  // registry_, with its refresh hook
  prometheus::Family<prometheus::Gauge>* build_info_;
  prometheus::Family<prometheus::Counter>* requests_family_;
  prometheus::Family<prometheus::Counter>* keys_family_;
  // Resolved series per (op, code); filled lazily, read lock-free.
  std::array<std::array<std::atomic<prometheus::Counter*>, kCodes>, kOps> requests_{};
  std::array<std::array<std::atomic<prometheus::Counter*>, kCodes>, kOps> keys_{};
  std::array<prometheus::Histogram*, kOps> duration_{};
  std::vector<double> duration_bounds_;
};

}  // namespace gphkv::server

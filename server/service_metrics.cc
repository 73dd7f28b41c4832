#include "server/service_metrics.h"

namespace gphkv::server {
namespace {

constexpr const char* kCodeNames[] = {
    "OK",           "CANCELLED",          "UNKNOWN",      "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED", "NOT_FOUND",     "ALREADY_EXISTS", "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
    "UNIMPLEMENTED", "INTERNAL",          "UNAVAILABLE",  "DATA_LOSS",
    "UNAUTHENTICATED"};

}  // namespace

const char* op_label_name(OpLabel op) {
  switch (op) {
    case OpLabel::kGet: return "get";
    case OpLabel::kPut: return "put";
    case OpLabel::kDelete: return "delete";
    case OpLabel::kPipeline: return "pipeline";
    case OpLabel::kStats: return "stats";
    case OpLabel::kShrink: return "shrink";
    case OpLabel::kBatches: return "batches";
    default: return "unknown";
  }
}

const char* code_label_name(absl::StatusCode code) {
  const int c = static_cast<int>(code);
  return (c >= 0 && c < 17) ? kCodeNames[c] : "UNKNOWN";
}

ServiceMetrics::ServiceMetrics() {
  auto* requests = registry_.counter("gphkv_requests_total",
                                     "Requests (and pipelined operations) answered, by op and status code.");
  auto* keys = registry_.counter("gphkv_keys_total", "Keys carried by answered requests, by op and status code.");
  auto* duration = registry_.histogram(
      "gphkv_request_duration_seconds", "End-to-end request time in the server, by op.",
      metrics::exponential_buckets(10e-6, 2.0, 20));  // 10 us .. ~5 s
  for (int op = 0; op < static_cast<int>(OpLabel::kCount); ++op) {
    const std::string name = op_label_name(static_cast<OpLabel>(op));
    duration_[op] = duration->with({{"op", name}});
    // Series for every code are made up front so the hot path never locks;
    // only OK is pre-registered in the output (others appear when first moved),
    // which keeps /metrics short.
    (void)requests->with({{"op", name}, {"code", "OK"}});
    (void)keys->with({{"op", name}, {"code", "OK"}});
  }
  requests_family_ = requests;
  keys_family_ = keys;

  batch_keys = registry_.histogram("gphkv_batch_keys", "Keys per engine launch.",
                                   metrics::exponential_buckets(1, 2.0, 20))->with({});
  batch_calls = registry_.histogram("gphkv_batch_calls", "Calls coalesced into one batch.",
                                    metrics::exponential_buckets(1, 2.0, 14))->with({});
  queue_wait = registry_.histogram("gphkv_queue_wait_seconds",
                                   "Time a call waited in the batcher before its batch ran.",
                                   metrics::exponential_buckets(1e-6, 2.0, 24))->with({});
  auto* device = registry_.histogram("gphkv_device_seconds", "Engine time per launch (table and value heap), by op.",
                                     metrics::exponential_buckets(1e-6, 2.0, 24));
  device_seconds = {device->with({{"op", "get"}}), device->with({{"op", "put"}}),
                    device->with({{"op", "delete"}})};
  auto* stages = registry_.histogram("gphkv_get_stage_seconds",
                                     "Pipelined CUDA get batches: time per stage (pack, h2d, find, gather, d2h, wait, "
                                     "respond); device stages only when stage timing is on.",
                                     metrics::exponential_buckets(1e-6, 2.0, 24));
  for (int st = 0; st < kNumGetStages; ++st) get_stage_seconds[st] = stages->with({{"stage", get_stage_name(st)}});

  table_keys = registry_.gauge("gphkv_table_keys", "Keys stored.")->with({});
  table_load_factor = registry_.gauge("gphkv_table_load_factor", "Keys over bucket slots of the GPH table.")->with({});
  table_bytes = registry_.gauge("gphkv_table_bytes", "Bytes held by the table (cells and buckets).")->with({});
  value_heap_bytes = registry_.gauge("gphkv_value_heap_bytes", "Bytes reserved by the value heap.")->with({});
  memory_limit_bytes = registry_.gauge("gphkv_memory_limit_bytes", "The --memory cap for table and value heap.")->with({});
  queue_keys = registry_.gauge("gphkv_queue_keys", "Keys waiting in the batcher.")->with({});
  rebuilds = registry_.counter("gphkv_rebuilds_total", "Table rebuilds, by cause.");
  // The engine::ElasticTable's causes, exported at 0 from the start.
  for (const char* cause : {"load_factor", "no_room", "burst", "shrink"}) (void)rebuilds->with({{"cause", cause}});
  insert_relocations = registry_.counter("gphkv_insert_relocations_total",
                                         "Keys relocated by the insert path (Extended Move).")->with({});
  build_info_ = registry_.gauge("gphkv_build_info", "Version, backend and device of this server; always 1.");
}

void ServiceMetrics::record_requests(OpLabel op, absl::StatusCode code, uint64_t count, uint64_t keys,
                                     double seconds) {
  const int o = static_cast<int>(op);
  int c = static_cast<int>(code);
  if (c < 0 || c >= kCodes) c = static_cast<int>(absl::StatusCode::kUnknown);
  // Resolve each (op, code) series once; afterwards the update is lock-free.
  metrics::Counter* r = requests_[o][c].load(std::memory_order_acquire);
  if (r == nullptr) {
    r = requests_family_->with({{"op", op_label_name(op)}, {"code", kCodeNames[c]}});
    requests_[o][c].store(r, std::memory_order_release);
  }
  metrics::Counter* k = keys_[o][c].load(std::memory_order_acquire);
  if (k == nullptr) {
    k = keys_family_->with({{"op", op_label_name(op)}, {"code", kCodeNames[c]}});
    keys_[o][c].store(k, std::memory_order_release);
  }
  r->inc(count);
  k->inc(keys);
  for (uint64_t i = 0; i < count; ++i) duration_[o]->observe(seconds);
}

void ServiceMetrics::set_build_info(const std::string& version, const std::string& backend,
                                    const std::string& device) {
  build_info_->with({{"version", version}, {"backend", backend}, {"device", device}})->set(1.0);
}

}  // namespace gphkv::server

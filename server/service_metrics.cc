#include "server/service_metrics.h"

#include <algorithm>
#include <mutex>
#include <sstream>

#include <prometheus/text_serializer.h>

#include "server/metric_families.h"

namespace gphkv::server {
namespace {

constexpr const char* kCodeNames[] = {
    "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
    "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
    "DATA_LOSS", "UNAUTHENTICATED"};

// start, start*factor, ... (count of them): each bound the product of the one
// before, as gphkv has always computed them, so the bounds stay the same doubles.
std::vector<double> exponential_buckets(double start, double factor, int count) {
  std::vector<double> b;
  for (int i = 0; i < count; ++i, start *= factor) b.push_back(start);
  return b;
}

}  // namespace

// A registry that runs a hook before it is collected.
class RefreshedRegistry final : public prometheus::Registry {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (refresh_) refresh_();
    }
    return prometheus::Registry::Collect();
  }
  void set_refresh(std::function<void()> refresh) {
    std::lock_guard<std::mutex> lock(mu_);
    refresh_ = std::move(refresh);
  }

 private:
  mutable std::mutex mu_;
  std::function<void()> refresh_;
};

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
  auto registry = std::make_shared<RefreshedRegistry>();
  refreshed_ = registry.get();
  registry_ = std::move(registry);
  prometheus::Registry& r = *registry_;
  auto& requests =
      counter_family(r, "gphkv_requests_total", "Requests (and pipelined operations) answered, by op and status code.");
  auto& keys = counter_family(r, "gphkv_keys_total", "Keys carried by answered requests, by op and status code.");
  auto& duration =
      histogram_family(r, "gphkv_request_duration_seconds", "End-to-end request time in the server, by op.");
  duration_bounds_ = exponential_buckets(10e-6, 2.0, 20);  // 10 us .. ~5 s
  for (int op = 0; op < kOps; ++op) {
    const std::string name = op_label_name(static_cast<OpLabel>(op));
    duration_[op] = &duration.Add({{"op", name}}, duration_bounds_);
    // Only OK is in the output from the start (other codes appear when first
    // moved), which keeps /metrics short; record_request resolves each series once.
    (void)requests.Add({{"op", name}, {"code", "OK"}});
    (void)keys.Add({{"op", name}, {"code", "OK"}});
  }
  requests_family_ = &requests;
  keys_family_ = &keys;

  batch_keys =
      &histogram_family(r, "gphkv_batch_keys", "Keys per engine launch.").Add({}, exponential_buckets(1, 2.0, 20));
  batch_calls = &histogram_family(r, "gphkv_batch_calls", "Calls coalesced into one batch.")
                     .Add({}, exponential_buckets(1, 2.0, 14));
  const auto microseconds_up = exponential_buckets(1e-6, 2.0, 24);  // 1 us .. ~8 s
  queue_wait =
      &histogram_family(r, "gphkv_queue_wait_seconds", "Time a call waited in the batcher before its batch ran.")
           .Add({}, microseconds_up);
  auto& device = histogram_family(r, "gphkv_device_seconds", "Engine time per launch (table and value heap), by op.");
  device_seconds = {&device.Add({{"op", "get"}}, microseconds_up), &device.Add({{"op", "put"}}, microseconds_up),
                    &device.Add({{"op", "delete"}}, microseconds_up)};
  auto& stages = histogram_family(r, "gphkv_get_stage_seconds",
                                  "Pipelined CUDA get batches: time per stage (pack, h2d, find, gather, d2h, wait, "
                                  "respond, slot: waiting for a free slot, idle: waiting for calls); device stages "
                                  "only when stage timing is on.");
  for (int st = 0; st < kNumGetStages; ++st) {
    get_stage_seconds[st] = &stages.Add({{"stage", get_stage_name(st)}}, microseconds_up);
  }
  auto& put_stages = histogram_family(r, "gphkv_put_stage_seconds",
                                      "Put runs: time per stage (drain: the pipelined gets in flight finished "
                                      "first; plan: the keys looked up; admit: --memory, eviction included; heap: "
                                      "values written; table: the table's write; finish: replaced values freed).");
  for (int st = 0; st < kNumPutStages; ++st) {
    put_stage_seconds[st] = &put_stages.Add({{"stage", put_stage_name(st)}}, microseconds_up);
  }
  auto& call_stages = histogram_family(r, "gphkv_call_stage_seconds",
                                       "Every call's time in the server by stage: intake (read to queued), execute "
                                       "(batch start to answers ready), answer_wait (in the completion queue), "
                                       "respond (fill and answer); a split call's split_wait (first to last part "
                                       "answered) and merge; a Batches message's serialize and send (queued on its "
                                       "stream to written); the queue is gphkv_queue_wait_seconds.");
  for (int st = 0; st < kNumCallStages; ++st) {
    call_stage_seconds[st] = &call_stages.Add({{"stage", call_stage_name(st)}}, call_stage_bounds());
  }

  table_keys = &gauge_family(r, "gphkv_table_keys", "Keys stored, on every GPU (gphkv_gpu_table_keys: each).").Add({});
  collided_keys = &gauge_family(r, "gphkv_collided_keys",
                                "Of the keys stored, those whose table slot another key with the same 64-bit table key "
                                "holds, kept on the host (docs/byte-keys.md); 0 but for about 1 in 2^64 / n.")
                       .Add({});
  table_load_factor = &gauge_family(r, "gphkv_table_load_factor",
                                    "Keys over bucket slots of the GPH table; with several GPUs, the fullest one's.")
                           .Add({});
  table_bytes =
      &gauge_family(r, "gphkv_table_bytes", "Bytes held by the tables (cells and buckets), every GPU's.").Add({});
  value_heap_bytes =
      &gauge_family(r, "gphkv_value_heap_bytes", "Bytes reserved by the value heaps, every GPU's.").Add({});
  memory_limit_bytes = &gauge_family(r, "gphkv_memory_limit_bytes",
                                     "The --memory cap for tables and value heaps (each GPU has its share).")
                            .Add({});
  queue_keys = &gauge_family(r, "gphkv_queue_keys", "Keys waiting in the batchers, every GPU's.").Add({});
  rebuilds = &counter_family(r, "gphkv_rebuilds_total", "Table rebuilds, by cause.");
  // The engine::ElasticTable's causes, exported at 0 from the start.
  for (const char* cause : {"load_factor", "no_room", "burst", "shrink"}) (void)rebuilds->Add({{"cause", cause}});
  insert_relocations =
      &counter_family(r, "gphkv_insert_relocations_total", "Keys relocated by the insert path (Extended Move).")
           .Add({});
  items_swept = &counter_family(r, "gphkv_items_swept_total",
                                "Byte-key items the expiry sweep deleted: expired, or hidden by a flush_all.")
                     .Add({});
  evictions = &counter_family(r, "gphkv_evictions_total",
                              "Items evicted at the --memory cap to make room for a put (--eviction=lru).")
                   .Add({});
  build_info_ = &gauge_family(r, "gphkv_build_info", "Version, backend and device of this server; always 1.");
}

std::string ServiceMetrics::render() const {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry_->Collect());
  return out.str();
}

void ServiceMetrics::on_collect(std::function<void()> refresh) { refreshed_->set_refresh(std::move(refresh)); }

void ServiceMetrics::record_requests(OpLabel op, absl::StatusCode code, uint64_t count, uint64_t keys, double seconds) {
  const int o = static_cast<int>(op);
  int c = static_cast<int>(code);
  if (c < 0 || c >= kCodes) c = static_cast<int>(absl::StatusCode::kUnknown);
  // Resolve each (op, code) series once; afterwards the counters update lock-free
  // (the histogram takes its series' mutex: prometheus-cpp 1.0.1's Observe).
  prometheus::Counter* r = requests_[o][c].load(std::memory_order_acquire);
  if (r == nullptr) {
    r = &requests_family_->Add({{"op", op_label_name(op)}, {"code", kCodeNames[c]}});
    requests_[o][c].store(r, std::memory_order_release);
  }
  prometheus::Counter* k = keys_[o][c].load(std::memory_order_acquire);
  if (k == nullptr) {
    k = &keys_family_->Add({{"op", op_label_name(op)}, {"code", kCodeNames[c]}});
    keys_[o][c].store(k, std::memory_order_release);
  }
  r->Increment(static_cast<double>(count));
  k->Increment(static_cast<double>(keys));
  if (count == 1) {
    duration_[o]->Observe(seconds);
  } else if (count > 1) {
    // Requests answered together (the packed gets of a message) share one
    // duration: observed at once, under one lock of the series' mutex.
    std::vector<double> increments(duration_bounds_.size() + 1, 0.0);
    const auto bucket = std::lower_bound(duration_bounds_.begin(), duration_bounds_.end(), seconds);
    increments[static_cast<size_t>(bucket - duration_bounds_.begin())] = static_cast<double>(count);
    duration_[o]->ObserveMultiple(increments, seconds * static_cast<double>(count));
  }
}

void ServiceMetrics::set_build_info(const std::string& version, const std::string& backend, const std::string& device) {
  build_info_->Add({{"version", version}, {"backend", backend}, {"device", device}}).Set(1.0);
}

}  // namespace gphkv::server

#include "server/partition_metrics.h"

#include <algorithm>

#include "server/metric_families.h"
#include "server/partitions.h"

namespace gphkv::server {
namespace {

void advance(prometheus::Counter* c, uint64_t now, uint64_t& reported) {
  if (now > reported) c->Increment(static_cast<double>(now - reported));
  reported = now;
}

}  // namespace

PartitionMetrics::PartitionMetrics(ServiceMetrics& metrics, const std::vector<std::string>& labels)
    : metrics_(metrics) {
  prometheus::Registry& r = *metrics.registry();
  auto& keys = gauge_family(r, "gphkv_gpu_table_keys", "Keys stored on each GPU (CPU backend: each partition).");
  auto& load = gauge_family(r, "gphkv_gpu_table_load_factor", "Keys over bucket slots of each GPU's GPH table.");
  auto& table = gauge_family(r, "gphkv_gpu_table_bytes", "Bytes held by each GPU's table (cells and buckets).");
  auto& heap = gauge_family(r, "gphkv_gpu_value_heap_bytes", "Bytes reserved by each GPU's value heap.");
  auto& limit = gauge_family(r, "gphkv_gpu_memory_limit_bytes", "Each GPU's share of the --memory cap.");
  auto& queue = gauge_family(r, "gphkv_gpu_queue_keys", "Keys waiting in each GPU's batcher.");
  auto& rebuilding = gauge_family(r, "gphkv_gpu_rebuilding", "1 while a GPU's table is being rebuilt.");
  auto& batches = counter_family(r, "gphkv_gpu_batches_total", "Engine launches on each GPU.");
  auto& batched = counter_family(r, "gphkv_gpu_batched_keys_total", "Keys of the engine launches on each GPU.");
  auto& rebuilds = counter_family(r, "gphkv_gpu_rebuilds_total", "Table rebuilds on each GPU.");
  auto& waits = counter_family(r, "gphkv_gpu_executor_wait_seconds_total",
                               "Time each GPU's executor waited: for calls (idle), for a free get slot while "
                               "earlier answers were filled (slot), for the device (device).");
  for (const std::string& label : labels) {
    const prometheus::Labels l{{"gpu", label}};
    series_.push_back(Series{&keys.Add(l), &load.Add(l), &table.Add(l), &heap.Add(l), &limit.Add(l), &queue.Add(l),
                             &rebuilding.Add(l), &batches.Add(l), &batched.Add(l), &rebuilds.Add(l)});
    const char* const states[3] = {"idle", "slot", "device"};
    for (int w = 0; w < 3; ++w) series_.back().waits[w] = &waits.Add({{"gpu", label}, {"state", states[w]}});
  }
}

void PartitionMetrics::refresh(const std::vector<ExecutorStats>& stats, const std::vector<uint64_t>& queued_keys) {
  uint64_t queued = 0;
  for (size_t k = 0; k < series_.size() && k < stats.size(); ++k) {
    Series& s = series_[k];
    const ExecutorStats& st = stats[k];
    s.keys->Set(static_cast<double>(st.keys));
    s.load_factor->Set(st.load_factor);
    s.table_bytes->Set(static_cast<double>(st.table_bytes));
    s.value_heap_bytes->Set(static_cast<double>(st.value_heap_bytes));
    s.memory_limit_bytes->Set(static_cast<double>(st.memory_limit_bytes));
    s.queue_keys->Set(static_cast<double>(queued_keys[k]));
    s.rebuilding->Set(st.rebuilding ? 1 : 0);
    advance(s.batches, st.batches, s.reported_batches);
    advance(s.batched_keys, st.batched_keys, s.reported_batched_keys);
    advance(s.rebuilds, st.rebuilds, s.reported_rebuilds);
    const uint64_t wait_ns[3] = {st.idle_ns, st.slot_wait_ns, st.device_wait_ns};
    for (int w = 0; w < 3; ++w) {
      if (wait_ns[w] > s.reported_wait_ns[w])
        s.waits[w]->Increment(1e-9 * static_cast<double>(wait_ns[w] - s.reported_wait_ns[w]));
      s.reported_wait_ns[w] = std::max(s.reported_wait_ns[w], wait_ns[w]);
    }
    queued += queued_keys[k];
  }
  const ExecutorStats total = total_stats(stats);
  metrics_.table_keys->Set(static_cast<double>(total.keys));
  metrics_.collided_keys->Set(static_cast<double>(total.collided_keys));
  metrics_.table_load_factor->Set(total.load_factor);
  metrics_.table_bytes->Set(static_cast<double>(total.table_bytes));
  metrics_.value_heap_bytes->Set(static_cast<double>(total.value_heap_bytes));
  metrics_.memory_limit_bytes->Set(static_cast<double>(total.memory_limit_bytes));
  metrics_.queue_keys->Set(static_cast<double>(queued));
}

}  // namespace gphkv::server

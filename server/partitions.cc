#include "server/partitions.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "server/data_dir_totals.h"
#include "server/durability/partition_dirs.h"
#include "spdlog/spdlog.h"

namespace gphkv::server {

absl::StatusOr<std::unique_ptr<Partitions>> Partitions::create(const PartitionsOptions& options,
                                                               ServiceMetrics* metrics, const std::string& cpu_model) {
  const bool cuda = options.store.backend == engine::Backend::kCuda;
  const uint32_t n = cuda ? static_cast<uint32_t>(options.gpus.size()) : options.cpu_partitions;
  if (n == 0) return absl::InvalidArgumentError("a server needs at least one partition");
  std::vector<std::string> dirs;
  if (!options.data_dir.dir.empty()) {
    auto found = durability::partition_dirs(options.data_dir.dir, n);
    if (!found.ok()) return found.status();
    dirs = std::move(*found);
  }
  std::unique_ptr<Partitions> set(new Partitions());
  set->data_dir_root_ = options.data_dir.dir;
  set->completions_ = std::make_shared<CompletionPool>(options.completion_threads);
  for (uint32_t k = 0; k < n; ++k) {
    auto p = std::make_unique<Partition>();
    p->index = k;
    p->gpu = cuda ? options.gpus[k] : -1;
    p->name = cuda ? absl::StrCat("gpu ", p->gpu) : absl::StrCat("partition ", k);
    p->label = absl::StrCat(cuda ? p->gpu : static_cast<int>(k));
    if (cuda) {
      // "NVIDIA H100 80GB HBM3 (cuda:0)", or "cuda:0" if the name cannot be read.
      const std::string gpu_name = engine::cuda_device_name(p->gpu);
      p->device = gpu_name.empty() ? absl::StrCat("cuda:", p->gpu) : absl::StrCat(gpu_name, " (cuda:", p->gpu, ")");
    } else {
      p->device = cpu_model;
    }
    StoreOptions store = options.store;
    store.device = cuda ? p->gpu : 0;
    store.memory_limit_bytes = options.store.memory_limit_bytes / n;
    store.initial_capacity = (options.store.initial_capacity + n - 1) / n;
    auto created = Store::create(store);
    if (!created.ok()) {
      return absl::Status(created.status().code(),
                          absl::StrCat("cannot create the ", std::string(engine::backend_name(store.backend)),
                                       " table of ", p->name, ": ", created.status().message()));
    }
    spdlog::info("{} on {}: table of {} buckets ({} bytes), memory limit {} bytes, values in {} memory", p->name,
                 p->device, (*created)->table().num_buckets(), (*created)->table_bytes(), store.memory_limit_bytes,
                 (*created)->value_heap_kind());
    p->batcher = std::make_unique<Batcher>(options.batcher);
    ExecutorDataDir data_dir{options.data_dir, options.data_dir_metrics, options.on_log_failed};
    if (!dirs.empty()) data_dir.config.dir = dirs[k];
    p->executor = std::make_unique<Executor>(std::move(*created), p->batcher.get(), metrics, set->completions_,
                                             std::move(data_dir));
    set->partitions_.push_back(std::move(p));
  }
  return set;
}

Partitions::~Partitions() { stop(); }

absl::Status Partitions::start() {
  for (auto& p : partitions_) p->executor->launch();
  absl::Status first;
  for (auto& p : partitions_) {
    if (absl::Status s = p->executor->wait_started(); !s.ok() && first.ok()) {
      first = absl::Status(
          s.code(), partitions_.size() == 1 ? std::string(s.message()) : absl::StrCat(p->name, ": ", s.message()));
    }
  }
  if (!first.ok()) stop();
  return first;
}

void Partitions::stop() {
  // Every queue closes first, so the executors drain at the same time.
  for (auto& p : partitions_) p->batcher->close();
  for (auto& p : partitions_) p->executor->join();
  // Every executor has handed over its last answers: deliver them.
  if (completions_ != nullptr) completions_->stop();
}

std::vector<Batcher*> Partitions::batchers() const {
  std::vector<Batcher*> out;
  for (const auto& p : partitions_) out.push_back(p->batcher.get());
  return out;
}

std::vector<std::string> Partitions::names() const {
  std::vector<std::string> out;
  for (const auto& p : partitions_) out.push_back(p->name);
  return out;
}

std::vector<ExecutorStats> Partitions::stats() const {
  std::vector<ExecutorStats> out;
  for (const auto& p : partitions_) out.push_back(p->executor->stats());
  return out;
}

std::vector<const StoreDurability*> Partitions::data_dirs() const {
  std::vector<const StoreDurability*> out;
  for (const auto& p : partitions_) out.push_back(p->executor->data_dir());
  return out;
}

DataDirStatus Partitions::data_dir_status() const {
  std::vector<DataDirStatus> parts;
  for (const auto& p : partitions_) {
    const StoreDurability* d = p->executor->data_dir();
    parts.push_back(d != nullptr ? d->status() : DataDirStatus{});
  }
  return total_data_dir_status(data_dir_root_, parts, names());
}

ExecutorStats total_stats(const std::vector<ExecutorStats>& parts) {
  ExecutorStats t;
  for (const ExecutorStats& s : parts) {
    t.keys += s.keys;
    t.load_factor = std::max(t.load_factor, s.load_factor);
    t.table_bytes += s.table_bytes;
    t.value_heap_bytes += s.value_heap_bytes;
    t.memory_limit_bytes += s.memory_limit_bytes;
    t.rebuilds += s.rebuilds;
    t.batches += s.batches;
    t.batched_keys += s.batched_keys;
    t.collided_keys += s.collided_keys;
    t.evictions += s.evictions;
    t.items_swept += s.items_swept;
    t.rebuilding = t.rebuilding || s.rebuilding;
  }
  return t;
}

}  // namespace gphkv::server

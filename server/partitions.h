// The partitions of a server: one per GPU of --gpus on the CUDA backend, or
// --partitions of them on the CPU backend, each a store (table and value
// heap) on its device, the batcher that queues its calls and the executor
// thread that owns it. The Intake routes calls to them by a hash of the key
// (server/intake.h); Stats and the metrics read their published figures. A
// server of one partition is the same code with N = 1.
//
// Budgets given for the whole server are divided evenly over the
// partitions, as the keys are (a hash spreads them within a few percent):
// --memory and --initial_capacity are totals, each partition getting 1/N.
// The queue bounds (--max_queue_keys, --max_queue_bytes) hold per partition,
// as does --max_batch_keys: each executor batches alone. The completion
// threads (--completion_threads) are one pool that every partition answers
// on: a call split over partitions is merged and answered by the thread
// that fills its last part, and with a pool per partition the partition
// that finished last took every merge, fell further behind and kept its
// pinned get slots held while the other's idled (issue 30).
//
// CUDA: each partition's store works on its own device. The engine, the
// device value heap and the get pipeline set their device (cudaSetDevice) at
// every entry, on whichever thread calls them (the partition's executor, the
// table's rebuild), so no thread relies on another's current device.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/batcher.h"
#include "server/completion_pool.h"
#include "server/executor.h"
#include "server/service_metrics.h"
#include "server/store_durability.h"
#include "server/store_options.h"

namespace gphkv::server {

struct PartitionsOptions {
  // store.backend and the server-wide figures: store.memory_limit_bytes and
  // store.initial_capacity are divided over the partitions.
  StoreOptions store{};
  // The CUDA device of each partition; on the CPU backend ignored.
  std::vector<int> gpus;
  // On the CPU backend: how many partitions.
  uint32_t cpu_partitions = 1;
  BatcherOptions batcher{};
  // Answering threads, one pool for every partition (0: each executor
  // answers its own calls).
  unsigned completion_threads = 1;
  // dir empty: none. With N > 1 partitions each keeps DIR/partition-K
  // (server/durability/partition_dirs.h).
  DataDirConfig data_dir{};
  durability::DurabilityMetrics* data_dir_metrics = nullptr;
  // Runs on a partition's executor thread when its log fails.
  std::function<void(const absl::Status&)> on_log_failed;
};

struct Partition {
  uint32_t index = 0;
  int gpu = -1;        // the CUDA device; -1 on the CPU backend
  std::string name;    // in messages: "gpu 1", "partition 3"
  std::string label;   // the metrics' gpu label: the device id, or the partition index on the CPU backend
  std::string device;  // Stats' device: "NVIDIA H100 80GB HBM3 (cuda:1)", the CPU model
  std::unique_ptr<Batcher> batcher;
  std::unique_ptr<Executor> executor;
};

class Partitions {
 public:
  // Creates every partition's store (nothing runs yet). metrics may be null.
  static absl::StatusOr<std::unique_ptr<Partitions>> create(const PartitionsOptions& options, ServiceMetrics* metrics,
                                                            const std::string& cpu_model);
  ~Partitions();

  // Starts every executor, each recovering its data directory (if any) at
  // the same time as the others. On an error (naming the partition) every
  // executor was stopped again.
  absl::Status start();
  // Refuses new calls, answers every queued one, stops the executors and
  // then the completion threads they share.
  void stop();

  size_t size() const { return partitions_.size(); }
  const Partition& operator[](size_t k) const { return *partitions_[k]; }
  std::vector<Batcher*> batchers() const;
  std::vector<std::string> names() const;

  std::vector<ExecutorStats> stats() const;
  // Null entries without a data directory.
  std::vector<const StoreDurability*> data_dirs() const;
  // The data directory's state in total (data_dir_totals.h); only with one.
  DataDirStatus data_dir_status() const;
  const std::string& data_dir_root() const { return data_dir_root_; }

 private:
  Partitions() = default;
  std::vector<std::unique_ptr<Partition>> partitions_;
  std::shared_ptr<CompletionPool> completions_;  // every executor answers here
  std::string data_dir_root_;
};

// The server's figures: sums, except load_factor, the fullest partition's
// (the one whose growth comes first, which an alert on it is about), and
// rebuilding, whether any partition is.
ExecutorStats total_stats(const std::vector<ExecutorStats>& parts);

}  // namespace gphkv::server

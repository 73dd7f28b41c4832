// The executor: the one thread that owns the store (table + value heap).
// It takes batches from the batcher, refuses calls whose deadline passed,
// puts a batch's writes before its gets when no key is both read and
// written in it (server/run_order.h), splits the batch into runs of
// consecutive same-kind calls (so operations on one key take effect in
// arrival order), applies each run as one engine launch, and answers the
// run's calls once it took effect.
//
// On CUDA with the device value heap, get runs are pipelined: a get run is
// submitted to the device (Store::submit_gets) and the executor goes on to
// the next run or batch; up to pipeline_depth() get runs are in flight on
// their own streams. They are finished in submission order: as soon as the
// device is done with them (BatcherOptions::early_answers; the executor asks
// between batches and before it submits a run), when the pipeline is full,
// when no call is waiting in the batcher, and always before
// a put or delete run or a get run that must take the synchronous path (a
// rebuild in flight) is applied. So writes never overtake an earlier read,
// and a read submitted after a write is acknowledged sees it. A finished
// run's answers are filled into the responses and sent by the completion
// threads, in ranges, while the executor goes on (inline when it has
// nothing else to do).
//
// With a data directory (server/store_durability.h) the executor thread
// first recovers it into the store, before any call is taken. The put and
// delete runs of a batch are then answered only once the batch's record is
// in the log: their OK calls are gathered into one record, appended before
// the batch's first get or shrink run (or at its end), so no read sees a
// write that is not logged, and a batch costs one append (one fsync under
// --fsync=always). If the log fails, the runs it held are answered
// UNAVAILABLE (applied but not logged), every later write is refused, gets
// go on, and the server is told (it reports NOT_SERVING, so an orchestrator
// restarts it). Snapshots are exported between batches, a chunk at a time.
//
// A shrink's value-heap trim also runs between batches, a bounded step at a
// time (under load at most a fifth of the executor's time, back to back when
// idle); its calls are answered when it is done.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "server/batcher.h"
#include "server/completion_pool.h"
#include "server/run_order.h"
#include "server/service_metrics.h"
#include "server/store.h"
#include "server/store_durability.h"
#include "server/thread_owner.h"

namespace gphkv::server {

// What Stats and the table gauges report; published by the executor after
// every batch, read on any thread (the metrics read it when scraped).
struct ExecutorStats {
  uint64_t keys = 0;
  double load_factor = 0;
  uint64_t table_bytes = 0;
  uint64_t value_heap_bytes = 0;
  uint64_t memory_limit_bytes = 0;
  uint64_t rebuilds = 0;
  uint64_t batches = 0;
  uint64_t batched_keys = 0;
  // Of `keys`, those that lost their table slot to a collision (docs/byte-keys.md).
  uint64_t collided_keys = 0;
  // Items evicted at the --memory cap, and those the expiry sweep deleted (StoreCounters).
  uint64_t evictions = 0;
  uint64_t items_swept = 0;
  bool rebuilding = false;
  // Where the executor thread waited (nanoseconds in all): for calls, for a
  // free get slot (answers of earlier batches still being filled), for the
  // device to finish a get batch.
  uint64_t idle_ns = 0;
  uint64_t slot_wait_ns = 0;
  uint64_t device_wait_ns = 0;
};

// The data directory the executor keeps (server/store_durability.h).
struct ExecutorDataDir {
  DataDirConfig config;  // config.dir empty: none
  durability::DurabilityMetrics* metrics = nullptr;
  // Runs once, on the executor thread, when the log fails.
  std::function<void(const absl::Status&)> on_log_failed;
};

class Executor {
 public:
  // metrics may be null (tests of the pipeline alone). completion_threads:
  // threads that answer calls (0 = answer on the executor thread), a pool
  // of the executor's own that join() stops.
  Executor(std::unique_ptr<Store> store, Batcher* batcher, ServiceMetrics* metrics, unsigned completion_threads = 1,
           ExecutorDataDir data_dir = {});
  // Answering on a pool shared with other executors (the partitions of a
  // server: Partitions), which its owner stops once every executor sharing
  // it has joined.
  Executor(std::unique_ptr<Store> store, Batcher* batcher, ServiceMetrics* metrics,
           std::shared_ptr<CompletionPool> completions, ExecutorDataDir data_dir = {});
  ~Executor();

  // Starts the thread and, with a data directory, waits while it recovers
  // the directory into the store: recovery's error, and then the thread has
  // ended (close the batcher and join).
  absl::Status start() {
    launch();
    return wait_started();
  }
  // start() in two halves, so several executors recover their partitions'
  // directories at once: launch() starts the thread, wait_started() returns
  // what start() would.
  void launch();
  absl::Status wait_started();
  // Returns once the batcher is closed, every queued call was answered and
  // the data directory (if any) took its final snapshot.
  void join();

  ExecutorStats stats() const;
  // Null without a data directory; valid from start() to destruction.
  const StoreDurability* data_dir() const { return durable_.get(); }

 private:
  Executor(std::unique_ptr<Store> store, Batcher* batcher, ServiceMetrics* metrics,
           std::shared_ptr<CompletionPool> completions, ExecutorDataDir data_dir, bool owns_completions);
  void loop() ABSL_EXCLUSIVE_LOCKS_REQUIRED(executor_thread_);
  // Between batches: a chunk of a snapshot's export. True when the loop
  // should come back here before waiting for a batch (an export goes on
  // and no call waits).
  bool snapshot_step() ABSL_EXCLUSIVE_LOCKS_REQUIRED(executor_thread_);
  // Between batches: a step of a shrink's value-heap trim, and the shrink
  // calls' answers once it is done. True when the loop should come back
  // here before waiting for a batch (the trim goes on and no call waits).
  bool shrink_step() ABSL_EXCLUSIVE_LOCKS_REQUIRED(executor_thread_);
  // Between batches: a step of the expiry sweep (Store::sweep_step), paced
  // as the trim is. True when the loop should come back here (a pass goes
  // on and no call waits).
  bool sweep_step() ABSL_EXCLUSIVE_LOCKS_REQUIRED(executor_thread_);
  // The table's part of the shrinks waiting for the trim, and their answers
  // (the trim's error instead, when it failed).
  void finish_shrinks(const absl::Status& trimmed) ABSL_EXCLUSIVE_LOCKS_REQUIRED(executor_thread_);
  void run_batch(const std::shared_ptr<std::vector<Call>>& batch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(executor_thread_);
  // Appends the batch's record, then answers the write runs it holds.
  void commit_writes(bool end_of_batch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(executor_thread_);
  void publish() ABSL_EXCLUSIVE_LOCKS_REQUIRED(executor_thread_);
  // The put run just applied, by stage, into the metrics (`drained`: the
  // seconds its drain of the pipelined gets took).
  void observe_put_stages(double drained) ABSL_EXCLUSIVE_LOCKS_REQUIRED(executor_thread_);
  // Hands a run's answers over (inline when nothing else is waiting).
  void answer(absl::Span<Call* const> run, std::vector<absl::Status>& statuses, bool last_of_batch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(executor_thread_);
  // Finishes the oldest pipelined get run and answers it; all of them.
  // Its responses are filled and answered in ranges on the completion
  // threads (inline when the executor has nothing else to do).
  void finish_oldest_gets() ABSL_EXCLUSIVE_LOCKS_REQUIRED(executor_thread_);
  // Finishes, oldest first, the runs the device is done with (never waits
  // for one: BatcherOptions::early_answers).
  void finish_done_gets() ABSL_EXCLUSIVE_LOCKS_REQUIRED(executor_thread_);
  void finish_all_gets() ABSL_EXCLUSIVE_LOCKS_REQUIRED(executor_thread_);
  void answer_gets(std::shared_ptr<GetAnswers> answers, std::shared_ptr<std::vector<Call>> batch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(executor_thread_);
  // A range handed to a completion thread carries at least this many keys:
  // below it the hand-over costs more than the copying it spreads.
  static constexpr uint64_t kMinAnswerRangeKeys = 512;

  struct InFlight {
    Clock::time_point submitted;
    uint64_t keys;
    double idle_seconds;  // the executor's wait for calls before this run's batch (its first run only)
    std::shared_ptr<std::vector<Call>> batch;  // owns the run's Calls
  };
  std::deque<InFlight> in_flight_ ABSL_GUARDED_BY(executor_thread_);

  // Write runs applied but not answered: their batch is not logged yet.
  struct Unlogged {
    absl::Span<Call* const> run;
    std::vector<absl::Status> statuses;
  };
  std::vector<Unlogged> unlogged_ ABSL_GUARDED_BY(executor_thread_);

  // Shrink calls waiting for the value heap's trim (Store::begin_shrink).
  struct PendingShrinks {
    std::vector<std::shared_ptr<std::vector<Call>>> batches;  // own the Calls
    std::vector<Call*> calls;
  };
  PendingShrinks shrinks_ ABSL_GUARDED_BY(executor_thread_);
  // Calls waiting, no trim step before this (shrink_step): after a step of d,
  // kServePerTrim * d of serving.
  static constexpr int kServePerTrim = 4;
  Clock::time_point next_trim_step_ ABSL_GUARDED_BY(executor_thread_){};
  Clock::time_point next_sweep_step_ ABSL_GUARDED_BY(executor_thread_){};

  // The thread that owns the store and the fields guarded by it (loop()).
  ThreadRole executor_thread_;
  std::unique_ptr<Store> store_ ABSL_PT_GUARDED_BY(executor_thread_);
  ExecutorDataDir data_dir_config_;
  std::unique_ptr<StoreDurability> durable_;  // null without a data directory
  Batcher* batcher_;
  ServiceMetrics* metrics_;
  std::thread thread_;
  std::future<absl::Status> started_;
  std::shared_ptr<CompletionPool> completions_;
  const bool owns_completions_;
  RunOrder run_order_ ABSL_GUARDED_BY(executor_thread_);
  // How long the executor waited for the batch being run (the get stage
  // "idle"), taken by its first pipelined get run.
  double idle_seconds_ ABSL_GUARDED_BY(executor_thread_) = 0;

  uint64_t batches_ ABSL_GUARDED_BY(executor_thread_) = 0;
  uint64_t batched_keys_ ABSL_GUARDED_BY(executor_thread_) = 0;
  // Stats readers run on gRPC threads: they read these, never the store.
  std::atomic<uint64_t> pub_keys_{0}, pub_table_bytes_{0}, pub_heap_bytes_{0}, pub_rebuilds_{0}, pub_batches_{0},
      pub_batched_keys_{0}, pub_collided_keys_{0}, pub_idle_ns_{0}, pub_slot_wait_ns_{0}, pub_device_wait_ns_{0},
      pub_evictions_{0}, pub_items_swept_{0};
  std::atomic<int64_t> pub_idle_since_ns_{0};  // when the wait for calls under way began (steady clock); 0: none
  std::atomic<double> pub_load_factor_{0};
  std::atomic<bool> pub_rebuilding_{false};
  uint64_t reported_relocations_ ABSL_GUARDED_BY(executor_thread_) = 0;
  uint64_t reported_swept_ ABSL_GUARDED_BY(executor_thread_) = 0;
  uint64_t reported_evictions_ ABSL_GUARDED_BY(executor_thread_) = 0;
  uint64_t memory_limit_bytes_;
  std::map<std::string, uint64_t> reported_rebuilds_
      ABSL_GUARDED_BY(executor_thread_);  // by cause: rebuilds already counted in metrics
};

}  // namespace gphkv::server

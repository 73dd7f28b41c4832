// The TaoBench-style request stream: what each batched call asks for.
//
// A Workload holds the shared, immutable model (key space, Zipf popularity,
// batch-size and value-size distributions); an OpStream is one driver
// thread's deterministic sequence of operations drawn from it. The k-th
// operation of thread t depends only on (seed, t, k), never on responses or
// on the target, so the same seed gives gphkv and memcached the same keys.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "loadgen/key_space.h"
#include "loadgen/rng.h"
#include "loadgen/shard_sampler.h"
#include "loadgen/size_distribution.h"
#include "loadgen/zipf_sampler.h"

namespace gphkv::loadgen {

enum class OpType { kGet = 0, kPut = 1, kDelete = 2 };
constexpr int kOpTypes = 3;
const char* OpTypeName(OpType t);

// One batched call. Put values are not materialized here: the target takes
// value_sizes[i] bytes from the shared ValuePool (see value_pool.h), stamped
// with `version`.
struct Op {
  OpType type = OpType::kGet;
  std::vector<uint64_t> keys;
  std::vector<uint32_t> value_sizes;  // puts only, parallel to keys
  // The call's place in its thread's stream, from 1 (0: the load phase):
  // puts stamp it into their values, and the read check orders writes by it.
  uint64_t version = 0;
};

struct WorkloadOptions {
  std::string preset = "default";          // the --workload these options started from (workload_preset.h)
  uint64_t keys = 1'000'000;               // items in the key space (objects + associations)
  double association_fraction = 0.5;       // share of items (and of reads) that are associations
  std::string popularity = "zipf";         // zipf | shards (TAOBench's weighted shards, shard_sampler.h)
  double zipf_exponent = 0.0;              // zipf: 0 = calibrate from hot_fraction/hot_share
  double hot_fraction = 0.2;               // calibration target: the hottest 20% of keys ...
  double hot_share = 0.82;                 // ... receive 82% of reads (GPH paper, TaoBenchmark)
  std::string shard_weights = "taobench";  // shards: "taobench" or a comma-separated list
  double write_fraction = 0.002;           // TAO: 99.8% reads
  double delete_fraction = 0.10;           // of writes
  std::string read_batch = "taobench-read";
  std::string write_batch = "taobench-write";
  std::string object_value = "tao-object";
  std::string association_value = "tao-association";
  uint64_t seed = 1;
  // Keys drawn by popularity (gets and puts) come from a ring of this many
  // per driver thread, drawn when its stream is made (before the clock
  // starts): live draws (a Zipf inversion or a shard pick, then the key
  // scrambling) cost about as much CPU per request as a coalesced request
  // does in the client, which would make the generator its own bottleneck.
  // The ring has the same distribution; it repeats after key_pool keys.
  // 0 = draw each key live.
  uint64_t key_pool = uint64_t{1} << 20;
};

class Workload {
 public:
  static absl::StatusOr<std::shared_ptr<const Workload>> Create(const WorkloadOptions& options);

  const WorkloadOptions& options() const { return options_; }
  const KeySpace& key_space() const { return key_space_; }
  const SizeDistribution& read_batch() const { return *read_batch_; }
  const SizeDistribution& write_batch() const { return *write_batch_; }
  const SizeDistribution& object_value() const { return *object_value_; }
  const SizeDistribution& association_value() const { return *association_value_; }
  // The calibrated (or given) Zipf exponent; 0 with shard popularity.
  double exponent() const;
  // The share of draws the hottest hot_fraction of the keys receive.
  double expected_hot_share() const;
  // Shards of the shard popularity; 0 with Zipf.
  size_t shards() const;

  // A key's value size: a hash of (seed, key) through the value distribution
  // of the key's kind, so it never changes between load, puts and targets.
  uint32_t ValueSizeOf(uint64_t key) const;
  // The one driver thread of `threads` that writes (puts and deletes) `key`
  // in the run phase: each thread writes a slice of the keys of its own, so
  // that what a thread reads of its keys depends on its own writes alone
  // (read_check.h), whatever the popularity.
  static uint32_t WriterOf(uint64_t key, uint32_t threads) {
    return threads <= 1 ? 0 : static_cast<uint32_t>(Mix64(key ^ 0x777269746572ULL) % threads);
  }
  // A key drawn by popularity.
  uint64_t SampleKey(Rng& rng) const {
    const uint64_t rank = std::visit([&](const auto& sampler) { return sampler.Sample(rng); }, popularity_);
    return key_space_.KeyAt(key_space_.IndexOfRank(rank));
  }

 private:
  using Popularity = std::variant<ZipfSampler, ShardSampler>;
  Workload(const WorkloadOptions& options, KeySpace key_space, Popularity popularity);
  WorkloadOptions options_;
  KeySpace key_space_;
  Popularity popularity_;
  std::unique_ptr<SizeDistribution> read_batch_, write_batch_, object_value_, association_value_;
};

// One thread's deterministic stream of run-phase operations. Gets read any
// key; puts and deletes take only keys this thread writes (Workload::WriterOf
// of `threads`), drawn by the same distribution as everyone's (a draw of
// another thread's key is drawn again), so the writes of all threads
// together still follow it.
class OpStream {
 public:
  OpStream(std::shared_ptr<const Workload> workload, uint32_t thread_index, uint32_t threads = 1);
  // Overwrites *op with the next operation (reusing its buffers).
  void Next(Op* op);
  uint64_t produced() const { return produced_; }

 private:
  // The next key drawn by popularity (from the ring when there is one).
  uint64_t NextPopularKey();
  // A key this thread writes: by popularity (puts) or uniformly (deletes).
  uint64_t NextWrittenKey(bool uniform);

  std::shared_ptr<const Workload> workload_;
  Rng rng_;
  uint64_t produced_ = 0;
  uint32_t thread_index_;
  uint32_t threads_;
  std::vector<uint64_t> pool_;  // the ring (empty: live draws)
  size_t pool_next_ = 0;
};

// The load phase: items [begin, end) of the key space as puts of at most
// `batch_keys` keys and `batch_bytes` value bytes each.
class LoadStream {
 public:
  LoadStream(std::shared_ptr<const Workload> workload, uint64_t begin, uint64_t end, uint32_t batch_keys,
             uint64_t batch_bytes);
  // False when the range is exhausted.
  bool Next(Op* op);

 private:
  std::shared_ptr<const Workload> workload_;
  uint64_t next_, end_;
  uint32_t batch_keys_;
  uint64_t batch_bytes_;
};

}  // namespace gphkv::loadgen

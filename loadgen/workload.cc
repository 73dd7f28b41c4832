#include "loadgen/workload.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace gphkv::loadgen {

const char* OpTypeName(OpType t) {
  switch (t) {
    case OpType::kGet: return "get";
    case OpType::kPut: return "put";
    case OpType::kDelete: return "delete";
  }
  return "?";
}

Workload::Workload(const WorkloadOptions& options, KeySpace key_space, Popularity popularity)
    : options_(options), key_space_(std::move(key_space)), popularity_(std::move(popularity)) {}

namespace {

// The key popularity the options name, calibrated where it needs to be.
absl::StatusOr<std::variant<ZipfSampler, ShardSampler>> MakePopularity(const WorkloadOptions& options) {
  if (options.popularity == "shards") {
    auto weights = ParseShardWeights(options.shard_weights);
    if (!weights.ok()) return weights.status();
    auto shards = ShardSampler::Create(options.keys, std::move(*weights));
    if (!shards.ok()) return shards.status();
    return std::move(*shards);
  }
  if (options.popularity != "zipf") {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown popularity '", options.popularity, "' (want zipf or shards)"));
  }
  double s = options.zipf_exponent;
  if (s <= 0.0) {
    auto calibrated = CalibrateZipfExponent(options.keys, options.hot_fraction, options.hot_share);
    if (!calibrated.ok()) return calibrated.status();
    s = *calibrated;
  }
  return ZipfSampler(options.keys, s);
}

}  // namespace

absl::StatusOr<std::shared_ptr<const Workload>> Workload::Create(const WorkloadOptions& options) {
  if (!(options.write_fraction >= 0 && options.write_fraction <= 1) ||
      !(options.delete_fraction >= 0 && options.delete_fraction <= 1)) {
    return absl::InvalidArgumentError("write_fraction and delete_fraction must be in [0, 1]");
  }
  auto key_space = KeySpace::Create(options.keys, options.association_fraction, options.seed);
  if (!key_space.ok()) return key_space.status();
  auto popularity = MakePopularity(options);
  if (!popularity.ok()) return popularity.status();
  std::shared_ptr<Workload> w(new Workload(options, std::move(*key_space), std::move(*popularity)));
  w->options_.zipf_exponent = w->exponent();
  struct Named {
    const std::string& spec;
    std::unique_ptr<SizeDistribution>* out;
    const char* what;
  };
  for (const Named& n : {Named{options.read_batch, &w->read_batch_, "read_batch"},
                         Named{options.write_batch, &w->write_batch_, "write_batch"},
                         Named{options.object_value, &w->object_value_, "object_value"},
                         Named{options.association_value, &w->association_value_, "association_value"}}) {
    auto d = ParseSizeDistribution(n.spec);
    if (!d.ok()) return absl::InvalidArgumentError(absl::StrCat(n.what, ": ", d.status().message()));
    *n.out = std::move(*d);
  }
  for (const SizeDistribution* batch : {w->read_batch_.get(), w->write_batch_.get()}) {
    if (batch->Quantile(0.0) == 0) return absl::InvalidArgumentError("batch sizes must be at least 1");
  }
  return std::shared_ptr<const Workload>(std::move(w));
}

double Workload::exponent() const {
  const auto* zipf = std::get_if<ZipfSampler>(&popularity_);
  return zipf != nullptr ? zipf->exponent() : 0.0;
}

double Workload::expected_hot_share() const {
  if (const auto* zipf = std::get_if<ZipfSampler>(&popularity_)) {
    return ZipfTopShare(options_.keys, zipf->exponent(), options_.hot_fraction);
  }
  return std::get<ShardSampler>(popularity_).TopShare(options_.hot_fraction);
}

size_t Workload::shards() const {
  const auto* shards = std::get_if<ShardSampler>(&popularity_);
  return shards != nullptr ? shards->shards() : 0;
}

uint32_t Workload::ValueSizeOf(uint64_t key) const {
  const double u = UnitFromHash(Mix64(key ^ Mix64(options_.seed ^ 0x76616cULL)));
  return KeySpace::KeyIsAssociation(key) ? association_value_->Quantile(u) : object_value_->Quantile(u);
}

OpStream::OpStream(std::shared_ptr<const Workload> workload, uint32_t thread_index, uint32_t threads)
    : workload_(std::move(workload)),
      rng_(Mix64(workload_->options().seed) ^ Mix64(0x7468ULL + thread_index)),
      thread_index_(thread_index),
      threads_(std::max<uint32_t>(threads, 1)) {
  // Its own generator: the ring depends on (seed, thread) only.
  Rng pool_rng(Mix64(workload_->options().seed) ^ Mix64(0x706f6f6cULL + thread_index_));
  pool_.resize(workload_->options().key_pool);
  for (uint64_t& k : pool_) k = workload_->SampleKey(pool_rng);
}

uint64_t OpStream::NextPopularKey() {
  if (pool_.empty()) return workload_->SampleKey(rng_);
  const uint64_t key = pool_[pool_next_];
  if (++pool_next_ == pool_.size()) pool_next_ = 0;
  return key;
}

uint64_t OpStream::NextWrittenKey(bool uniform) {
  // Live draws, not the ring: a thread's ring holds everyone's keys, and a
  // put is rare enough (0.2% of calls) that about `threads_` draws per key
  // cost little; the ring stays the gets' alone.
  const uint64_t items = workload_->key_space().items();
  for (;;) {
    uint64_t key;
    if (uniform) {
      const auto index = static_cast<uint64_t>(rng_.Uniform() * static_cast<double>(items));
      key = workload_->key_space().KeyAt(std::min(index, items - 1));
    } else {
      key = workload_->SampleKey(rng_);
    }
    if (Workload::WriterOf(key, threads_) == thread_index_ % threads_) return key;
  }
}

void OpStream::Next(Op* op) {
  const WorkloadOptions& o = workload_->options();
  op->keys.clear();
  op->value_sizes.clear();
  const double u = rng_.Uniform();
  uint32_t n;
  if (u < o.write_fraction) {
    op->type = rng_.Uniform() < o.delete_fraction ? OpType::kDelete : OpType::kPut;
    n = workload_->write_batch().Quantile(rng_.Uniform());
  } else {
    op->type = OpType::kGet;
    n = workload_->read_batch().Quantile(rng_.Uniform());
  }
  if (op->type == OpType::kDelete) {
    // Deletes pick items uniformly: removing the hottest items would turn
    // every later read of them into a miss (the hit ratio would decay through
    // the run, which TAO's read hit rates do not show); a removed edge is a
    // typical one, not a famous one.
    for (uint32_t i = 0; i < n; ++i) op->keys.push_back(NextWrittenKey(true));
  } else if (op->type == OpType::kPut) {
    // Gets and puts follow popularity: in TAO the hot objects are also the
    // ones being updated (counts, comments on popular posts).
    for (uint32_t i = 0; i < n; ++i) op->keys.push_back(NextWrittenKey(false));
    for (uint64_t k : op->keys) op->value_sizes.push_back(workload_->ValueSizeOf(k));
  } else {
    for (uint32_t i = 0; i < n; ++i) op->keys.push_back(NextPopularKey());
  }
  op->version = ++produced_;
}

LoadStream::LoadStream(std::shared_ptr<const Workload> workload, uint64_t begin, uint64_t end, uint32_t batch_keys,
                       uint64_t batch_bytes)
    : workload_(std::move(workload)), next_(begin), end_(end), batch_keys_(batch_keys), batch_bytes_(batch_bytes) {}

bool LoadStream::Next(Op* op) {
  if (next_ >= end_) return false;
  op->type = OpType::kPut;
  op->version = 0;
  op->keys.clear();
  op->value_sizes.clear();
  uint64_t bytes = 0;
  while (next_ < end_ && op->keys.size() < batch_keys_ && (op->keys.empty() || bytes < batch_bytes_)) {
    const uint64_t key = workload_->key_space().KeyAt(next_++);
    const uint32_t size = workload_->ValueSizeOf(key);
    op->keys.push_back(key);
    op->value_sizes.push_back(size);
    bytes += size;
  }
  return true;
}

}  // namespace gphkv::loadgen

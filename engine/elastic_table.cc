#include "gphkv/engine/elastic_table.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace gphkv::engine {
namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Batches this small take the insert path even when they fill the table: a
// rebuild for a handful of keys costs more than the Extended Moves they need.
constexpr size_t kMinRebuildBatch = 4096;

absl::Status size_mismatch(const char* op) {
  return absl::InvalidArgumentError(absl::StrCat(op, ": the spans must be as long as the keys"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<ElasticTable>> ElasticTable::create(const ElasticOptions& o) {
  if (!(o.max_load_factor > 0 && o.max_load_factor <= 0.95)) {
    return absl::InvalidArgumentError(absl::StrCat("max_load_factor must be in (0, 0.95], got ", o.max_load_factor));
  }
  if (!(o.rebuild_load_factor > 0 && o.rebuild_load_factor < o.max_load_factor)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rebuild_load_factor must be in (0, max_load_factor = ", o.max_load_factor, "), got ", o.rebuild_load_factor));
  }
  std::unique_ptr<ElasticTable> t(new ElasticTable(o));
  if (o.rebuild_burst_fraction < 0) {  // the backend's measured default
    t->options_.rebuild_burst_fraction =
        o.backend == Backend::kCuda ? kCudaRebuildBurstFraction : kCpuRebuildBurstFraction;
  }
  if (o.max_table_bytes != 0 && t->bytes_for(o.shape.num_buckets) > o.max_table_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("the initial table takes ", t->bytes_for(o.shape.num_buckets),
                                                   " bytes, over the cap of ", o.max_table_bytes));
  }
  auto table = make_table(o.backend, o.shape, o.device);
  if (!table.ok()) return table.status();
  t->table_ = std::move(*table);
  return t;
}

ElasticTable::~ElasticTable() {
  if (build_.valid()) build_.wait();
}

uint64_t ElasticTable::bytes_for(uint64_t num_buckets) const {
  const uint64_t slots = num_buckets * options_.shape.slots_per_bucket;
  const uint64_t cells = static_cast<uint64_t>(std::ceil(num_buckets * options_.shape.cells_per_bucket));
  return slots * 2 * sizeof(uint64_t) + cells;
}

uint64_t ElasticTable::table_bytes() const {
  return bytes_for(num_buckets()) + (rebuilding() ? bytes_for(building_buckets_) : 0);
}

uint64_t ElasticTable::buckets_for_keys(uint64_t keys) const {
  return std::max<uint64_t>(options_.shape.num_buckets,
                            buckets_for_capacity(keys, options_.rebuild_load_factor, options_.shape.slots_per_bucket));
}

uint64_t ElasticTable::max_buckets_under(uint64_t max_table_bytes) const {
  if (max_table_bytes == 0) return std::numeric_limits<uint32_t>::max();
  const double per_bucket = options_.shape.slots_per_bucket * 2.0 * sizeof(uint64_t) + options_.shape.cells_per_bucket;
  // One bucket of slack for the rounding up of the cell count.
  const double buckets = std::floor(max_table_bytes / per_bucket) - 1;
  return static_cast<uint64_t>(std::clamp(buckets, 1.0, double{std::numeric_limits<uint32_t>::max()}));
}

uint64_t ElasticTable::key_limit_under(uint64_t max_table_bytes) const {
  if (max_table_bytes == 0) return std::numeric_limits<uint64_t>::max();
  return static_cast<uint64_t>(max_buckets_under(max_table_bytes) * options_.shape.slots_per_bucket *
                               options_.max_load_factor);
}

uint64_t ElasticTable::bytes_to_hold(uint64_t keys) const {
  const double per_bucket = options_.shape.slots_per_bucket * 2.0 * sizeof(uint64_t) + options_.shape.cells_per_bucket;
  const uint64_t per_bucket_bytes = static_cast<uint64_t>(std::ceil(per_bucket));
  // More than the largest table (2^32 - 1 buckets) holds: no cap is enough.
  if (keys > key_limit_under(std::numeric_limits<uint64_t>::max() / 2)) return std::numeric_limits<uint64_t>::max();
  // The bucket count that holds `keys` at max_load_factor, plus max_buckets'
  // slack bucket; then step up until key_limit_under agrees (rounding).
  const double buckets =
      std::ceil(static_cast<double>(keys) / (options_.shape.slots_per_bucket * options_.max_load_factor)) + 2;
  uint64_t bytes = static_cast<uint64_t>(std::max(buckets, 2.0) * per_bucket);
  while (key_limit_under(bytes) < keys) bytes += per_bucket_bytes;
  // And step down while a smaller cap still holds them (never below 1 byte).
  while (bytes > per_bucket_bytes && key_limit_under(bytes - per_bucket_bytes) >= keys) bytes -= per_bucket_bytes;
  return bytes;
}

absl::Status ElasticTable::start_rebuild(const std::string& cause, std::vector<WriteOp> burst) {
  auto snapshot = table_->export_pairs();
  if (!snapshot.ok()) return snapshot.status();
  uint64_t keys = size_;
  for (const WriteOp& w : burst) keys += !w.erase;  // an upper bound: some may exist
  TableOptions shape = options_.shape;
  // Roomy (rebuild_load_factor) where the cap allows, else the largest table under it.
  shape.num_buckets = std::min(buckets_for_keys(keys), max_buckets());
  event_ = RebuildEvent{};
  event_.cause = cause;
  event_.old_buckets = num_buckets();
  event_.new_buckets = shape.num_buckets;
  build_started_ = now_seconds();
  build_stats_ = std::make_unique<BuildStats>();
  const Backend backend = options_.backend;
  const int device = options_.device;
  if (options_.max_table_bytes != 0 &&
      bytes_for(num_buckets()) + bytes_for(shape.num_buckets) > options_.max_table_bytes) {
    // Both tables do not fit under the cap: build in the foreground with the
    // old table's memory released first (its pairs are in the snapshot).
    table_.reset();
    auto built = bulk_build(backend, shape, *snapshot, burst, build_stats_.get(), device);
    if (!built.ok()) {
      // Put the old contents back at the old size before reporting.
      TableOptions old = options_.shape;
      old.num_buckets = event_.old_buckets;
      auto restored = bulk_build(backend, old, *snapshot, {}, nullptr, device);
      if (!restored.ok()) return restored.status();
      // The writes were accepted, so they stay: the overlay applies them to the
      // restored table (the burst too: it was not taken in).
      for (auto& [key, p] : pending_) p.in_build = false;
      return swap_in(std::move(*restored));
    }
    return swap_in(std::move(*built));
  }
  building_buckets_ = shape.num_buckets;
  BuildStats* stats = build_stats_.get();
  build_ = std::async(std::launch::async,
                      [backend, device, shape, stats, pairs = std::move(*snapshot), writes = std::move(burst)]() {
                        return bulk_build(backend, shape, pairs, writes, stats, device);
                      });
  return absl::OkStatus();
}

absl::Status ElasticTable::poll_rebuild() {
  if (!build_.valid() || build_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    return absl::OkStatus();
  }
  auto built = build_.get();
  building_buckets_ = 0;
  if (!built.ok()) {
    // The overlay still holds every write since the snapshot, so nothing is
    // lost; a build that found no fit is retried larger if the cap allows.
    if (built.status().code() != absl::StatusCode::kResourceExhausted) return built.status();
    const std::string cause = event_.cause;
    std::vector<WriteOp> burst;  // the burst's writes must go into the retry too
    for (const auto& [key, p] : pending_) {
      if (p.in_build) burst.push_back({key, p.value, p.erase});
    }
    options_.rebuild_load_factor *= 0.9;  // aim roomier from now on
    return start_rebuild(cause, std::move(burst));
  }
  return swap_in(std::move(*built));
}

absl::Status ElasticTable::swap_in(std::unique_ptr<Table> built) {
  // The writes since the snapshot, the last one per key, except those the
  // build already took in (a burst's own writes).
  std::vector<uint64_t> put_keys, put_values, erase_keys;
  for (const auto& [key, p] : pending_) {
    if (p.in_build) continue;
    if (p.erase) {
      erase_keys.push_back(key);
    } else {
      put_keys.push_back(key);
      put_values.push_back(p.value);
    }
  }
  std::vector<UpsertOutcome> outcomes(put_keys.size());
  if (auto s = built->insert_or_assign(put_keys, put_values, absl::MakeSpan(outcomes)); !s.ok()) return s;
  if (std::find(outcomes.begin(), outcomes.end(), UpsertOutcome::kNoRoom) != outcomes.end()) {
    // Too many writes landed during the build for its size: fold them in with
    // another bulk build, sized for everything.
    auto pairs = built->export_pairs();
    if (!pairs.ok()) return pairs.status();
    std::vector<WriteOp> writes;
    for (size_t i = 0; i < put_keys.size(); ++i) writes.push_back({put_keys[i], put_values[i], false});
    for (uint64_t k : erase_keys) writes.push_back({k, 0, true});
    TableOptions shape = options_.shape;
    shape.num_buckets = std::min(buckets_for_keys(size_), max_buckets());
    event_.new_buckets = shape.num_buckets;
    auto rebuilt = bulk_build(options_.backend, shape, *pairs, writes, build_stats_.get(), options_.device);
    if (!rebuilt.ok()) return rebuilt.status();
    built = std::move(*rebuilt);
  } else {
    std::vector<uint8_t> erased(erase_keys.size());
    if (auto s = built->erase(erase_keys, absl::MakeSpan(erased)); !s.ok()) return s;
  }
  table_ = std::move(built);
  pending_.clear();
  size_ = table_->size();
  ++rebuilds_;
  event_.keys = size_;
  event_.seconds = now_seconds() - build_started_;
  if (build_stats_) event_.build = *build_stats_;
  if (listener_) listener_(event_);
  return absl::OkStatus();
}

absl::Status ElasticTable::finish_rebuild() {
  while (build_.valid()) {
    build_.wait();
    if (auto s = poll_rebuild(); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status ElasticTable::load(absl::Span<const WriteOp> writes, BuildStats* stats) {
  if (auto s = finish_rebuild(); !s.ok()) return s;
  if (size_ != 0) {
    return absl::FailedPreconditionError(absl::StrCat("load: the table holds ", size_, " keys; it must be empty"));
  }
  uint64_t keys = 0;  // an upper bound: a key may be written more than once
  for (const WriteOp& w : writes) keys += !w.erase;
  if (keys == 0) return absl::OkStatus();
  const uint64_t limit = key_limit();
  if (keys > limit) {
    return absl::ResourceExhaustedError(absl::StrCat("table full: loading ", keys, " keys; a table under the cap of ",
                                                     options_.max_table_bytes, " bytes holds at most ", limit,
                                                     " keys (at load factor ", options_.max_load_factor, ")"));
  }
  // The empty table's memory goes to the build; put back (empty, its size)
  // if the build fails.
  const uint64_t old_buckets = num_buckets();
  table_.reset();
  TableOptions shape = options_.shape;
  shape.num_buckets = std::min(buckets_for_keys(keys), max_buckets());
  for (;;) {
    auto built = bulk_build(options_.backend, shape, {}, writes, stats, options_.device);
    if (built.ok()) {
      table_ = std::move(*built);
      size_ = table_->size();
      return absl::OkStatus();
    }
    // A build that found no fit for some cell is retried roomier, as a rebuild is.
    const uint64_t roomier = std::min(max_buckets(), shape.num_buckets + shape.num_buckets / 8 + 1);
    if (built.status().code() == absl::StatusCode::kResourceExhausted && roomier > shape.num_buckets) {
      shape.num_buckets = roomier;
      continue;
    }
    TableOptions empty = options_.shape;
    empty.num_buckets = old_buckets;
    auto restored = make_table(options_.backend, empty, options_.device);
    if (!restored.ok()) return restored.status();
    table_ = std::move(*restored);
    return built.status();
  }
}

absl::Status ElasticTable::shrink_to_fit() {
  if (auto s = finish_rebuild(); !s.ok()) return s;
  if (buckets_for_keys(size_) >= num_buckets()) return absl::OkStatus();
  return start_rebuild("shrink", {});
}

absl::Status ElasticTable::find(absl::Span<const uint64_t> keys, absl::Span<uint64_t> values,
                                absl::Span<uint8_t> found) {
  if (auto s = poll_rebuild(); !s.ok()) return s;
  if (auto s = table_->find(keys, values, found); !s.ok()) return s;
  if (pending_.empty()) return absl::OkStatus();
  for (size_t i = 0; i < keys.size(); ++i) {
    auto it = pending_.find(keys[i]);
    if (it == pending_.end()) continue;
    found[i] = !it->second.erase;
    if (!it->second.erase) values[i] = it->second.value;
  }
  return absl::OkStatus();
}

absl::Status ElasticTable::write_pending(absl::Span<const uint64_t> keys, absl::Span<const uint64_t> values, bool erase,
                                         absl::Span<UpsertOutcome> outcomes, absl::Span<uint8_t> erased) {
  // Presence before this batch: the overlay where it has the key, else the
  // current table.
  std::vector<uint64_t> ignored(keys.size());
  std::vector<uint8_t> in_table(keys.size());
  if (auto s = table_->find(keys, absl::MakeSpan(ignored), absl::MakeSpan(in_table)); !s.ok()) return s;
  for (size_t i = 0; i < keys.size(); ++i) {
    auto [it, fresh] = pending_.try_emplace(keys[i], Pending{0, !in_table[i]});
    const bool present = !it->second.erase;
    if (erase) {
      erased[i] = present;
      size_ -= present;
      it->second = Pending{0, true};
    } else {
      outcomes[i] = present ? UpsertOutcome::kAssigned : UpsertOutcome::kInserted;
      size_ += !present;
      it->second = Pending{values[i], false};
    }
  }
  event_.writes_during += keys.size();
  return absl::OkStatus();
}

absl::Status ElasticTable::insert_or_assign(absl::Span<const uint64_t> keys, absl::Span<const uint64_t> values,
                                            absl::Span<UpsertOutcome> outcomes) {
  if (values.size() != keys.size() || outcomes.size() != keys.size()) return size_mismatch("insert_or_assign");
  if (auto s = poll_rebuild(); !s.ok()) return s;

  // Refuse, changing nothing, a batch that could take the table past what
  // the cap holds; count the batch's truly new keys only when that is close.
  const uint64_t limit = key_limit();
  if (size_ + keys.size() > limit) {
    std::vector<uint64_t> ignored(keys.size());
    std::vector<uint8_t> present(keys.size());
    if (auto s = find(keys, absl::MakeSpan(ignored), absl::MakeSpan(present)); !s.ok()) return s;
    absl::flat_hash_set<uint64_t> fresh;
    for (size_t i = 0; i < keys.size(); ++i) {
      if (!present[i]) fresh.insert(keys[i]);
    }
    if (size_ + fresh.size() > limit) {
      return absl::ResourceExhaustedError(absl::StrCat("table full: ", size_, " keys stored and this batch adds ",
                                                       fresh.size(), "; a table under the cap of ",
                                                       options_.max_table_bytes, " bytes holds at most ", limit,
                                                       " keys (at load factor ", options_.max_load_factor, ")"));
    }
  }

  if (rebuilding()) return write_pending(keys, values, /*erase=*/false, outcomes, {});

  // A batch that could carry the table past max_load_factor goes to a larger
  // table through a rebuild rather than through Extended Moves that cannot
  // succeed (on the GPU a hopeless Refinement costs far more than a build).
  const bool overfills = static_cast<double>(table_->size() + keys.size()) >
                         options_.max_load_factor * static_cast<double>(table_->geometry().num_slots());
  // (kMinRebuildBatch holds for bursts too: a rebuild for a handful of keys
  // into a near-empty table is never the cheaper path.)
  const bool burst = options_.rebuild_burst_fraction > 0 && keys.size() > kMinRebuildBatch &&
                     keys.size() >= options_.rebuild_burst_fraction * std::max<uint64_t>(size_, 1);
  if (burst || (overfills && keys.size() > kMinRebuildBatch)) {
    // The rebuild path: the burst goes into the build, and into the overlay so
    // that reads see it from now on.
    if (auto s = write_pending(keys, values, false, outcomes, {}); !s.ok()) return s;
    std::vector<WriteOp> writes(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) writes[i] = {keys[i], values[i], false};
    for (auto& [key, p] : pending_) p.in_build = true;
    event_.writes_during = 0;
    return start_rebuild(burst ? "burst" : "load_factor", std::move(writes));
  }

  if (auto s = table_->insert_or_assign(keys, values, outcomes); !s.ok()) return s;
  // A key whose cell is full waits in the overlay for a larger table.
  bool no_room = false;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (outcomes[i] == UpsertOutcome::kNoRoom) {
      auto [it, fresh] = pending_.try_emplace(keys[i], Pending{values[i], false});
      outcomes[i] = fresh ? UpsertOutcome::kInserted : UpsertOutcome::kAssigned;
      it->second.value = values[i];
      no_room = true;
    }
  }
  size_ = table_->size() + pending_.size();
  if (no_room) return start_rebuild("no_room", {});
  if (table_->load_factor() > options_.max_load_factor) return start_rebuild("load_factor", {});
  return absl::OkStatus();
}

absl::Status ElasticTable::erase(absl::Span<const uint64_t> keys, absl::Span<uint8_t> erased) {
  if (erased.size() != keys.size()) return size_mismatch("erase");
  if (auto s = poll_rebuild(); !s.ok()) return s;
  if (rebuilding()) return write_pending(keys, {}, /*erase=*/true, {}, erased);
  if (auto s = table_->erase(keys, erased); !s.ok()) return s;
  size_ = table_->size();
  return absl::OkStatus();
}

}  // namespace gphkv::engine

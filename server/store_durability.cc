#include "server/store_durability.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "server/byte_size.h"
#include "server/durability/record_format.h"
#include "server/elapsed.h"
#include "server/store_recovery.h"
#include "spdlog/spdlog.h"

namespace gphkv::server {
namespace {

// What one key can add to a record beyond its value bytes: a uint64 put
// entry's key and length (12 bytes), or a byte key's lengths (6), item
// fields (16) and its bytes, plus a run header (5) when every call starts a run of its own.
constexpr uint64_t kRecordBytesPerKey = 12 + 5;
constexpr uint64_t kRecordBytesPerByteKey = 6 + 16 + 5;
constexpr uint64_t kRecordSequenceBytes = 8;

}  // namespace

absl::Status check_log_record_bound(uint64_t max_queue_bytes, uint64_t max_message_bytes, uint64_t max_queue_keys,
                                    uint64_t max_key_bytes) {
  const uint64_t values = std::max(max_queue_bytes, max_message_bytes);
  const uint64_t per_key = std::max(kRecordBytesPerKey, kRecordBytesPerByteKey + max_key_bytes);
  const uint64_t record = kRecordSequenceBytes + values + per_key * max_queue_keys;
  if (record <= durability::kMaxRecordPayloadBytes) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "with --data_dir, a batch is one log record, which holds less than 4 GiB; a batch may hold ",
      format_byte_size(values), " of values (--max_queue_bytes, or one call up to the gRPC message limit) and ",
      max_queue_keys, " keys (--max_queue_keys) of up to ", max_key_bytes, " bytes (--max_key_bytes), up to ", record,
      " bytes: lower --max_queue_bytes, --max_queue_keys or --max_key_bytes"));
}

absl::StatusOr<std::unique_ptr<StoreDurability>> StoreDurability::open(
    const DataDirConfig& config, Store& store, durability::DurabilityMetrics* metrics,
    std::function<void(const absl::Status&)> on_log_failed) {
  StoreRecovery sink(store);
  auto dir = durability::DataDir::open(config.dir, config.options, sink, metrics);
  if (!dir.ok()) return dir.status();
  if (sink.expired() > 0) {
    spdlog::info("data dir {}: {} items had expired by the time of recovery and were dropped", config.dir,
                 sink.expired());
  }
  // Beside the module's line (what was read): what the store holds now.
  spdlog::info("data dir {}: the store holds {} keys ({} bytes of value heap) after recovery, fsync={}", config.dir,
               store.keys(), store.value_heap_bytes(), durability::fsync_policy_name(config.options.log.fsync));
  return std::unique_ptr<StoreDurability>(new StoreDurability(std::move(*dir), store.keys(), std::move(on_log_failed)));
}

StoreDurability::~StoreDurability() {
  if (feed_ != nullptr) feed_->fail(absl::CancelledError("the server stopped before the snapshot was fed whole"));
}

const std::vector<std::string_view>& StoreDurability::key_views(const ByteKeys& keys) {
  key_views_.resize(keys.size());
  keys.for_each([&](size_t i, std::string_view k) { key_views_[i] = k; });
  return key_views_;
}

absl::Span<const byte_key::ItemMeta> StoreDurability::item_metas(const PutOp& put) {
  if (!put.item_metas.empty()) return put.item_metas;
  metas_.assign(put.byte_keys.size(), byte_key::ItemMeta{put.flags, static_cast<uint32_t>(put.exptime), 0});
  for (size_t i = 0; i < metas_.size(); ++i) {
    metas_[i].cas = put.keep_cas != 0 ? put.keep_cas : put.first_cas == 0 ? 0 : put.first_cas + i;
  }
  return metas_;
}

void StoreDurability::add_puts(absl::Span<Call* const> run, const std::vector<absl::Status>& statuses) {
  for (size_t i = 0; i < run.size(); ++i) {
    if (!statuses[i].ok()) continue;  // refused: nothing changed, nothing to log
    const PutOp& put = run[i]->put();
    if (put.mode == PutMode::kFlush) continue;  // holds no key: its mark comes from the store (add_flushes)
    if (put.byte_keys.empty()) {
      batch_.add_puts(put.keys, put.value_lengths, put.values);
    } else {
      // The fields the store gave the items: its expiry made absolute (for
      // a conditional write the stored item's, which the op took), and the
      // CAS versions the records took.
      batch_.add_byte_puts(key_views(put.byte_keys), put.value_lengths, put.values, item_metas(put));
    }
  }
}

void StoreDurability::add_deletes(absl::Span<Call* const> run, const std::vector<absl::Status>& statuses) {
  for (size_t i = 0; i < run.size(); ++i) {
    if (!statuses[i].ok()) continue;
    const DeleteOp& del = run[i]->del();
    if (del.byte_keys.empty()) {
      batch_.add_deletes(del.keys);
    } else {
      batch_.add_byte_deletes(key_views(del.byte_keys));
    }
  }
}

void StoreDurability::add_evictions(const Store::EvictedKeys& evicted) {
  if (!evicted.ids.empty()) batch_.add_deletes(evicted.ids);
  if (!evicted.byte_keys.empty()) {
    std::vector<std::string_view> keys(evicted.byte_keys.begin(), evicted.byte_keys.end());
    batch_.add_byte_deletes(keys);
  }
}

void StoreDurability::add_touches(const Store::TouchedItems& touched) {
  if (!touched.ids.empty()) batch_.add_puts(touched.ids, touched.id_lengths, touched.id_values);
  if (!touched.byte_keys.empty()) {
    const std::vector<std::string_view> keys(touched.byte_keys.begin(), touched.byte_keys.end());
    batch_.add_byte_puts(keys, touched.byte_lengths, touched.byte_values, touched.metas);
  }
}

void StoreDurability::add_flushes(const std::vector<durability::FlushMark>& marks) {
  for (const durability::FlushMark& mark : marks) batch_.add_flush(mark);
}

absl::Status StoreDurability::restate_flushes(Store& store) {
  add_flushes(store.take_flush_marks());
  const durability::FlushMark now = store.flush_state();
  if (now.below != 0 || now.at != 0) batch_.add_flush(now);
  return commit();
}

absl::Status StoreDurability::commit() {
  if (batch_.empty()) return log_error_;
  absl::StatusOr<uint64_t> appended = dir_->append(batch_);
  batch_.clear();
  if (!appended.ok()) fail_log(appended.status());
  return log_error_;
}

void StoreDurability::fail_log(const absl::Status& s) {
  if (!log_error_.ok()) return;
  log_error_ =
      absl::UnavailableError(absl::StrCat("writes are refused: the data directory's log failed (", s.ToString(),
                                          "); the server must be restarted, and recovers what the log holds"));
  spdlog::error("data dir: {}", std::string(log_error_.message()));
  {
    std::lock_guard<std::mutex> lock(mu_);
    published_log_error_ = std::string(log_error_.message());
  }
  if (on_log_failed_) on_log_failed_(log_error_);
}

bool StoreDurability::snapshot_wanted(const Store& store) const {
  return export_.has_value() || (log_error_.ok() && !store.rebuilding() && dir_->snapshot_due());
}

bool StoreDurability::snapshot_step(Store& store) {
  if (!export_) {
    if (!snapshot_wanted(store)) return false;
    start_snapshot(store);
    if (!export_) return false;
  }
  return export_chunk(store);
}

void StoreDurability::start_snapshot(Store& store) {
  const auto t0 = std::chrono::steady_clock::now();
  absl::StatusOr<StoreExport> keys = StoreExport::start(store, std::move(key_buffer_));
  if (!keys.ok()) {
    spdlog::error("data dir: cannot list the store's keys for a snapshot: {}", keys.status().ToString());
    return;
  }
  const double list_seconds = seconds_since(t0);
  auto feed = std::make_shared<durability::SnapshotFeed>(kFeedBytes);
  absl::StatusOr<uint64_t> sequence = dir_->start_snapshot(feed);
  if (!sequence.ok()) {
    spdlog::error("data dir: cannot start a snapshot: {}", sequence.status().ToString());
    return;
  }
  spdlog::info(
      "data dir: snapshot of batch {} started: {} keys listed in {:.3f} s, their values exported between "
      "batches",
      *sequence, keys->keys(), list_seconds);
  if (absl::Status s = restate_flushes(store); !s.ok()) spdlog::error("data dir: {}", s.ToString());
  export_ = std::move(*keys);
  feed_ = std::move(feed);
}

bool StoreDurability::export_chunk(Store& store) {
  if (!dir_->snapshot_running()) {
    // The writer stopped (its error is logged and in the state): nobody reads the feed.
    drop_export();
    return false;
  }
  if (!feed_->wants_more()) return false;
  if (!export_->done()) {
    durability::PairChunk ids, byte_pairs;
    if (absl::Status s = export_->next_chunk(store, &ids, &byte_pairs); !s.ok()) {
      feed_->fail(s);
      drop_export();
      return false;
    }
    if (!ids.empty()) feed_->push(std::move(ids));
    if (!byte_pairs.empty()) feed_->push(std::move(byte_pairs));
  }
  if (export_->done()) finish_export();
  return true;
}

void StoreDurability::finish_export() {
  // The chunks read values up to the batch just appended, newer than the
  // snapshot's sequence number. Before the snapshot can become durable, the
  // log must hold those batches durably too: otherwise a machine crash under
  // --fsync=everysec|never could keep the snapshot and lose the batches
  // before its newer values, a state that no prefix of the log gives.
  if (absl::Status s = dir_->sync(); !s.ok()) {
    fail_log(s);
    feed_->fail(s);
  } else {
    feed_->finish();
  }
  drop_export();
}

void StoreDurability::drop_export() {
  if (export_) key_buffer_ = std::move(*export_).take_keys();
  export_.reset();
  feed_.reset();
}

void StoreDurability::close(Store& store) {
  while (export_) {
    if (!export_chunk(store)) std::this_thread::sleep_for(std::chrono::milliseconds(1));  // the writer drains
  }
  dir_->wait_snapshot().IgnoreError();  // its outcome is logged and in the state
  if (!log_error_.ok()) {
    spdlog::warn("data dir: no final snapshot: the log failed; the next start recovers what the log holds");
    return;
  }
  const durability::DataDirState st = dir_->state();
  if (st.log.last_sequence == st.snapshot_sequence) {
    spdlog::info("data dir: nothing appended since snapshot {}: no final snapshot", st.snapshot_sequence);
    return;
  }
  // The key list needs the table whole: a rebuild in flight is waited for.
  if (absl::Status s = store.finish_rebuild(); !s.ok()) spdlog::error("table rebuild failed: {}", s.ToString());
  absl::StatusOr<StoreExport> keys = StoreExport::start(store, std::move(key_buffer_));
  if (!keys.ok()) {
    spdlog::error("data dir: no final snapshot: cannot list the store's keys: {}", keys.status().ToString());
    return;
  }
  spdlog::info("data dir: final snapshot of {} keys", keys->keys());
  StorePairSource source(store, std::move(*keys));
  dir_->snapshot(source).IgnoreError();  // logged by the data dir; the log keeps every batch if it failed
  if (absl::Status s = restate_flushes(store); !s.ok()) {
    spdlog::error("data dir: {}", s.ToString());
  } else if (absl::Status synced = dir_->sync(); !synced.ok()) {
    spdlog::error("data dir: {}", synced.ToString());
  }
}

DataDirStatus StoreDurability::status() const {
  DataDirStatus s;
  s.state = dir_->state();
  s.recovered_keys = recovered_keys_;
  std::lock_guard<std::mutex> lock(mu_);
  s.log_error = published_log_error_;
  return s;
}

}  // namespace gphkv::server

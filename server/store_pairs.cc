// The store's operations on pairs rather than Calls: what recovery restores
// and what a snapshot reads (server/store_recovery.h, server/snapshot_export.h).
// They keep the runs' rules: the owner thread, no get in flight, --memory.
#include "server/store.h"

#include "absl/strings/str_cat.h"
#include "server/bulk_load.h"
#include "server/distinct_keys.h"
#include "server/put_plan.h"

namespace gphkv::server {

absl::Status Store::put_pairs(absl::Span<const uint64_t> keys, absl::Span<const std::string_view> values) {
  begin_run("put_pairs");
  if (absl::Status s = check_plain("put_pairs"); !s.ok()) return s;
  if (keys.size() != values.size()) {
    return absl::InvalidArgumentError(absl::StrCat(keys.size(), " keys but ", values.size(), " values"));
  }
  PutPlan plan(keys, values);
  std::vector<absl::Status> statuses;
  apply_plan(plan, &statuses);
  return statuses.front();
}

absl::Status Store::erase_keys(absl::Span<const uint64_t> keys) {
  begin_run("erase_keys");
  if (absl::Status s = check_plain("erase_keys"); !s.ok()) return s;
  DistinctKeys unique;
  for (uint64_t k : keys) unique.add(k);
  std::vector<uint8_t> erased;
  return erase_distinct(unique, &erased);
}

absl::Status Store::begin_bulk_load(uint64_t expected_pairs) {
  begin_run("begin_bulk_load");
  if (absl::Status s = check_plain("begin_bulk_load"); !s.ok()) return s;
  if (bulk_ != nullptr) return absl::FailedPreconditionError("a bulk load is in progress already");
  if (absl::Status s = finish_rebuild(); !s.ok()) return s;
  if (table_->size() != 0 || heap_->live_values() != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("a bulk load needs an empty store; this one holds ", table_->size(), " keys"));
  }
  bulk_ = std::make_unique<BulkLoad>(*table_, *heap_, budget_);
  bulk_->reserve(expected_pairs);
  return absl::OkStatus();
}

absl::Status Store::bulk_load_pairs(absl::Span<const uint64_t> keys, absl::Span<const std::string_view> values) {
  begin_run("bulk_load_pairs");
  if (bulk_ == nullptr) return absl::FailedPreconditionError("no bulk load is in progress");
  return bulk_->add(keys, values);
}

absl::Status Store::finish_bulk_load() {
  begin_run("finish_bulk_load");
  if (bulk_ == nullptr) return absl::FailedPreconditionError("no bulk load is in progress");
  absl::Status s = bulk_->finish();
  bulk_.reset();
  return s;
}

void Store::abandon_bulk_load() {
  begin_run("abandon_bulk_load");
  bulk_.reset();  // frees what it loaded
}

uint64_t Store::bulk_load_pairs_taken() const { return bulk_ == nullptr ? 0 : bulk_->pairs(); }

absl::Status Store::clear() {
  begin_run("clear");
  bulk_.reset();  // a bulk load in progress frees what it loaded
  if (absl::Status s = finish_rebuild(); !s.ok()) return s;
  auto pairs = table_->serving_table().export_pairs();
  if (!pairs.ok()) return pairs.status();
  std::vector<uint64_t> keys;
  keys.reserve(pairs->size());
  for (const engine::KeyValue& kv : *pairs) keys.push_back(kv.key);
  std::vector<uint8_t> erased(keys.size());
  if (absl::Status s = table_->erase(keys, absl::MakeSpan(erased)); !s.ok()) return s;
  for (const engine::KeyValue& kv : *pairs) heap_->release(kv.value);
  collided_.for_each([&](std::string_view, ValueHandle h) { heap_->release(h); });
  collided_ = CollidedKeys();
  table_records_ = 0;
  budget_.fit_table_to_heap();
  budget_.fit_heap_to_table();
  return absl::OkStatus();
}

absl::Status Store::stored_keys(std::vector<uint64_t>* keys) {
  begin_run("stored_keys");
  if (absl::Status s = check_plain("stored_keys"); !s.ok()) return s;
  if (table_->rebuilding()) {
    return absl::FailedPreconditionError("a table rebuild is running: its overlay is not in the serving table");
  }
  return table_->serving_table().export_keys(keys);
}

absl::Status Store::read_pairs(absl::Span<const uint64_t> keys, std::vector<uint64_t>* found,
                               std::vector<uint32_t>* lengths, std::string* bytes) {
  begin_run("read_pairs");
  if (absl::Status s = check_plain("read_pairs"); !s.ok()) return s;
  std::vector<uint64_t> handles(keys.size());
  std::vector<uint8_t> hit(keys.size());
  // The ElasticTable's find: the serving table and a rebuild's overlay.
  if (absl::Status s = table_->find(keys, absl::MakeSpan(handles), absl::MakeSpan(hit)); !s.ok()) return s;
  std::vector<ValueHandle> stored;
  stored.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!hit[i]) continue;
    found->push_back(keys[i]);
    lengths->push_back(heap_->length(handles[i]));
    stored.push_back(handles[i]);
  }
  return heap_->gather(stored, bytes);
}

}  // namespace gphkv::server

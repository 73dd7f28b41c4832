// The store's operations on pairs rather than Calls: what recovery restores
// and what a snapshot reads (server/store_recovery.h, server/snapshot_export.h).
// They keep the runs' rules: the owner thread, no get in flight, --memory.
#include "server/store.h"

#include "absl/strings/str_cat.h"
#include "server/bulk_load.h"
#include "server/byte_key.h"
#include "server/distinct_keys.h"
#include "server/pair_call.h"
#include "server/put_plan.h"
#include "server/value_handle.h"

namespace gphkv::server {

absl::Status Store::put_pairs(absl::Span<const uint64_t> keys, absl::Span<const std::string_view> values) {
  begin_run("put_pairs");
  if (keys.size() != values.size()) {
    return absl::InvalidArgumentError(absl::StrCat(keys.size(), " keys but ", values.size(), " values"));
  }
  if (!plain()) {
    PairCall put(keys, values);
    return apply_one(put);
  }
  PutPlan plan(keys, values);
  std::vector<absl::Status> statuses;
  apply_plan(plan, &statuses);
  return statuses.front();
}

absl::Status Store::put_byte_pairs(absl::Span<const std::string_view> keys, absl::Span<const std::string_view> values,
                                   absl::Span<const byte_key::ItemMeta> metas) {
  begin_run("put_byte_pairs");
  if (keys.size() != values.size() || (!metas.empty() && metas.size() != keys.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat(keys.size(), " byte keys but ", values.size(), " values and ", metas.size(), " item fields"));
  }
  PairCall put(keys, values, options_.byte_key_hash_bits, metas);
  return apply_one(put);
}

absl::Status Store::erase_keys(absl::Span<const uint64_t> keys) {
  begin_run("erase_keys");
  if (!plain()) {
    PairCall del(keys);
    return apply_one(del);
  }
  DistinctKeys unique;
  for (uint64_t k : keys) unique.add(k);
  std::vector<uint8_t> erased;
  return erase_distinct(unique, &erased);
}

absl::Status Store::erase_byte_keys(absl::Span<const std::string_view> keys) {
  begin_run("erase_byte_keys");
  PairCall del(keys, options_.byte_key_hash_bits);
  return apply_one(del);
}

absl::Status Store::apply_one(PairCall& call) {
  Call* calls[] = {call.call()};
  std::vector<absl::Status> statuses;
  if (call.call()->kind() == OpKind::kPut) {
    apply_puts(calls, &statuses);
  } else {
    apply_deletes(calls, &statuses);
  }
  return statuses.front();
}

absl::Status Store::begin_bulk_load(uint64_t expected_pairs) {
  begin_run("begin_bulk_load");
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
  if (table_->rebuilding()) {
    return absl::FailedPreconditionError("a table rebuild is running: its overlay is not in the serving table");
  }
  return table_->serving_table().export_keys(keys);
}

namespace {

// Appends a stored value to the chunk of its kind: a byte key's record
// splits into its key and value.
absl::Status append_stored(uint64_t key, ValueHandle handle, std::string_view bytes, durability::PairChunk* ids,
                           durability::PairChunk* byte_pairs) {
  if (!value_handle::is_record(handle)) {
    ids->keys.push_back(key);
    ids->lengths.push_back(static_cast<uint32_t>(bytes.size()));
    ids->bytes.append(bytes);
    return absl::OkStatus();
  }
  // The store wrote every record (byte_key.h): a malformed one is a bug.
  const std::optional<byte_key::Record> r = byte_key::parse_record(bytes);
  if (!r) return absl::InternalError(absl::StrCat("BUG: a stored record of ", bytes.size(), " bytes is malformed"));
  byte_pairs->key_lengths.push_back(static_cast<uint32_t>(r->key.size()));
  byte_pairs->key_bytes.append(r->key);
  byte_pairs->lengths.push_back(static_cast<uint32_t>(r->value.size()));
  byte_pairs->bytes.append(r->value);
  byte_pairs->metas.push_back(r->meta);
  return absl::OkStatus();
}

}  // namespace

absl::Status Store::read_pairs(absl::Span<const uint64_t> table_keys, durability::PairChunk* ids,
                               durability::PairChunk* byte_pairs) {
  begin_run("read_pairs");
  std::vector<uint64_t> handles(table_keys.size());
  std::vector<uint8_t> hit(table_keys.size());
  // The ElasticTable's find: the serving table and a rebuild's overlay.
  if (absl::Status s = table_->find(table_keys, absl::MakeSpan(handles), absl::MakeSpan(hit)); !s.ok()) return s;
  std::vector<ValueHandle> stored;
  stored.reserve(table_keys.size());
  for (size_t i = 0; i < table_keys.size(); ++i) {
    if (hit[i]) stored.push_back(handles[i]);
  }
  if (plain()) {  // every slot a uint64 key's: its values straight into the chunk
    for (size_t i = 0; i < table_keys.size(); ++i) {
      if (!hit[i]) continue;
      ids->keys.push_back(table_keys[i]);
      ids->lengths.push_back(heap_->length(handles[i]));
    }
    return heap_->gather(stored, &ids->bytes);
  }
  std::string bytes;
  if (absl::Status s = heap_->gather(stored, &bytes); !s.ok()) return s;
  size_t off = 0, x = 0;
  for (size_t i = 0; i < table_keys.size(); ++i) {
    if (!hit[i]) continue;
    const uint32_t n = heap_->length(stored[x]);
    const absl::Status s =
        append_stored(table_keys[i], stored[x], std::string_view(bytes).substr(off, n), ids, byte_pairs);
    if (!s.ok()) return s;
    off += n;
    ++x;
  }
  return absl::OkStatus();
}

absl::Status Store::read_collided(durability::PairChunk* ids, durability::PairChunk* byte_pairs) {
  begin_run("read_collided");
  std::vector<uint64_t> keys;
  std::vector<ValueHandle> handles;
  collided_.for_each([&](std::string_view identity, ValueHandle h) {
    // A byte key's handle is its record's, which names the key itself.
    keys.push_back(CollidedKeys::uint64_key(identity).value_or(0));
    handles.push_back(h);
  });
  std::string bytes;
  if (absl::Status s = heap_->gather(handles, &bytes); !s.ok()) return s;
  size_t off = 0;
  for (size_t i = 0; i < handles.size(); ++i) {
    const uint32_t n = heap_->length(handles[i]);
    if (absl::Status s = append_stored(keys[i], handles[i], std::string_view(bytes).substr(off, n), ids, byte_pairs);
        !s.ok()) {
      return s;
    }
    off += n;
  }
  return absl::OkStatus();
}

}  // namespace gphkv::server

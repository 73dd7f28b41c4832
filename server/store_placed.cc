// The store's placed paths (server/key_places.h): gets and deletes of byte
// keys, and of any key once the store holds byte keys or collided keys.
// Puts take PutPlan's placed mode (server/put_plan.h).
#include "absl/strings/str_cat.h"
#include "server/key_places.h"
#include "server/store.h"
#include "server/value_handle.h"

namespace gphkv::server {

void Store::apply_placed_gets(absl::Span<Call* const> calls, std::vector<absl::Status>* statuses) {
  statuses->assign(calls.size(), absl::OkStatus());
  std::vector<KeyRef> keys;
  for (Call* c : calls) append_key_refs(c->get(), &keys);
  PlacedKeys placed;
  if (absl::Status s =
          place_keys(keys, *table_, *heap_, collided_, /*with_values=*/true, now(), &placed, flushed_below_);
      !s.ok()) {
    statuses->assign(calls.size(), s);
    return;
  }
  if (options_.evict) {
    std::vector<ValueHandle> hits;
    for (const KeyPlace& p : placed.places) {
      if (p.stored && !p.expired) hits.push_back(p.handle);
    }
    if (absl::Status s = heap_->mark_accessed(hits); !s.ok()) {
      statuses->assign(calls.size(), s);
      return;
    }
  }
  size_t pos = 0;
  for (size_t ci = 0; ci < calls.size(); ++ci) {
    const GetOp& get = calls[ci]->get();
    const int n = static_cast<int>(get.keys.size());
    v1::GetResponse* out = get.response;
    if (get.items != nullptr) get.items->assign(static_cast<size_t>(n), byte_key::ItemMeta{});
    out->mutable_found()->Resize(n, false);
    out->mutable_value_lengths()->Resize(n, 0);
    if (get.with_items) {
      out->mutable_flags()->Resize(n, 0);
      out->mutable_exptime()->Resize(n, 0);
      out->mutable_cas()->Resize(n, 0);
    }
    uint64_t bytes = 0;
    const size_t first = pos;
    for (int i = 0; i < n; ++i, ++pos) {
      const KeyPlace& p = placed.places[pos];
      if (!p.stored || p.expired) continue;
      out->set_found(i, true);
      if (get.items != nullptr) (*get.items)[static_cast<size_t>(i)] = p.meta;
      if (get.with_items) {
        out->set_flags(i, p.meta.flags);
        out->set_exptime(i, p.meta.exptime);
        out->set_cas(i, p.meta.cas);
      }
      if (get.exists_only) continue;
      out->set_value_lengths(i, static_cast<uint32_t>(p.value.size()));
      bytes += p.value.size();
    }
    if (bytes > options_.max_response_bytes) {
      out->Clear();
      (*statuses)[ci] = absl::ResourceExhaustedError(
          absl::StrCat("the values of this Get total ", bytes, " bytes, over the response limit of ",
                       options_.max_response_bytes, " bytes; ask for fewer keys per call"));
      continue;
    }
    if (get.exists_only) continue;
    std::string* values = out->mutable_values();
    values->reserve(bytes);
    for (size_t k = first; k < pos; ++k) {
      if (placed.places[k].stored && !placed.places[k].expired) values->append(placed.places[k].value);
    }
  }
}

void Store::apply_placed_deletes(absl::Span<Call* const> calls, std::vector<absl::Status>* statuses) {
  for (const Call* c : calls) {
    if (c->del().compare_cas) {
      apply_deletes_in_order(calls, statuses);  // server/store_compare_delete.cc
      return;
    }
  }
  erase_placed(calls, statuses);
}

void Store::erase_placed(absl::Span<Call* const> calls, std::vector<absl::Status>* statuses) {
  statuses->assign(calls.size(), absl::OkStatus());
  // The distinct keys, by identity, and each occurrence's.
  std::vector<KeyRef> occurrences, keys;
  for (Call* c : calls) append_key_refs(c->del(), &occurrences);
  absl::flat_hash_map<std::string, uint32_t> index;
  std::vector<uint32_t> entry(occurrences.size());
  for (size_t i = 0; i < occurrences.size(); ++i) {
    auto [it, inserted] = index.try_emplace(occurrences[i].identity(), static_cast<uint32_t>(keys.size()));
    if (inserted) keys.push_back(occurrences[i]);
    entry[i] = it->second;
  }
  PlacedKeys placed;
  // A collided key's record is read to see whether it expired; a table
  // slot's is read anyway, to compare its key.
  if (absl::Status s = place_keys(keys, *table_, *heap_, collided_, /*with_values=*/!collided_.empty(), now(), &placed,
                                  flushed_below_);
      !s.ok()) {
    statuses->assign(calls.size(), s);
    return;
  }
  std::vector<uint64_t> table_keys;
  for (size_t x = 0; x < keys.size(); ++x) {
    if (placed.places[x].stored && placed.places[x].home == KeyHome::kTable) table_keys.push_back(keys[x].table_key);
  }
  std::vector<uint8_t> erased(table_keys.size());
  if (absl::Status s = table_->erase(table_keys, absl::MakeSpan(erased)); !s.ok()) {
    statuses->assign(calls.size(), s);
    return;
  }
  for (size_t x = 0; x < keys.size(); ++x) {
    const KeyPlace& p = placed.places[x];
    if (!p.stored) continue;
    if (p.home == KeyHome::kCollided) {
      collided_.erase(keys[x].identity());
    } else if (keys[x].is_bytes()) {
      --table_records_;
    }
    heap_->release(p.handle);
  }
  budget_.fit_table_to_heap();
  budget_.fit_heap_to_table();
  // The first occurrence of a stored key deletes it; later ones find it
  // gone. An expired item is freed but was not there to delete (memcached's
  // NOT_FOUND).
  std::vector<uint8_t> gone(keys.size(), 0);
  size_t pos = 0;
  for (Call* c : calls) {
    v1::DeleteResponse* out = c->del().response;
    const int n = static_cast<int>(c->del().keys.size());
    out->mutable_deleted()->Resize(n, false);
    for (int i = 0; i < n; ++i, ++pos) {
      const uint32_t x = entry[pos];
      if (placed.places[x].stored && !placed.places[x].expired && !gone[x]) {
        out->set_deleted(i, true);
        gone[x] = 1;
      }
    }
  }
}

}  // namespace gphkv::server

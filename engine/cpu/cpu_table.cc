#include "engine/cpu/cpu_table.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "engine/cpu/bucket_prefetcher.h"
#include "gphkv/engine/detail/move_planner.h"

namespace gphkv::engine {

absl::StatusOr<std::unique_ptr<Table>> make_cpu_table(const TableOptions& options) {
  auto geometry = make_geometry(options);
  if (!geometry.ok()) return geometry.status();
  return std::unique_ptr<Table>(new cpu::CpuTable(options, *geometry));
}

namespace cpu {
namespace {

// Below this many keys a batch runs on the calling thread: waking the pool
// costs more than the work.
constexpr size_t kParallelMinKeys = 4096;

uint64_t load_key(const uint64_t* p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }

bool claim_slot(uint64_t* p, uint64_t key) {
  uint64_t expected = gph::kEmptyKey;
  return __atomic_compare_exchange_n(p, &expected, key, /*weak=*/false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

absl::Status size_mismatch(const char* op, size_t keys, const char* what, size_t got) {
  return absl::InvalidArgumentError(
      absl::StrCat(op, ": ", keys, " keys but ", got, " ", what, "; the spans must be equally long"));
}

absl::Status check_batch(const char* op, size_t keys) {
  if (keys > UINT32_MAX) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": a batch holds at most ", UINT32_MAX, " keys, got ", keys));
  }
  return absl::OkStatus();
}

}  // namespace

CpuTable::CpuTable(const TableOptions& options, const gph::Geometry& geometry)
    : options_(options),
      geo_(geometry),
      cells_(geometry.num_cells, 0),
      keys_(geometry.num_slots(), gph::kEmptyKey),
      values_(geometry.num_slots(), 0),
      pool_(options.cpu_threads) {}

CpuTable::CpuTable(const TableOptions& options, TableImage&& image)
    : options_(options),
      geo_(image.geometry),
      cells_(std::move(image.cells)),
      keys_(std::move(image.keys)),
      values_(std::move(image.values)),
      has_empty_key_(image.has_empty_key),
      empty_key_value_(image.empty_key_value),
      pool_(options.cpu_threads) {
  count_size();
}

void CpuTable::count_size() {
  size_ = (has_empty_key_ ? 1 : 0) + static_cast<uint64_t>(std::count_if(
                                         keys_.begin(), keys_.end(), [](uint64_t k) { return k != gph::kEmptyKey; }));
}

CpuTable::OwnerLists CpuTable::partition_by_owner(absl::Span<const uint64_t> keys) {
  const size_t n = keys.size();
  const size_t owners = n < kParallelMinKeys ? 1 : pool_.size();
  OwnerLists lists(owners, std::vector<std::vector<uint32_t>>(owners));
  pool_.run(owners, [&](size_t chunk) {
    auto& mine = lists[chunk];
    for (size_t i = chunk * n / owners, end = (chunk + 1) * n / owners; i < end; ++i) {
      const uint64_t key = keys[i];
      if (key == gph::kEmptyKey) continue;  // handled out of band by the caller
      const uint64_t cell = gph::cell_of(geo_, key);
      mine[cell * owners / geo_.num_cells].push_back(static_cast<uint32_t>(i));
    }
  });
  return lists;
}

absl::Status CpuTable::find(absl::Span<const uint64_t> keys, absl::Span<uint64_t> values, absl::Span<uint8_t> found) {
  if (values.size() != keys.size()) return size_mismatch("find", keys.size(), "values", values.size());
  if (found.size() != keys.size()) return size_mismatch("find", keys.size(), "found flags", found.size());
  const size_t n = keys.size();
  const size_t tasks = n < kParallelMinKeys ? 1 : pool_.size() * 4;
  const uint32_t M = geo_.slots_per_bucket;
  pool_.run(tasks, [&](size_t t) {
    const size_t begin = t * n / tasks, end = (t + 1) * n / tasks;
    for_each_located(
        geo_, cells_.data(), keys_.data(), end - begin, [&](size_t j) { return keys[begin + j]; },
        [&](size_t j, const Located& at) {
          const size_t i = begin + j;
          const uint64_t key = keys[i];
          if (key == gph::kEmptyKey) {
            found[i] = has_empty_key_;
            if (has_empty_key_) values[i] = empty_key_value_;
            return;
          }
          // GPH §5.1: the cell gave the one bucket the key can be in.
          const uint64_t* slots = bucket_keys(at.bucket);
          found[i] = 0;
          for (uint32_t s = 0; s < M; ++s) {
            if (slots[s] == key) {
              values[i] = values_[static_cast<uint64_t>(at.bucket) * M + s];
              found[i] = 1;
              break;
            }
          }
        });
  });
  return absl::OkStatus();
}

bool CpuTable::direct_insert(uint64_t key, uint64_t value, uint32_t b, UpsertOutcome* outcome) {
  uint64_t* slots = bucket_keys(b);
  uint64_t* vals = bucket_values(b);
  const uint32_t M = geo_.slots_per_bucket;
  // Only this worker places keys of `cell`, so a key absent now stays absent
  // while other workers fill the bucket's vacant slots with their own keys.
  uint32_t vacant = M;
  for (uint32_t s = 0; s < M; ++s) {
    const uint64_t k = load_key(&slots[s]);
    if (k == key) {
      vals[s] = value;
      *outcome = UpsertOutcome::kAssigned;
      return true;
    }
    if (k == gph::kEmptyKey && vacant == M) vacant = s;
  }
  for (uint32_t s = vacant; s < M; ++s) {
    if (load_key(&slots[s]) == gph::kEmptyKey && claim_slot(&slots[s], key)) {
      vals[s] = value;
      *outcome = UpsertOutcome::kInserted;
      return true;
    }
  }
  return false;  // bucket overflow: left for the Refinement phase
}

uint32_t CpuTable::others_in_bucket(uint32_t bucket, uint32_t cell) const {
  const uint64_t* slots = bucket_keys(bucket);
  uint32_t n = 0;
  for (uint32_t s = 0; s < geo_.slots_per_bucket; ++s) {
    n += slots[s] != gph::kEmptyKey && gph::cell_of(geo_, slots[s]) != cell;
  }
  return n;
}

bool CpuTable::extended_move(uint64_t key, uint64_t value, uint32_t cell) {
  const uint8_t current = cells_[cell];
  const uint32_t mapping = gph::cell_mapping(geo_, current);
  const uint32_t R = geo_.virtual_buckets;
  const uint32_t M = geo_.slots_per_bucket;

  // The cell's keys live only in its R buckets under the current mapping.
  // Refinement runs on one thread, so the scratch vectors are members.
  std::vector<uint64_t>& keys = move_keys_;
  std::vector<uint64_t>& values = move_values_;
  std::vector<uint64_t*>& old_slots = move_slots_;
  keys.clear();
  values.clear();
  old_slots.clear();
  uint32_t seen[gph::kMaxVirtualBuckets];
  uint32_t distinct = 0;
  for (uint32_t r = 0; r < R; ++r) {
    const uint32_t b = gph::bucket_of(geo_, cell, r, mapping);
    if (std::find(seen, seen + distinct, b) != seen + distinct) continue;
    seen[distinct++] = b;
    uint64_t* slots = bucket_keys(b);
    for (uint32_t s = 0; s < M; ++s) {
      if (slots[s] != gph::kEmptyKey && gph::cell_of(geo_, slots[s]) == cell) {
        keys.push_back(slots[s]);
        values.push_back(bucket_values(b)[s]);
        old_slots.push_back(&slots[s]);
      }
    }
  }
  keys.push_back(key);
  values.push_back(value);

  uint8_t chosen = current;
  const bool planned = gph::plan_extended_move(
      geo_, cell, current, keys.data(), static_cast<uint32_t>(keys.size()),
      [&](uint32_t b) { return others_in_bucket(b, cell); }, &chosen);
  if (!planned) return false;

  for (uint64_t* slot : old_slots) *slot = gph::kEmptyKey;
  cells_[cell] = chosen;
  for (size_t k = 0; k < keys.size(); ++k) {
    const uint32_t b = gph::bucket_for_key(geo_, keys[k], cell, chosen);
    uint64_t* slots = bucket_keys(b);
    uint32_t s = 0;
    while (s < M && slots[s] != gph::kEmptyKey) ++s;
    if (s == M) {
      // The planner counted room for every key; reaching here is a bug.
      std::fprintf(stderr, "gphkv: Extended Move overfilled bucket %u of cell %u\n", b, cell);
      std::abort();
    }
    slots[s] = keys[k];
    bucket_values(b)[s] = values[k];
  }
  return true;
}

absl::Status CpuTable::insert_or_assign(absl::Span<const uint64_t> keys, absl::Span<const uint64_t> values,
                                        absl::Span<UpsertOutcome> outcomes) {
  if (values.size() != keys.size()) {
    return size_mismatch("insert_or_assign", keys.size(), "values", values.size());
  }
  if (outcomes.size() != keys.size()) {
    return size_mismatch("insert_or_assign", keys.size(), "outcomes", outcomes.size());
  }
  if (auto s = check_batch("insert_or_assign", keys.size()); !s.ok()) return s;

  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i] != gph::kEmptyKey) continue;
    outcomes[i] = has_empty_key_ ? UpsertOutcome::kAssigned : UpsertOutcome::kInserted;
    size_ += !has_empty_key_;
    has_empty_key_ = true;
    empty_key_value_ = values[i];
  }

  // GPH §6.3 Saturation Fill: lock-free direct inserts, cells unchanged.
  OwnerLists lists = partition_by_owner(keys);
  const size_t owners = lists.size();
  std::vector<std::vector<uint32_t>> overflowed(owners);
  std::vector<uint64_t> inserted(owners, 0);
  pool_.run(owners, [&](size_t owner) {
    for (size_t chunk = 0; chunk < owners; ++chunk) {
      const std::vector<uint32_t>& mine = lists[chunk][owner];
      for_each_located(
          geo_, cells_.data(), keys_.data(), mine.size(), [&](size_t j) { return keys[mine[j]]; },
          [&](size_t j, const Located& at) {
            const uint32_t i = mine[j];
            if (direct_insert(keys[i], values[i], at.bucket, &outcomes[i])) {
              inserted[owner] += outcomes[i] == UpsertOutcome::kInserted;
            } else {
              overflowed[owner].push_back(i);
            }
          });
    }
  });
  for (uint64_t n : inserted) size_ += n;

  // GPH §6.3 Refinement: the overflowed keys, one at a time in batch order, so
  // a key repeated in the batch still ends with its last value.
  std::vector<uint32_t> pending;
  for (auto& list : overflowed) pending.insert(pending.end(), list.begin(), list.end());
  std::sort(pending.begin(), pending.end());
  // A key refused here stays refused for the rest of the batch, as on the
  // GPU (whose first occurrence acts for all): a later repeat that found room
  // after other keys moved would be stored while its first occurrence was
  // reported refused, and a caller that keeps refused keys aside for a larger
  // table (ElasticTable) would hold it twice.
  absl::flat_hash_set<uint64_t> refused;
  for (uint32_t i : pending) {
    if (refused.contains(keys[i])) {
      outcomes[i] = UpsertOutcome::kNoRoom;
      continue;
    }
    const uint32_t cell = gph::cell_of(geo_, keys[i]);
    const uint32_t b = gph::bucket_for_key(geo_, keys[i], cell, cells_[cell]);
    if (direct_insert(keys[i], values[i], b, &outcomes[i])) {
      size_ += outcomes[i] == UpsertOutcome::kInserted;
    } else if (extended_move(keys[i], values[i], cell)) {
      outcomes[i] = UpsertOutcome::kInserted;
      ++size_;
    } else {
      outcomes[i] = UpsertOutcome::kNoRoom;
      refused.insert(keys[i]);
    }
  }
  return absl::OkStatus();
}

absl::Status CpuTable::erase(absl::Span<const uint64_t> keys, absl::Span<uint8_t> erased) {
  if (erased.size() != keys.size()) return size_mismatch("erase", keys.size(), "erased flags", erased.size());
  if (auto s = check_batch("erase", keys.size()); !s.ok()) return s;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i] != gph::kEmptyKey) continue;
    erased[i] = has_empty_key_;
    size_ -= has_empty_key_;
    has_empty_key_ = false;
  }
  OwnerLists lists = partition_by_owner(keys);
  const size_t owners = lists.size();
  std::vector<uint64_t> removed(owners, 0);
  const uint32_t M = geo_.slots_per_bucket;
  pool_.run(owners, [&](size_t owner) {
    for (size_t chunk = 0; chunk < owners; ++chunk) {
      const std::vector<uint32_t>& mine = lists[chunk][owner];
      for_each_located(
          geo_, cells_.data(), keys_.data(), mine.size(), [&](size_t j) { return keys[mine[j]]; },
          [&](size_t j, const Located& at) {
            const uint32_t i = mine[j];
            const uint64_t key = keys[i];
            uint64_t* slots = bucket_keys(at.bucket);
            erased[i] = 0;
            for (uint32_t s = 0; s < M; ++s) {
              // Atomic: owners split the keys by cell, and cells share buckets,
              // so another owner may be clearing a slot of this bucket.
              if (load_key(&slots[s]) == key) {
                // No tombstone: the key has no other bucket a lookup could miss.
                __atomic_store_n(&slots[s], gph::kEmptyKey, __ATOMIC_RELAXED);
                erased[i] = 1;
                ++removed[owner];
                break;
              }
            }
          });
    }
  });
  for (uint64_t n : removed) size_ -= n;
  return absl::OkStatus();
}

absl::Status CpuTable::clear() {
  std::fill(cells_.begin(), cells_.end(), 0);
  std::fill(keys_.begin(), keys_.end(), gph::kEmptyKey);
  std::fill(values_.begin(), values_.end(), 0);
  has_empty_key_ = false;
  empty_key_value_ = 0;
  size_ = 0;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<KeyValue>> CpuTable::export_pairs() const {
  std::vector<KeyValue> out;
  out.reserve(size_);
  if (has_empty_key_) out.push_back({gph::kEmptyKey, empty_key_value_});
  for (uint64_t s = 0; s < geo_.num_slots(); ++s) {
    if (keys_[s] != gph::kEmptyKey) out.push_back({keys_[s], values_[s]});
  }
  return out;
}

absl::Status CpuTable::export_keys(std::vector<uint64_t>* keys) const {
  keys->clear();
  keys->reserve(size_);
  if (has_empty_key_) keys->push_back(gph::kEmptyKey);
  for (uint64_t s = 0; s < geo_.num_slots(); ++s) {
    if (keys_[s] != gph::kEmptyKey) keys->push_back(keys_[s]);
  }
  return absl::OkStatus();
}

absl::StatusOr<TableImage> CpuTable::image() const {
  TableImage img;
  img.geometry = geo_;
  img.cells = cells_;
  img.keys = keys_;
  img.values = values_;
  img.has_empty_key = has_empty_key_;
  img.empty_key_value = empty_key_value_;
  return img;
}

absl::Status CpuTable::load_image(const TableImage& img) {
  if (!same_addressing(img.geometry, geo_) || img.cells.size() != geo_.num_cells ||
      img.keys.size() != geo_.num_slots() || img.values.size() != geo_.num_slots()) {
    return absl::InvalidArgumentError("load_image: the image's geometry differs from the table's");
  }
  cells_ = img.cells;
  keys_ = img.keys;
  values_ = img.values;
  has_empty_key_ = img.has_empty_key;
  empty_key_value_ = img.empty_key_value;
  count_size();
  return absl::OkStatus();
}

}  // namespace cpu
}  // namespace gphkv::engine

#include "tests/engine/table_checks.h"

#include <cstdlib>
#include <iostream>
#include <unordered_set>

#include "absl/strings/str_cat.h"

namespace gphkv::engine::testing {

uint64_t test_seed() {
  static const uint64_t seed = [] {
    if (const char* env = std::getenv("GPHKV_TEST_SEED")) return static_cast<uint64_t>(std::strtoull(env, nullptr, 0));
    return static_cast<uint64_t>(std::random_device{}()) << 32 | std::random_device{}();
  }();
  return seed;
}

std::string check_invariants(const TableImage& img, uint64_t expected_size) {
  const gph::Geometry& g = img.geometry;
  if (img.cells.size() != g.num_cells) return absl::StrCat("cells: ", img.cells.size(), " != L ", g.num_cells);
  if (img.keys.size() != g.num_slots()) return absl::StrCat("keys: ", img.keys.size(), " != N*M");
  std::unordered_set<uint64_t> seen;
  uint64_t stored = img.has_empty_key ? 1 : 0;
  for (uint64_t slot = 0; slot < img.keys.size(); ++slot) {
    const uint64_t key = img.keys[slot];
    if (key == gph::kEmptyKey) continue;
    ++stored;
    if (!seen.insert(key).second) return absl::StrCat("key ", key, " is stored twice");
    const uint32_t cell = gph::cell_of(g, key);
    const uint32_t want = gph::bucket_for_key(g, key, cell, img.cells[cell]);
    const uint64_t have = slot / g.slots_per_bucket;
    if (have != want) {
      return absl::StrCat("key ", key, " of cell ", cell, " is in bucket ", have, " but its cell maps it to bucket ",
                          want);
    }
  }
  if (stored != expected_size) return absl::StrCat("table holds ", stored, " keys, expected ", expected_size);
  return "";
}

std::string check_contents(const Table& table, const std::unordered_map<uint64_t, uint64_t>& model) {
  auto pairs = table.export_pairs();
  if (!pairs.ok()) return pairs.status().ToString();
  if (pairs->size() != model.size()) {
    return absl::StrCat("table exports ", pairs->size(), " pairs, model has ", model.size());
  }
  for (const KeyValue& kv : *pairs) {
    auto it = model.find(kv.key);
    if (it == model.end()) return absl::StrCat("key ", kv.key, " is stored but not in the model");
    if (it->second != kv.value) {
      return absl::StrCat("key ", kv.key, " holds ", kv.value, ", model says ", it->second);
    }
  }
  return check_keys(table, model);
}

std::string check_keys(const Table& table, const std::unordered_map<uint64_t, uint64_t>& model) {
  // A buffer holding stale keys: export_keys must clear it first.
  std::vector<uint64_t> keys(3, 12345);
  if (absl::Status s = table.export_keys(&keys); !s.ok()) return s.ToString();
  if (keys.size() != model.size()) {
    return absl::StrCat("table lists ", keys.size(), " keys, model has ", model.size());
  }
  std::unordered_set<uint64_t> seen;
  for (uint64_t k : keys) {
    if (!seen.insert(k).second) return absl::StrCat("key ", k, " is listed twice");
    if (model.count(k) == 0) return absl::StrCat("key ", k, " is listed but not in the model");
  }
  return "";
}

std::vector<Backend> available_backends() {
  std::vector<Backend> b{Backend::kCpu};
  if (cuda_device_count() > 0) b.push_back(Backend::kCuda);
  return b;
}

}  // namespace gphkv::engine::testing

// Exact models of a cache under the load generator's cache-aside stream
// (cache_aside.h), to say what hit ratio a policy gives on a --trace: the
// baseline gphkv's eviction is measured against (docs/loadgen.md, 3.2).
//
// The stream, as the load generator sends it:
// - a get looks every key up first (a hit makes its key the most recently
//   used), and only then are its misses put, each once, in the get's order
//   (the fill follows the get's answer); a key asked twice counts twice;
// - a put inserts or updates each key (most recently used);
// - a delete removes each key.
// Capacity is in items. Hits, misses, fills and evictions are counted.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace gphkv::loadgen {

struct CacheModelStats {
  uint64_t get_keys = 0;   // keys asked by gets (a key asked twice: twice)
  uint64_t hits = 0;       // of those, found
  uint64_t fills = 0;      // keys put after a get missed them
  uint64_t evictions = 0;  // items pushed out to make room
  double hit_ratio() const { return get_keys ? static_cast<double>(hits) / get_keys : 0.0; }
};

class CacheModel {
 public:
  virtual ~CacheModel() = default;
  void Get(absl::Span<const uint64_t> keys);
  void Put(absl::Span<const uint64_t> keys);
  void Delete(absl::Span<const uint64_t> keys);
  const CacheModelStats& stats() const { return stats_; }
  virtual size_t size() const = 0;
  virtual bool Contains(uint64_t key) const = 0;

 protected:
  // Present: mark it used (most recent, or its reference bit set) and say true.
  virtual bool Touch(uint64_t key) = 0;
  // Insert a key that is absent (evicting to make room, counted) or update
  // one that is present (as recently used as a new one).
  virtual void Insert(uint64_t key) = 0;
  virtual void Remove(uint64_t key) = 0;
  CacheModelStats stats_;

 private:
  std::vector<uint64_t> missed_;         // Get's scratch
  std::unordered_set<uint64_t> filled_;  // Get's scratch
};

// Exact LRU: the least recently used item goes.
class LruModel : public CacheModel {
 public:
  explicit LruModel(uint64_t capacity) : capacity_(capacity) {}
  size_t size() const override { return where_.size(); }
  bool Contains(uint64_t key) const override { return where_.count(key) > 0; }

 protected:
  bool Touch(uint64_t key) override;
  void Insert(uint64_t key) override;
  void Remove(uint64_t key) override;

 private:
  const uint64_t capacity_;
  std::list<uint64_t> order_;  // most recent first
  std::unordered_map<uint64_t, std::list<uint64_t>::iterator> where_;
};

// Plain CLOCK: slots in a ring, a reference bit each. A new item takes a
// free slot (the one freed last; at first slot 0, 1, ...) or, when none is
// free, the hand sweeps: a referenced slot has its bit cleared and is
// skipped, the first unreferenced one is evicted and takes the new item, and
// the hand moves past it. New items and used ones have the bit set.
class ClockModel : public CacheModel {
 public:
  explicit ClockModel(uint64_t capacity);
  size_t size() const override { return where_.size(); }
  bool Contains(uint64_t key) const override { return where_.count(key) > 0; }

 protected:
  bool Touch(uint64_t key) override;
  void Insert(uint64_t key) override;
  void Remove(uint64_t key) override;

 private:
  struct Slot {
    uint64_t key = 0;
    bool used = false;
    bool referenced = false;
  };
  std::vector<Slot> slots_;
  std::vector<size_t> free_;  // free slots, the next one to take at the back
  size_t hand_ = 0;
  std::unordered_map<uint64_t, size_t> where_;
};

// "lru" or "clock".
absl::StatusOr<std::unique_ptr<CacheModel>> MakeCacheModel(const std::string& policy, uint64_t capacity);

}  // namespace gphkv::loadgen

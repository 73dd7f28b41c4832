#include "loadgen/cache_model.h"

#include "absl/strings/str_cat.h"

namespace gphkv::loadgen {

void CacheModel::Get(absl::Span<const uint64_t> keys) {
  // Every key is looked up before any fill: the fill follows the get's answer.
  missed_.clear();
  for (uint64_t key : keys) {
    ++stats_.get_keys;
    if (Touch(key)) {
      ++stats_.hits;
    } else {
      missed_.push_back(key);
    }
  }
  // The fill names each missed key once (cache_aside.h), in the get's order.
  filled_.clear();
  for (uint64_t key : missed_) {
    if (!filled_.insert(key).second) continue;
    ++stats_.fills;
    Insert(key);
  }
}

void CacheModel::Put(absl::Span<const uint64_t> keys) {
  for (uint64_t key : keys) Insert(key);
}

void CacheModel::Delete(absl::Span<const uint64_t> keys) {
  for (uint64_t key : keys) Remove(key);
}

bool LruModel::Touch(uint64_t key) {
  auto it = where_.find(key);
  if (it == where_.end()) return false;
  order_.splice(order_.begin(), order_, it->second);
  return true;
}

void LruModel::Insert(uint64_t key) {
  if (Touch(key)) return;
  if (capacity_ == 0) return;
  if (where_.size() >= capacity_) {
    where_.erase(order_.back());
    order_.pop_back();
    ++stats_.evictions;
  }
  order_.push_front(key);
  where_[key] = order_.begin();
}

void LruModel::Remove(uint64_t key) {
  auto it = where_.find(key);
  if (it == where_.end()) return;
  order_.erase(it->second);
  where_.erase(it);
}

ClockModel::ClockModel(uint64_t capacity) : slots_(capacity) {
  // Slot 0 is taken first.
  for (size_t i = capacity; i-- > 0;) free_.push_back(i);
}

bool ClockModel::Touch(uint64_t key) {
  auto it = where_.find(key);
  if (it == where_.end()) return false;
  slots_[it->second].referenced = true;
  return true;
}

void ClockModel::Insert(uint64_t key) {
  if (Touch(key) || slots_.empty()) return;
  size_t at;
  if (!free_.empty()) {
    at = free_.back();
    free_.pop_back();
  } else {
    // Every slot is used: the sweep ends within two turns of the ring.
    while (slots_[hand_].referenced) {
      slots_[hand_].referenced = false;
      hand_ = (hand_ + 1) % slots_.size();
    }
    at = hand_;
    hand_ = (hand_ + 1) % slots_.size();
    where_.erase(slots_[at].key);
    ++stats_.evictions;
  }
  slots_[at] = Slot{key, true, true};
  where_[key] = at;
}

void ClockModel::Remove(uint64_t key) {
  auto it = where_.find(key);
  if (it == where_.end()) return;
  slots_[it->second] = Slot{};
  free_.push_back(it->second);
  where_.erase(it);
}

absl::StatusOr<std::unique_ptr<CacheModel>> MakeCacheModel(const std::string& policy, uint64_t capacity) {
  if (policy == "lru") return std::make_unique<LruModel>(capacity);
  if (policy == "clock") return std::make_unique<ClockModel>(capacity);
  return absl::InvalidArgumentError(absl::StrCat("unknown policy '", policy, "' (want lru or clock)"));
}

}  // namespace gphkv::loadgen

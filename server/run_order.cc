#include "server/run_order.h"

#include <algorithm>

namespace gphkv::server {
namespace {

bool is_write(const Call* c) { return c->kind() != OpKind::kGet; }

uint64_t filter_bit(uint64_t key) { return uint64_t{1} << ((key * 0x9e3779b97f4a7c15ULL) >> 58); }

}  // namespace

bool RunOrder::writes_first(std::vector<Call*>& calls) {
  // Only worth it when a write follows a get: otherwise the batch already
  // has its writes first (or none, or no gets).
  bool seen_get = false, write_after_get = false;
  for (const Call* c : calls) {
    // A flush_all writes every key: nothing moves past it.
    if (c->kind() == OpKind::kPut && c->put().mode == PutMode::kFlush) return false;
    if (!is_write(c)) {
      seen_get = true;
    } else if (seen_get) {
      write_after_get = true;
      break;
    }
  }
  if (!write_after_get) return false;

  written_.clear();
  filter_ = 0;
  auto note = [&](uint64_t key) {
    written_.insert(key);
    filter_ |= filter_bit(key);
  };
  for (const Call* c : calls) {
    if (is_write(c)) {
      for (uint64_t k : c->keys()) note(k);
    }
  }
  for (const Call* c : calls) {
    if (is_write(c)) continue;
    for (uint64_t k : c->keys()) {
      if ((filter_ & filter_bit(k)) != 0 && written_.contains(k)) return false;
    }
  }
  std::stable_partition(calls.begin(), calls.end(), is_write);
  return true;
}

}  // namespace gphkv::server

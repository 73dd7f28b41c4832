#include "loadgen/cache_aside.h"

namespace gphkv::loadgen {

bool CacheAsideFill::Make(const Op& get, const OpResult& answer, Op* fill) {
  // As many found as asked: nothing missed (a key asked twice is found twice).
  if (get.type != OpType::kGet || !answer.ok || answer.found >= get.keys.size()) return false;
  found_.clear();
  for (const ValueSeen& s : answer.seen) found_.insert(s.key);
  fill->type = OpType::kPut;
  fill->keys.clear();
  fill->value_sizes.clear();
  fill->version = kFillVersion;
  for (uint64_t key : get.keys) {
    // Inserting into found_ also keeps a key asked twice from being filled twice.
    if (!found_.insert(key).second) continue;
    fill->keys.push_back(key);
    fill->value_sizes.push_back(workload_->ValueSizeOf(key));
  }
  return !fill->keys.empty();
}

}  // namespace gphkv::loadgen

#include "server/run_order.h"

#include <algorithm>

namespace gphkv::server {
namespace {

bool is_get(const Call* c) { return c->kind() == OpKind::kGet; }

uint64_t filter_bit(uint64_t key) { return uint64_t{1} << ((key * 0x9e3779b97f4a7c15ULL) >> 58); }

// What the order tracks for key i of `c`: the key within its session when
// every call of the batch has one, the key alone otherwise. Two (session,
// key) pairs that land on one value are only ordered more than they need.
uint64_t tracked(const Call* c, size_t i, uint64_t key, bool by_session) {
  if (!by_session) return key;
  // A packed get's keys each keep the session they came on (GetOp::key_sessions).
  const absl::Span<const uint64_t> sessions = c->kind() == OpKind::kGet ? c->get().key_sessions : KeySpan();
  uint64_t s = (sessions.empty() ? c->session : sessions[i]) * 0xbf58476d1ce4e5b9ULL;
  s ^= s >> 31;
  return key ^ (s * 0x94d049bb133111ebULL);
}

// Changes what a later call of one of its keys would see.
bool changes_keys(const Call* c) { return !is_get(c) || c->get().touch; }

// Levels hold one kind of call each, in turn: puts, deletes, shrinks,
// gets, puts, ... (writes first).
constexpr int kKinds = 4;
int kind_index(const Call* c) {
  switch (c->kind()) {
    case OpKind::kPut: return 0;
    case OpKind::kDelete: return 1;
    case OpKind::kShrink: return 2;
    case OpKind::kGet: return 3;
  }
  return 3;
}

// The first level at or after `level` that holds calls of `c`'s kind.
int level_for(const Call* c, int level) { return level + (kind_index(c) - level % kKinds + kKinds) % kKinds; }

// Runs of consecutive calls of one kind: what the executor applies.
int runs_of(const std::vector<Call*>& calls) {
  int runs = 0;
  for (size_t i = 0; i < calls.size(); ++i) runs += i == 0 || calls[i]->kind() != calls[i - 1]->kind();
  return runs;
}

}  // namespace

bool RunOrder::reorder(std::vector<Call*>& calls) {
  // Only worth it when a write follows a get: otherwise the batch already
  // has its writes first (or none, or no gets).
  bool seen_get = false, write_after_get = false;
  for (const Call* c : calls) {
    // A flush_all writes every key: nothing moves past it.
    if (c->kind() == OpKind::kPut && c->put().mode == PutMode::kFlush) return false;
    if (is_get(c)) {
      seen_get = true;
    } else if (seen_get) {
      write_after_get = true;
    }
  }
  if (!write_after_get) return false;

  // Only keys that some call of the batch changes order anything: they
  // alone are tracked (the filter spares most other keys the lookup).
  bool by_session = true;
  for (const Call* c : calls) {
    by_session &= c->session != 0;
    if (by_session && c->kind() == OpKind::kGet) {
      for (uint64_t s : c->get().key_sessions) by_session &= s != 0;
    }
  }
  levels_.clear();
  filter_ = 0;
  for (const Call* c : calls) {
    if (!changes_keys(c)) continue;
    const KeySpan keys = c->keys();
    for (size_t j = 0; j < keys.size(); ++j) {
      const uint64_t k = tracked(c, j, keys[j], by_session);
      levels_.try_emplace(k);
      filter_ |= filter_bit(k);
    }
  }
  level_of_.resize(calls.size());
  for (size_t i = 0; i < calls.size(); ++i) {
    const Call* c = calls[i];
    const bool changes = changes_keys(c);
    int level = level_for(c, 0);
    const KeySpan keys = c->keys();
    for (size_t j = 0; j < keys.size(); ++j) {
      const uint64_t k = tracked(c, j, keys[j], by_session);
      if ((filter_ & filter_bit(k)) == 0) continue;
      const auto it = levels_.find(k);
      if (it == levels_.end()) continue;
      // A change follows every earlier call of the key, a plain get every
      // earlier change of it: in the same run when it is of the same kind
      // (a run keeps arrival order), else in the next run of its kind.
      const int after = changes ? it->second.any : it->second.changed;
      if (after >= 0) level = std::max(level, level_for(c, after));
    }
    level_of_[i] = level;
    for (size_t j = 0; j < keys.size(); ++j) {
      const uint64_t k = tracked(c, j, keys[j], by_session);
      if ((filter_ & filter_bit(k)) == 0) continue;
      const auto it = levels_.find(k);
      if (it == levels_.end()) continue;
      it->second.any = std::max(it->second.any, level);
      if (changes) it->second.changed = std::max(it->second.changed, level);
    }
  }
  // Stable by level: arrival order within each run.
  order_.resize(calls.size());
  for (size_t i = 0; i < calls.size(); ++i) order_[i] = static_cast<uint32_t>(i);
  std::stable_sort(order_.begin(), order_.end(), [&](uint32_t a, uint32_t b) { return level_of_[a] < level_of_[b]; });
  sorted_.resize(calls.size());
  for (size_t i = 0; i < calls.size(); ++i) sorted_[i] = calls[order_[i]];
  // Levels put every call as early as it may go, which in a rare batch
  // splits a stretch of one kind that arrival order kept together: then
  // the batch keeps arrival order.
  if (runs_of(sorted_) >= runs_of(calls)) return false;
  calls.swap(sorted_);
  return true;
}

}  // namespace gphkv::server

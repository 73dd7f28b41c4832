// ExtentValueHeap's trim: freed memory given back to the backend, in steps
// of bounded work so a server keeps serving between them (a whole trim of a
// heap of millions of values takes about a second of bookkeeping, most of it
// in attempts to empty chunks whose values fit no hole elsewhere).
//
// Three passes over the chunks that hold values, as one trim did at once
// before: empty every chunk that can be (sparsest first, each wholly or not
// at all, into the holes of fuller ones); slide the chunks at least a
// quarter free, so values too large for the scattered holes fit their
// tails; empty again. Every wholly free chunk is unmapped at each step, so
// no value is ever moved into a chunk that is about to be given back.
#include <algorithm>

#include "server/extent_value_heap.h"

namespace gphkv::server {

void ExtentValueHeap::begin_trim() {
  trim_.emplace();
  plan_trim_pass(TrimPass::kEmpty);
}

void ExtentValueHeap::plan_trim_pass(TrimPass pass) {
  trim_->pass = pass;
  trim_->order.clear();
  trim_->next = 0;
  if (pass == TrimPass::kDone) return;
  for (uint64_t c = 0; c < chunks_.size(); ++c) {
    if (chunks_[c].base == nullptr || chunks_[c].members.empty()) continue;
    if (pass == TrimPass::kSlide && chunk_granules_ - chunks_[c].live_granules < chunk_granules_ / 4) continue;
    trim_->order.push_back(c);
  }
  // Sparsest first: the fewest bytes moved per chunk emptied, and for a
  // slide the largest extent made per byte moved.
  std::sort(trim_->order.begin(), trim_->order.end(),
            [&](uint64_t a, uint64_t b) { return chunks_[a].live_granules < chunks_[b].live_granules; });
}

absl::StatusOr<uint64_t> ExtentValueHeap::trim_chunk(uint64_t c) {
  // Puts and deletes between steps may have filled, emptied or unmapped it.
  const Chunk& ch = chunks_[c];
  if (ch.base == nullptr || ch.members.empty()) return 0;
  const uint64_t live = ch.live_granules;
  if (trim_->pass == TrimPass::kSlide) {
    if (chunk_granules_ - live < chunk_granules_ / 4) return 0;
    const uint64_t moved = ch.members.size();
    if (auto made = slide(c, 0); !made.ok()) return made.status();
    return moved;
  }
  // The index holds only holes of chunks with values (wholly free ones are
  // unmapped), c's own among them: when c's values outweigh the others'
  // holes, so do those of every fuller chunk after it.
  if (live > free_.free_granules() - (chunk_granules_ - live)) {
    trim_->next = trim_->order.size();
    return 0;
  }
  // A value longer than every hole cannot move: skip the planning.
  uint64_t longest = 0;
  for (uint64_t id : ch.members) longest = std::max(longest, granules(records_[id].length));
  if (longest > free_.largest()) return ch.members.size();
  const uint64_t moved = ch.members.size();
  auto emptied = empty_chunk(c);
  if (!emptied.ok()) return emptied.status();
  if (*emptied) {
    // Out of the index (empty_chunk leaves it so): back in, and given back.
    free_.add(chunk_start(c), chunk_granules_);
    remove_chunk(c);
  }
  return moved;
}

void ExtentValueHeap::release_free_chunks() {
  for (uint64_t c = 0; c < chunks_.size(); ++c) {
    if (chunks_[c].base != nullptr && chunks_[c].members.empty()) remove_chunk(c);
  }
}

absl::StatusOr<ValueHeap::TrimProgress> ExtentValueHeap::trim_step(uint64_t max_values) {
  TrimProgress progress;
  if (!trim_) {
    progress.done = true;
    return progress;
  }
  // Chunks that deletes emptied since the last step go back first; those
  // this step empties go back as they empty (trim_chunk): count by what is
  // reserved.
  const uint64_t reserved_before = reserved_;
  release_free_chunks();
  uint64_t spent = 0;
  while (spent < max_values && trim_->pass != TrimPass::kDone) {
    if (trim_->next >= trim_->order.size()) {
      plan_trim_pass(static_cast<TrimPass>(static_cast<int>(trim_->pass) + 1));
      continue;
    }
    auto cost = trim_chunk(trim_->order[trim_->next++]);
    if (!cost.ok()) {
      trim_.reset();
      return cost.status();
    }
    spent += *cost + 1;
  }
  progress.released_bytes = reserved_before - reserved_;
  if (trim_->pass == TrimPass::kDone) {
    trim_.reset();
    progress.done = true;
  }
  return progress;
}

absl::StatusOr<uint64_t> ExtentValueHeap::trim() {
  begin_trim();
  uint64_t released = 0;
  for (;;) {
    auto step = trim_step(UINT64_MAX);
    if (!step.ok()) return step.status();
    released += step->released_bytes;
    if (step->done) return released;
  }
}

}  // namespace gphkv::server

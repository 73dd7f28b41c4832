// ExtentValueHeap's compaction: contiguous room made out of scattered holes,
// for a put that finds enough free bytes but no hole that holds its values,
// and for trim (extent_value_heap_trim.cc). Two moves, both keeping every handle valid (a value keeps
// its id, only its place changes):
//  - emptying a chunk: its values go to holes of fuller chunks (all of them,
//    or none move), leaving a whole free chunk for values of any size, or to
//    give back;
//  - sliding a chunk: its values move toward its start, so its holes become
//    one extent at its end; needs no room elsewhere, so it serves when the
//    holes elsewhere are too small for the values of every sparse chunk.
#include <algorithm>

#include "server/extent_value_heap.h"

namespace gphkv::server {
namespace {

// A put that emptying cannot serve gives up on it after this many chunks
// (each costs a sort of its values) and slides chunks instead.
constexpr int kMaxEmptyingMisses = 8;
// A put slides only chunks at least 1/32 free: at most 32 bytes copied per
// byte of room made.
constexpr uint64_t kMinSlideShare = 32;

}  // namespace

std::vector<std::pair<uint64_t, uint64_t>> ExtentValueHeap::gaps(uint64_t c) const {
  std::vector<std::pair<uint64_t, uint64_t>> spans;  // (addr, granules) of the members, by address
  for (uint64_t id : chunks_[c].members) spans.emplace_back(records_[id].addr, granules(records_[id].length));
  std::sort(spans.begin(), spans.end());
  std::vector<std::pair<uint64_t, uint64_t>> out;
  uint64_t at = chunk_start(c);
  for (const auto& [addr, g] : spans) {
    if (addr > at) out.emplace_back(at, addr - at);
    at = addr + g;
  }
  const uint64_t end = chunk_start(c) + chunk_granules_;
  if (at < end) out.emplace_back(at, end - at);
  return out;
}

ExtentValueHeap::Move ExtentValueHeap::relocate(uint64_t id, uint64_t to, std::vector<uint64_t>* old_addrs) {
  const Record& r = records_[id];
  const ValueHandle h = value_handle::make(r.length & value_handle::kMaxLength, id);
  const char* from = address(h);
  old_addrs->push_back(r.addr);
  detach(id);
  attach(id, to);
  return Move{h, from, address(h)};
}

void ExtentValueHeap::put_back(absl::Span<const Move> moves, absl::Span<const uint64_t> old_addrs) {
  for (size_t i = moves.size(); i-- > 0;) {
    const uint64_t id = value_handle::id(moves[i].handle);
    detach(id);
    attach(id, old_addrs[i]);
  }
}

absl::StatusOr<bool> ExtentValueHeap::empty_chunk(uint64_t c) {
  // c's holes leave the index, so its values go elsewhere.
  const std::vector<std::pair<uint64_t, uint64_t>> holes = gaps(c);
  for (const auto& [addr, g] : holes) free_.remove(addr, g);
  // Largest first: they need the largest holes, and one that fits nowhere
  // is found before much is planned.
  std::vector<uint64_t> members = chunks_[c].members;
  std::sort(members.begin(), members.end(),
            [&](uint64_t a, uint64_t b) { return records_[a].length > records_[b].length; });
  std::vector<Move> moves;
  std::vector<uint64_t> old_addrs;
  bool planned = true;
  for (uint64_t id : members) {
    std::optional<uint64_t> to = free_.take(granules(records_[id].length));
    if (!to) {
      planned = false;
      break;
    }
    moves.push_back(relocate(id, *to, &old_addrs));
  }
  const absl::Status copied = planned ? move(moves, /*overlapping=*/false) : absl::OkStatus();
  if (planned && copied.ok()) {
    for (const Move& m : moves) moved_granules_ += granules(length(m.handle));
    return true;  // c is wholly free, and out of the index: the caller decides
  }
  // c keeps all its values (the bytes may not have arrived): the holes they
  // were given are free again, and so are its own.
  for (const Move& m : moves) {
    const Record& r = records_[value_handle::id(m.handle)];
    free_.add(r.addr, granules(r.length));
  }
  put_back(moves, old_addrs);
  for (const auto& [addr, g] : holes) free_.add(addr, g);
  if (!copied.ok()) return copied;
  return false;
}

absl::StatusOr<uint64_t> ExtentValueHeap::slide(uint64_t c, uint64_t want) {
  const std::vector<std::pair<uint64_t, uint64_t>> holes = gaps(c);
  for (const auto& [addr, g] : holes) free_.remove(addr, g);
  std::vector<uint64_t> members = chunks_[c].members;
  std::sort(members.begin(), members.end(),
            [&](uint64_t a, uint64_t b) { return records_[a].addr < records_[b].addr; });
  std::vector<Move> moves;
  std::vector<uint64_t> old_addrs;
  uint64_t at = chunk_start(c);
  for (uint64_t id : members) {
    if (records_[id].addr != at) moves.push_back(relocate(id, at, &old_addrs));
    at += granules(records_[id].length);
  }
  // In address order, each onto room its predecessors left: a move's
  // destination may overlap the source of the next.
  if (absl::Status copied = move(moves, /*overlapping=*/true); !copied.ok()) {
    put_back(moves, old_addrs);
    for (const auto& [addr, g] : holes) free_.add(addr, g);
    return copied;
  }
  for (const Move& m : moves) moved_granules_ += granules(length(m.handle));
  // Still short of `want`: the last values go to holes elsewhere, each
  // lengthening the free end by its extent.
  moves.clear();
  old_addrs.clear();
  const uint64_t slid_end = at;
  for (size_t i = members.size(); i-- > 0 && chunk_start(c) + chunk_granules_ - at < want;) {
    const uint64_t g = granules(records_[members[i]].length);
    std::optional<uint64_t> to = free_.take(g);
    if (!to) break;
    moves.push_back(relocate(members[i], *to, &old_addrs));
    at -= g;
  }
  if (absl::Status copied = move(moves, /*overlapping=*/false); !copied.ok()) {
    for (const Move& m : moves) {
      const Record& r = records_[value_handle::id(m.handle)];
      free_.add(r.addr, granules(r.length));
    }
    put_back(moves, old_addrs);
    if (slid_end < chunk_start(c) + chunk_granules_) free_.add(slid_end, chunk_start(c) + chunk_granules_ - slid_end);
    return copied;
  }
  for (const Move& m : moves) moved_granules_ += granules(length(m.handle));
  const uint64_t end = chunk_start(c) + chunk_granules_;
  if (at < end) free_.add(at, end - at);
  return end - at;
}

absl::StatusOr<uint64_t> ExtentValueHeap::empty_sparse_chunks(uint64_t goal, uint64_t allowed, int max_misses) {
  // Free chunks leave the index meanwhile (moving values there gains
  // nothing), and so does each chunk emptied.
  std::vector<uint64_t> partial, retired;
  uint64_t whole = 0;
  for (uint64_t c = 0; c < chunks_.size(); ++c) {
    if (chunks_[c].base == nullptr) continue;
    if (chunks_[c].members.empty()) {
      whole += chunk_granules_;
      retired.push_back(c);
      free_.remove(chunk_start(c), chunk_granules_);
    } else {
      partial.push_back(c);
    }
  }
  // Sparsest first: the fewest bytes moved per chunk emptied.
  std::sort(partial.begin(), partial.end(),
            [&](uint64_t a, uint64_t b) { return chunks_[a].live_granules < chunks_[b].live_granules; });
  absl::Status error;
  int misses = 0;
  for (uint64_t c : partial) {
    if (whole + allowed >= goal || misses >= max_misses) break;
    const uint64_t live = chunks_[c].live_granules;
    // The index holds the holes of the chunks not retired, c's own among them.
    if (live > free_.free_granules() - (chunk_granules_ - live)) break;  // the rest are fuller still
    auto emptied = empty_chunk(c);
    if (!emptied.ok()) {
      error = emptied.status();
      break;
    }
    if (*emptied) {
      whole += chunk_granules_;
      retired.push_back(c);
    } else {
      ++misses;
    }
  }
  for (uint64_t c : retired) free_.add(chunk_start(c), chunk_granules_);
  if (!error.ok()) return error;
  return whole;
}

absl::StatusOr<uint64_t> ExtentValueHeap::slide_chunks(uint64_t goal, uint64_t have, uint64_t min_free, uint64_t want) {
  std::vector<uint64_t> partial;
  uint64_t reach = have;
  for (uint64_t c = 0; c < chunks_.size(); ++c) {
    if (chunks_[c].base == nullptr || chunks_[c].members.empty()) continue;
    if (chunk_granules_ - chunks_[c].live_granules < min_free) continue;
    partial.push_back(c);
    reach += chunk_granules_ - chunks_[c].live_granules;
  }
  // A goal the free space cannot reach moves nothing: refusing a put that
  // cannot be served stays cheap.
  if (goal != UINT64_MAX && reach < goal) return have;
  // The most free space first: the largest extent made per byte moved.
  std::sort(partial.begin(), partial.end(),
            [&](uint64_t a, uint64_t b) { return chunks_[a].live_granules < chunks_[b].live_granules; });
  for (uint64_t c : partial) {
    if (have >= goal) break;
    auto made = slide(c, want);
    if (!made.ok()) return made.status();
    have += *made;
  }
  return have;
}

absl::StatusOr<bool> ExtentValueHeap::compact(uint64_t goal, uint64_t allowed, uint64_t want) {
  auto whole = empty_sparse_chunks(goal, allowed, kMaxEmptyingMisses);
  if (!whole.ok()) return whole.status();
  if (*whole + allowed >= goal) return true;
  auto have = slide_chunks(goal, *whole + allowed, chunk_granules_ / kMinSlideShare, want);
  if (!have.ok()) return have.status();
  return *have >= goal;
}

}  // namespace gphkv::server

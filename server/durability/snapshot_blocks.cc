#include "server/durability/snapshot_blocks.h"

#include "absl/strings/str_cat.h"
#include "server/durability/pair_codec.h"
#include "server/durability/record_format.h"
#include "server/durability/snapshot_format.h"

namespace gphkv::server::durability {
namespace {

// Decodes a block record's payload into *block; what is wrong with it, if anything.
std::string decode_block(std::string_view payload, uint32_t version, SnapshotBlock* block) {
  uint64_t at = 0;
  uint8_t kind = kSnapshotBlockOfKeys;
  if (version >= 2) {
    if (payload.empty()) return "an empty block";
    kind = static_cast<uint8_t>(payload[0]);
    at = 1;
  }
  bool whole = false;
  if (kind == kSnapshotBlockOfKeys) {
    whole = decode_pair_entries(payload, &at, UINT64_MAX, &block->keys, &block->values);
  } else if (kind == kSnapshotBlockOfByteKeys) {
    whole = decode_byte_pair_entries(payload, &at, UINT64_MAX, &block->byte_keys, &block->values);
  } else if (kind == kSnapshotBlockOfByteItems) {
    whole = decode_byte_item_entries(payload, &at, UINT64_MAX, &block->byte_keys, &block->metas, &block->values);
  } else {
    return absl::StrCat("a block of unknown kind ", static_cast<int>(kind));
  }
  if (whole) return {};
  block->keys.clear();
  block->values.clear();
  block->byte_keys.clear();
  block->metas.clear();
  return "a block whose pairs run past its end";
}

}  // namespace

SnapshotBlocks::SnapshotBlocks(std::string_view bytes, uint64_t first, uint64_t header_blocks, uint32_t version,
                               RecoverMode mode)
    : bytes_(bytes), first_(first), header_blocks_(header_blocks), version_(version), mode_(mode) {
  thread_ = std::thread([this] { read_all(); });
}

SnapshotBlocks::~SnapshotBlocks() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

std::optional<SnapshotBlock> SnapshotBlocks::next() {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [this] { return !ready_.empty() || finished_; });
  if (ready_.empty()) return std::nullopt;
  SnapshotBlock block = std::move(ready_.front());
  ready_.pop_front();
  lock.unlock();
  changed_.notify_all();
  return block;
}

bool SnapshotBlocks::hand_over(SnapshotBlock block) {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [this] { return ready_.size() < kAhead || stopping_; });
  if (stopping_) return false;
  ready_.push_back(std::move(block));
  lock.unlock();
  changed_.notify_all();
  return true;
}

void SnapshotBlocks::read_all() {
  uint64_t intact = 0;
  uint64_t off = first_;
  while (off < bytes_.size()) {
    SnapshotBlock block;
    block.offset = off;
    const RecordAt r = read_record(bytes_, off);
    if (r.check != RecordCheck::kOk) {
      block.damage = intact == header_blocks_ ? std::string("bytes after the last block")
                                              : absl::StrCat("a block record ", damage_text(r.check));
    } else {
      block.damage = decode_block(r.payload, version_, &block);
    }
    if (block.damage.empty()) {
      block.end = r.end;
      off = r.end;
      ++intact;
      if (!hand_over(std::move(block))) return;
      continue;
    }
    // Damage ends a strict stream; a skipping one goes on at the next intact record.
    const bool go_on = mode_ == RecoverMode::kSkipCorrupt;
    if (go_on) block.resume = next_intact_record(bytes_, off);
    const std::optional<uint64_t> resume = block.resume;
    if (!hand_over(std::move(block)) || !go_on || !resume) break;
    off = *resume;
  }
  std::lock_guard<std::mutex> lock(mu_);
  finished_ = true;
  changed_.notify_all();
}

}  // namespace gphkv::server::durability

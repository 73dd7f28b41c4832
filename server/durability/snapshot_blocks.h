// A snapshot's block records, checked (CRC32C) and decoded into pairs on a
// thread of their own, a few blocks ahead of the caller: recovery puts one
// block's pairs into the store while the next ones are read, so reading a
// large snapshot (page faults on its mapping, checksums, decoding) overlaps
// the store's work instead of adding to it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "server/durability/durability_options.h"
#include "server/item_meta.h"

namespace gphkv::server::durability {

// One block record, in file order.
struct SnapshotBlock {
  uint64_t offset = 0;  // where the record starts
  uint64_t end = 0;     // intact: the offset after it
  // Empty: intact, its pairs in keys/values (views into the file's bytes).
  // Else what is wrong with it; under kSkipCorrupt, `resume` is the next
  // intact record (none: nothing after it is).
  std::string damage;
  std::optional<uint64_t> resume;
  std::vector<uint64_t> keys;
  std::vector<std::string_view> values;
  std::vector<std::string_view> byte_keys;  // a block of byte keys (keys empty)
  std::vector<byte_key::ItemMeta> metas;    // a block of byte-key items: byte_keys[i]'s fields
};

class SnapshotBlocks {
 public:
  // `bytes`: the whole file, which must outlive this; the blocks start at
  // `first`; `header_blocks`: how many the header counts (records after
  // them are "bytes after the last block"); `version`: the header's (a
  // version-1 block has no kind byte). Under kStrict the stream ends after
  // the first damaged block.
  SnapshotBlocks(std::string_view bytes, uint64_t first, uint64_t header_blocks, uint32_t version, RecoverMode mode);
  ~SnapshotBlocks();
  SnapshotBlocks(const SnapshotBlocks&) = delete;
  SnapshotBlocks& operator=(const SnapshotBlocks&) = delete;

  // The next block; none at the end of the stream.
  std::optional<SnapshotBlock> next();

 private:
  // Blocks decoded ahead of the caller, at most.
  static constexpr size_t kAhead = 8;

  void read_all();
  // Hands a block over, waiting for room; false once the reader is stopped.
  bool hand_over(SnapshotBlock block);

  const std::string_view bytes_;
  const uint64_t first_;
  const uint64_t header_blocks_;
  const uint32_t version_;
  const RecoverMode mode_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::deque<SnapshotBlock> ready_;
  bool finished_ = false;  // the reading thread handed over its last block
  bool stopping_ = false;  // the caller is gone
  std::thread thread_;
};

}  // namespace gphkv::server::durability

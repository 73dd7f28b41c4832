#include "server/durability/snapshot_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>

#include "absl/strings/str_cat.h"
#include "server/durability/file_names.h"
#include "server/durability/pair_codec.h"
#include "server/durability/posix_file.h"
#include "server/durability/record_format.h"

namespace gphkv::server::durability {
namespace {

// Writes the file at `tmp`, filling in *header as it goes.
absl::Status write_file(const std::string& tmp, PairSource& source, uint64_t block_bytes, SnapshotHeader* header,
                        uint64_t* file_bytes) {
  auto file = File::open(tmp, O_WRONLY | O_CREAT | O_TRUNC);
  if (!file.ok()) return file.status();
  // The header is written again at the end, with the counts.
  std::string head = encode_snapshot_header(*header);
  auto head_frame = record_header(head);
  if (auto s = file->append({kSnapshotMagic, std::string_view(head_frame.data(), head_frame.size()), head}); !s.ok()) {
    return s;
  }
  uint64_t offset = kSnapshotBlocksOffset;
  // A block holds one kind of key, named by its first byte.
  std::string block;
  auto flush = [&]() -> absl::Status {
    if (block.size() <= 1) {  // no entry after the kind
      block.clear();
      return absl::OkStatus();
    }
    const auto frame = record_header(block);
    if (auto s = file->append({std::string_view(frame.data(), frame.size()), block}); !s.ok()) return s;
    offset += frame.size() + block.size();
    ++header->blocks;
    block.clear();
    return absl::OkStatus();
  };
  Pairs pairs;
  for (;;) {
    auto more = source.next(&pairs);
    if (!more.ok()) return more.status();
    if (!*more) break;
    const bool items = pairs.has_item_fields();
    const char kind = static_cast<char>(items                   ? kSnapshotBlockOfByteItems
                                        : pairs.has_byte_keys() ? kSnapshotBlockOfByteKeys
                                                                : kSnapshotBlockOfKeys);
    if (!block.empty() && block[0] != kind) {
      if (auto s = flush(); !s.ok()) return s;
    }
    for (size_t i = 0; i < pairs.size(); ++i) {
      if (block.empty()) block.push_back(kind);
      if (items) {
        append_byte_item_entries(&block, pairs.byte_keys.subspan(i, 1), pairs.metas.subspan(i, 1),
                                 pairs.values.subspan(i, 1));
      } else if (pairs.has_byte_keys()) {
        append_byte_pair_entries(&block, pairs.byte_keys.subspan(i, 1), pairs.values.subspan(i, 1));
      } else {
        append_pair_entries(&block, pairs.keys.subspan(i, 1), pairs.values.subspan(i, 1));
      }
      ++header->pairs;
      header->value_bytes += pairs.values[i].size();
      if (block.size() >= block_bytes) {
        if (auto s = flush(); !s.ok()) return s;
      }
    }
  }
  if (auto s = flush(); !s.ok()) return s;
  head = encode_snapshot_header(*header);
  head_frame = record_header(head);
  std::string framed(head_frame.data(), head_frame.size());
  framed += head;
  if (auto s = file->write_at(kSnapshotMagic.size(), framed); !s.ok()) return s;
  if (auto s = file->sync_data(); !s.ok()) return s;
  *file_bytes = offset;
  return file->close();
}

}  // namespace

absl::StatusOr<SnapshotInfo> write_snapshot(const std::string& dir, uint64_t sequence, PairSource& source,
                                            uint64_t block_bytes) {
  const auto t0 = std::chrono::steady_clock::now();
  SnapshotInfo info;
  info.path = join_path(dir, snapshot_name(sequence));
  info.header.sequence = sequence;
  info.header.created_unix_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  const std::string tmp = absl::StrCat(info.path, kTempSuffix);
  absl::Status s = write_file(tmp, source, block_bytes, &info.header, &info.file_bytes);
  if (s.ok()) s = rename_file(tmp, info.path);
  if (!s.ok()) {
    ::unlink(tmp.c_str());  // best effort: a leftover is removed at the next start
    return s;
  }
  if (s = sync_dir(dir); !s.ok()) return s;
  info.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return info;
}

}  // namespace gphkv::server::durability

#include "server/durability/snapshot_reader.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "server/durability/posix_file.h"
#include "server/durability/record_format.h"
#include "server/durability/snapshot_blocks.h"

namespace gphkv::server::durability {
namespace {

absl::Status damaged(const std::string& path, uint64_t offset, absl::string_view what) {
  return absl::DataLossError(absl::StrCat("snapshot ", path, " at offset ", offset, ": ", what));
}

}  // namespace

absl::StatusOr<SnapshotLoad> load_snapshot(const NumberedFile& file, RecoverMode mode, RecoverySink& sink) {
  auto mapped = MappedFile::open(file.path);
  if (!mapped.ok()) return mapped.status();
  const std::string_view bytes = mapped->bytes();
  const std::string& path = file.path;
  if (bytes.substr(0, kSnapshotMagic.size()) != kSnapshotMagic)
    return damaged(path, 0, "not a gphkv snapshot (no magic)");
  const RecordAt head = read_record(bytes, kSnapshotMagic.size());
  if (head.check != RecordCheck::kOk) {
    return damaged(path, kSnapshotMagic.size(), absl::StrCat("the header record, ", damage_text(head.check)));
  }
  SnapshotLoad load;
  auto header = decode_snapshot_header(head.payload);
  if (header.status().code() == absl::StatusCode::kUnimplemented) {
    return absl::UnimplementedError(
        absl::StrCat("snapshot ", path, ": ", header.status().message(), " (written by a newer gphkv-server)"));
  }
  if (!header.ok()) return damaged(path, kSnapshotMagic.size(), header.status().message());
  load.header = *header;
  if (header->sequence != file.sequence) {
    return damaged(path, kSnapshotMagic.size(),
                   absl::StrCat("the header says batch ", header->sequence, ", the name batch ", file.sequence));
  }

  if (absl::Status s = sink.on_snapshot_begin(header->pairs, header->value_bytes); !s.ok()) return s;

  // Read, checked and decoded a few blocks ahead on another thread; the
  // sink takes them here, in file order.
  SnapshotBlocks blocks_ahead(bytes, head.end, header->blocks, header->version, mode);
  uint64_t blocks = 0;
  uint64_t off = head.end;
  while (std::optional<SnapshotBlock> b = blocks_ahead.next()) {
    off = b->offset;
    if (!b->damage.empty()) {
      if (mode == RecoverMode::kStrict) return damaged(path, b->offset, b->damage);
      load.dropped.push_back(absl::StrCat(path, " from offset ", b->offset,
                                          b->resume ? absl::StrCat(" to ", *b->resume) : std::string(" to its end"),
                                          ": ", b->damage));
      if (!b->resume) break;
      off = *b->resume;
      continue;
    }
    if (absl::Status s = sink.on_puts(Pairs{b->keys, b->values, b->byte_keys, b->metas}); !s.ok()) return s;
    ++blocks;
    load.pairs += b->values.size();
    load.bytes_read += b->end - b->offset;
    off = b->end;
  }
  if (blocks != load.header.blocks || load.pairs != load.header.pairs) {
    const std::string what = absl::StrCat("read ", blocks, " of ", load.header.blocks, " blocks and ", load.pairs,
                                          " of ", load.header.pairs, " pairs");
    if (mode == RecoverMode::kStrict) return damaged(path, off, what);
    load.dropped.push_back(absl::StrCat(path, ": ", what));
  }
  return load;
}

}  // namespace gphkv::server::durability

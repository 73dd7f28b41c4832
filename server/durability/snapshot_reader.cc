#include "server/durability/snapshot_reader.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "server/durability/pair_codec.h"
#include "server/durability/posix_file.h"
#include "server/durability/record_format.h"

namespace gphkv::server::durability {
namespace {

absl::Status damaged(const std::string& path, uint64_t offset, absl::string_view what) {
  return absl::DataLossError(absl::StrCat("snapshot ", path, " at offset ", offset, ": ", what));
}

const char* bad_record_text(RecordCheck check) {
  return check == RecordCheck::kTruncated ? "cut short" : "with a CRC32C that does not match";
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
    return damaged(path, kSnapshotMagic.size(), absl::StrCat("the header record, ", bad_record_text(head.check)));
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

  // Under kSkipCorrupt: notes the damage and returns where to go on (none: stop).
  auto skip = [&](uint64_t offset, std::string what) -> std::optional<uint64_t> {
    const std::optional<uint64_t> next = next_intact_record(bytes, offset);
    load.dropped.push_back(absl::StrCat(path, " from offset ", offset,
                                        next ? absl::StrCat(" to ", *next) : std::string(" to its end"), ": ", what));
    return next;
  };
  std::vector<uint64_t> keys;
  std::vector<std::string_view> values;
  uint64_t blocks = 0;
  uint64_t off = head.end;
  while (off < bytes.size()) {
    const RecordAt r = read_record(bytes, off);
    std::string what;
    if (r.check != RecordCheck::kOk) {
      what = blocks == load.header.blocks ? std::string("bytes after the last block")
                                          : absl::StrCat("a block record ", bad_record_text(r.check));
    } else {
      keys.clear();
      values.clear();
      uint64_t at = 0;
      if (!decode_pair_entries(r.payload, &at, UINT64_MAX, &keys, &values))
        what = "a block whose pairs run past its end";
    }
    if (!what.empty()) {
      if (mode == RecoverMode::kStrict) return damaged(path, off, what);
      const std::optional<uint64_t> next = skip(off, what);
      if (!next) break;
      off = *next;
      continue;
    }
    if (absl::Status s = sink.on_puts(Pairs{keys, values}); !s.ok()) return s;
    ++blocks;
    load.pairs += keys.size();
    load.bytes_read += r.end - off;
    off = r.end;
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

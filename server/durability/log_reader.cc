#include "server/durability/log_reader.h"

#include <fcntl.h>

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "server/durability/posix_file.h"
#include "server/durability/record_format.h"
#include "server/durability/write_batch.h"
#include "spdlog/spdlog.h"

namespace gphkv::server::durability {
namespace {

// Where replay found damage, and what it was.
struct Damage {
  size_t segment;  // index into the segments
  uint64_t offset;
  std::string what;
};

std::string describe_bad_record(RecordCheck check, std::string_view bytes, uint64_t offset) {
  std::string what = check == RecordCheck::kTruncated
                         ? absl::StrCat("a record cut short (", bytes.size() - offset, " bytes left in the file)")
                         : std::string("a record whose CRC32C does not match");
  if (auto next = next_intact_record(bytes, offset))
    absl::StrAppend(&what, ", with an intact record after it at offset ", *next);
  return what;
}

// Cuts the torn tail at `offset` (removing a segment left empty) and syncs.
absl::Status cut_torn_tail(const std::string& dir, const std::string& path, uint64_t offset) {
  if (offset == 0) {
    if (absl::Status s = remove_file(path); !s.ok()) return s;
    return sync_dir(dir);
  }
  auto file = File::open(path, O_WRONLY);
  if (!file.ok()) return file.status();
  if (absl::Status s = file->truncate(offset); !s.ok()) return s;
  return file->sync_data();
}

// kSkipCorrupt: sets aside the damaged segment from the damage on, and every
// segment after it, noting each in out->dropped.
absl::Status set_aside(const std::string& dir, const std::vector<NumberedFile>& segments, const Damage& damage,
                       LogReplay* out) {
  for (size_t i = damage.segment; i < segments.size(); ++i) {
    const std::string& path = segments[i].path;
    const std::string aside = corrupt_name(path);
    if (i == damage.segment && damage.offset > 0) {
      // Keep the intact prefix under the segment's name, the whole file aside.
      const std::string prefix = absl::StrCat(path, ".prefix");
      if (absl::Status s = copy_prefix(path, damage.offset, prefix); !s.ok()) return s;
      if (absl::Status s = rename_file(path, aside); !s.ok()) return s;
      if (absl::Status s = rename_file(prefix, path); !s.ok()) return s;
      out->segments.push_back(segments[i]);
      out->dropped.push_back(absl::StrCat(path, " from offset ", damage.offset, " on (the whole file kept as ", aside,
                                          "): ", damage.what));
      continue;
    }
    if (absl::Status s = rename_file(path, aside); !s.ok()) return s;
    out->dropped.push_back(i == damage.segment ? absl::StrCat(path, " (set aside as ", aside, "): ", damage.what)
                                               : absl::StrCat(path, " (set aside as ", aside, "): after the damage"));
  }
  return sync_dir(dir);
}

}  // namespace

absl::StatusOr<LogReplay> replay_log(const std::string& dir, const std::vector<NumberedFile>& segments,
                                     uint64_t after_sequence, RecoverMode mode, RecoverySink& sink) {
  LogReplay out;
  out.last_sequence = after_sequence;
  if (segments.empty()) return out;
  // Segments whose batches the snapshot holds all (the next one starts by
  // after_sequence + 1) are kept for the next snapshot to remove, unread.
  size_t start = 0;
  while (start + 1 < segments.size() && segments[start + 1].sequence <= after_sequence + 1) ++start;
  out.segments.assign(segments.begin(), segments.begin() + static_cast<ptrdiff_t>(start));

  // The next batch the log must hold.
  uint64_t expected = segments[start].sequence;
  std::optional<Damage> damage;
  if (expected > after_sequence + 1) {
    damage =
        Damage{start, 0,
               absl::StrCat("batches ", after_sequence + 1, " to ", expected - 1, " are missing: the log ",
                            after_sequence == 0 ? std::string("") : absl::StrCat("after batch ", after_sequence, " "),
                            "starts at batch ", expected)};
    expected = after_sequence + 1;
  }
  DecodedBatch batch;
  for (size_t i = start; i < segments.size() && !damage; ++i) {
    const NumberedFile& seg = segments[i];
    if (seg.sequence != expected) {
      damage = Damage{i, 0,
                      absl::StrCat("batches ", expected, " to ", seg.sequence - 1,
                                   " are missing: the segment before ends at batch ", expected - 1,
                                   " and this one starts at batch ", seg.sequence)};
      break;
    }
    auto mapped = MappedFile::open(seg.path);
    if (!mapped.ok()) return mapped.status();
    const std::string_view bytes = mapped->bytes();
    uint64_t off = 0;
    while (off < bytes.size()) {
      const RecordAt r = read_record(bytes, off);
      if (r.check != RecordCheck::kOk) {
        if (i + 1 == segments.size() && !next_intact_record(bytes, off)) {
          spdlog::warn(
              "log: cut the torn last record off {} at offset {} ({} bytes): a write the crash cut short, "
              "never acknowledged",
              seg.path, off, bytes.size() - off);
          out.torn_bytes_cut = bytes.size() - off;
          if (absl::Status s = cut_torn_tail(dir, seg.path, off); !s.ok()) return s;
        } else {
          damage = Damage{i, off, describe_bad_record(r.check, bytes, off)};
        }
        break;
      }
      if (absl::Status s = decode_write_batch(r.payload, &batch); !s.ok()) {
        damage = Damage{i, off, std::string(s.message())};
        break;
      }
      if (batch.sequence != expected) {
        damage = Damage{i, off, absl::StrCat("batch ", batch.sequence, " where batch ", expected, " was expected")};
        break;
      }
      if (batch.sequence > after_sequence) {
        if (absl::Status s = batch.replay(sink); !s.ok()) return s;
        ++out.batches;
        out.puts += batch.puts;
        out.deletes += batch.deletes;
      }
      ++expected;
      out.bytes_read += r.end - off;
      off = r.end;
    }
    if (damage) break;
    if (off > 0) {
      out.segments.push_back(seg);
    } else if (out.torn_bytes_cut == 0) {  // empty: created by a crash before its first write
      if (absl::Status s = cut_torn_tail(dir, seg.path, 0); !s.ok()) return s;
    }
  }
  out.last_sequence = std::max(after_sequence, expected - 1);
  if (!damage) return out;

  const std::string& path = segments[damage->segment].path;
  if (mode == RecoverMode::kStrict) {
    return absl::DataLossError(absl::StrCat(
        path, " at offset ", damage->offset, ": ", damage->what, ". Batches from ", expected,
        " on are not replayed, and the server will not start without them; --recover=skip-corrupt starts without "
        "them (setting the damaged files aside as *.corrupt)"));
  }
  if (absl::Status s = set_aside(dir, segments, *damage, &out); !s.ok()) return s;
  for (const std::string& line : out.dropped) spdlog::warn("log: --recover=skip-corrupt dropped {}", line);
  return out;
}

}  // namespace gphkv::server::durability

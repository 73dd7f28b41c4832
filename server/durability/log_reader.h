// Recovery's half of the log: replays the batches after a snapshot from the
// segment files, in order, checking every record's CRC and that sequence
// numbers run on without a gap, within and across segments.
//
// A bad record (cut short, or a CRC that does not match) is a torn tail when
// it is in the newest segment and no intact record follows it: a write a
// crash cut short. It is cut off (the file truncated and synced, so later
// appends follow clean) with a warning. Anything else -- a bad record with
// intact ones after it, a bad record in an older segment, a sequence number
// out of turn, a missing segment -- is damage: under RecoverMode::kStrict
// replay fails with DATA_LOSS naming the file and offset; under
// kSkipCorrupt it stops there, sets the rest aside (the damaged segment's
// tail and every later segment, as *.corrupt files), says what it dropped
// and returns what it replayed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/durability/durability_options.h"
#include "server/durability/file_names.h"
#include "server/durability/pairs.h"

namespace gphkv::server::durability {

struct LogReplay {
  // The last batch the log holds, or after_sequence when it holds none after it.
  uint64_t last_sequence = 0;
  // Replayed into the sink (batches after after_sequence).
  uint64_t batches = 0;
  uint64_t puts = 0;
  uint64_t deletes = 0;
  uint64_t bytes_read = 0;
  uint64_t torn_bytes_cut = 0;
  // kSkipCorrupt: what was set aside, a line each.
  std::vector<std::string> dropped;
  // The segments that remain (ascending), for the log writer.
  std::vector<NumberedFile> segments;
};

// Replays the batches of `segments` (the directory's, ascending) with
// sequence > after_sequence into `sink`. A sink error ends replay with it.
absl::StatusOr<LogReplay> replay_log(const std::string& dir, const std::vector<NumberedFile>& segments,
                                     uint64_t after_sequence, RecoverMode mode, RecoverySink& sink);

}  // namespace gphkv::server::durability

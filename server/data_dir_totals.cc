#include "server/data_dir_totals.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace gphkv::server {

DataDirStatus total_data_dir_status(const std::string& root, absl::Span<const DataDirStatus> parts,
                                    absl::Span<const std::string> names) {
  if (parts.size() == 1) return parts[0];
  DataDirStatus total;
  durability::DataDirState& t = total.state;
  t.dir = root;
  if (!parts.empty()) t.fsync = parts[0].state.fsync;
  for (size_t k = 0; k < parts.size(); ++k) {
    const DataDirStatus& p = parts[k];
    const durability::DataDirState& s = p.state;
    const std::string& name = names[k];
    t.log.last_sequence += s.log.last_sequence;
    t.log.durable_sequence += s.log.durable_sequence;
    t.log.segments += s.log.segments;
    t.log.log_bytes += s.log.log_bytes;
    t.log.appended_bytes += s.log.appended_bytes;
    t.log.fsyncs += s.log.fsyncs;
    t.log.syncs_fell_behind += s.log.syncs_fell_behind;
    t.log.writebacks += s.log.writebacks;
    t.snapshot_sequence += s.snapshot_sequence;
    t.snapshot_bytes += s.snapshot_bytes;
    // -1 (none) is older than any snapshot: once one partition has none, so has the server.
    if (k == 0) {
      t.snapshot_age_seconds = s.snapshot_age_seconds;
    } else if (t.snapshot_age_seconds >= 0) {
      t.snapshot_age_seconds =
          s.snapshot_age_seconds < 0 ? -1 : std::max(t.snapshot_age_seconds, s.snapshot_age_seconds);
    }
    t.last_snapshot_seconds = std::max(t.last_snapshot_seconds, s.last_snapshot_seconds);
    t.snapshots_taken += s.snapshots_taken;
    t.snapshot_running = t.snapshot_running || s.snapshot_running;
    if (t.last_snapshot_error.empty() && !s.last_snapshot_error.empty()) {
      t.last_snapshot_error = absl::StrCat(name, ": ", s.last_snapshot_error);
    }
    durability::RecoveryReport& r = t.recovery;
    r.seconds = std::max(r.seconds, s.recovery.seconds);
    r.snapshot_pairs += s.recovery.snapshot_pairs;
    r.log_batches += s.recovery.log_batches;
    r.log_puts += s.recovery.log_puts;
    r.log_deletes += s.recovery.log_deletes;
    r.bytes_read += s.recovery.bytes_read;
    r.torn_bytes_cut += s.recovery.torn_bytes_cut;
    if (!s.recovery.snapshot_path.empty()) {
      absl::StrAppend(&r.snapshot_path, r.snapshot_path.empty() ? "" : ", ", s.recovery.snapshot_path);
    }
    for (const std::string& w : s.recovery.warnings) r.warnings.push_back(absl::StrCat(name, ": ", w));
    for (const std::string& d : s.recovery.dropped) r.dropped.push_back(absl::StrCat(name, ": ", d));
    if (total.log_error.empty() && !p.log_error.empty()) total.log_error = absl::StrCat(name, ": ", p.log_error);
    total.recovered_keys += p.recovered_keys;
  }
  return total;
}

}  // namespace gphkv::server

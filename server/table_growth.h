// How the store's table grows and shrinks (docs/service.md, "Growth"): the
// ElasticTable's rules from the store's options, the rebuilds small enough to
// wait for at once, each rebuild's log line, and an operator's shrink.
#pragma once

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "gphkv/engine/elastic_table.h"
#include "gphkv/v1/gphkv.pb.h"
#include "server/store_options.h"

namespace gphkv::server {

// The table of a new store: sized for options.initial_capacity at
// max_load_factor, with all of --memory for now (the value heap is empty).
// INVALID_ARGUMENT when the options are out of range or that table alone
// would not fit under --memory.
absl::StatusOr<std::unique_ptr<engine::ElasticTable>> make_growing_table(const StoreOptions& options);

// A rebuild of a table this small is waited for at the end of the put run
// that started it: the bulk build takes well under a millisecond on the CPU,
// less than serving from the overlay, and growth of a small store stays
// deterministic. Larger rebuilds run in the background.
inline constexpr uint64_t kForegroundRebuildKeys = 16384;
inline bool rebuild_is_small(const engine::ElasticTable& table) {
  return table.rebuilding() && table.size() < kForegroundRebuildKeys;
}

// Logs a rebuild that was swapped in: cause, sizes, overlay writes, time.
void log_rebuild(const engine::RebuildEvent& e);

// An operator's shrink request: starts a background rebuild into a table
// sized for the keys stored now, unless the table already is. Answers with
// the keys and the tables' bytes; FAILED_PRECONDITION while another rebuild
// runs, since waiting for it would stall every call behind.
absl::StatusOr<v1::ShrinkResponse> start_shrink(engine::ElasticTable& table);

}  // namespace gphkv::server

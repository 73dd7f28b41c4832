#include "server/table_growth.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace gphkv::server {

absl::StatusOr<std::unique_ptr<engine::ElasticTable>> make_growing_table(const StoreOptions& options) {
  if (!(options.max_load_factor > 0.0 && options.max_load_factor <= 0.95)) {
    return absl::InvalidArgumentError("max_load_factor must be in (0, 0.95]");
  }
  engine::TableOptions topts = options.table;
  topts.num_buckets = engine::buckets_for_capacity(std::max<uint64_t>(options.initial_capacity, 1),
                                                   options.max_load_factor, topts.slots_per_bucket);
  auto probe = engine::make_geometry(topts);
  if (!probe.ok()) return probe.status();
  const uint64_t table_bytes = probe->num_slots() * 2 * sizeof(uint64_t) + probe->num_cells;
  if (table_bytes > options.memory_limit_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("--initial_capacity=", options.initial_capacity,
                                                   " needs a table of ", table_bytes,
                                                   " bytes, more than --memory=", options.memory_limit_bytes));
  }
  engine::ElasticOptions eo;
  eo.backend = options.backend;
  eo.device = options.device;
  eo.shape = topts;
  eo.max_load_factor = options.max_load_factor;
  // Below max_load_factor whatever it is (0.5 at the default 0.80).
  eo.rebuild_load_factor = std::min(options.rebuild_load_factor, 0.625 * options.max_load_factor);
  // Never rebuild for a burst: on the CPU the insert path beat a rebuild for
  // every burst size measured (bench/results).
  eo.rebuild_burst_fraction = 0;
  // The value heap is empty: the table may have all of --memory for now.
  eo.max_table_bytes = options.memory_limit_bytes;
  return engine::ElasticTable::create(eo);
}

void log_rebuild(const engine::RebuildEvent& e) {
  spdlog::info(
      "table rebuilt ({}): {} -> {} buckets, {} keys, {} writes served by the overlay during it, {:.3f} s "
      "(build {:.3f} s)",
      e.cause, e.old_buckets, e.new_buckets, e.keys, e.writes_during, e.seconds, e.build.seconds);
}

absl::StatusOr<v1::ShrinkResponse> start_shrink(engine::ElasticTable& table) {
  if (table.rebuilding()) {
    return absl::FailedPreconditionError(
        "a table rebuild is already running; ask again once it is done (gphkv_rebuilds_total counts it)");
  }
  v1::ShrinkResponse answer;
  answer.set_keys(table.size());
  answer.set_table_bytes(table.table_bytes());
  if (absl::Status s = table.shrink_to_fit(); !s.ok()) return s;
  if (table.rebuilding()) {
    answer.set_started(true);
    // table_bytes() counts both tables while the new one is built.
    answer.set_new_table_bytes(table.table_bytes() - answer.table_bytes());
    spdlog::info("shrink requested: rebuilding {} keys from a {}-byte table into a {}-byte one", answer.keys(),
                 answer.table_bytes(), answer.new_table_bytes());
  } else {
    spdlog::info("shrink requested: the {}-byte table already fits its {} keys", answer.table_bytes(), answer.keys());
  }
  return answer;
}

}  // namespace gphkv::server

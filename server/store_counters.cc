#include "server/store_counters.h"

namespace gphkv::server {

void StoreCounters::count_rebuild(const engine::RebuildEvent& e) {
  ++rebuilds;
  ++rebuilds_by_cause[e.cause];
  rebuild_keys += e.keys;
  rebuild_writes_during += e.writes_during;
  rebuild_seconds += e.seconds;
}

void RelocationTally::update(const engine::Table& serving, StoreCounters* counters) {
  const uint64_t moves = serving.relocations();
  if (&serving != table_) {
    // A rebuild swapped a new table in: its count starts at what it did so far.
    table_ = &serving;
    seen_ = 0;
  }
  if (moves > seen_) counters->relocations += moves - seen_;
  seen_ = moves;
}

}  // namespace gphkv::server

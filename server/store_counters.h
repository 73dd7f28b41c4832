// What the store counts for Stats and metrics: rebuilds by cause, the insert
// path's relocations, and which path each get run took.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "gphkv/engine/elastic_table.h"
#include "gphkv/engine/table.h"

namespace gphkv::server {

struct StoreCounters {
  uint64_t rebuilds = 0;  // all causes
  // By engine::RebuildEvent::cause: load_factor, no_room, burst, shrink.
  std::map<std::string, uint64_t> rebuilds_by_cause;
  uint64_t rebuild_keys = 0;           // keys in the new tables, summed
  uint64_t rebuild_writes_during = 0;  // writes served by the overlay while rebuilds ran
  double rebuild_seconds = 0;          // snapshot to swap, summed
  uint64_t relocations = 0;            // Extended Moves by the insert path (CUDA tables count them)
  uint64_t sync_get_runs = 0;          // get runs that took the synchronous path
  uint64_t pipelined_get_runs = 0;     // get runs that took the CUDA pipeline
  uint64_t late_get_downloads = 0;     // pipelined runs whose values outgrew the download sent with them
  uint64_t items_swept = 0;            // expired or flushed items the sweep deleted (Store::sweep_step)
  uint64_t evictions = 0;              // items evicted at the --memory cap (StoreOptions::evict)

  // A rebuild was swapped in.
  void count_rebuild(const engine::RebuildEvent& e);
};

// Turns the running relocation count of whichever table serves now
// (engine::Table::relocations) into StoreCounters::relocations, which only
// grows: a rebuild swaps in a new table whose own count starts again.
class RelocationTally {
 public:
  void update(const engine::Table& serving, StoreCounters* counters);

 private:
  const engine::Table* table_ = nullptr;  // the table seen_ is of
  uint64_t seen_ = 0;
};

}  // namespace gphkv::server

// Cache-aside (--cache_aside): a get that misses is followed by a put of
// what it missed, as TaoBench's clients fill their cache from the database,
// so the hit ratio a run reports is the cache's own.
//
// What a fill writes: each missed key once, with its load-phase value (the
// key's size from Workload::ValueSizeOf, its pool bytes, version 0): the row
// as the load phase stored it. The load generator keeps no database of later
// writes, and a fill is a write by a thread that is usually not the key's
// writer (Workload::WriterOf), so it must not pose as one of the writer's
// versions. Version 0 is written by nobody else in the run phase, so the read
// check (read_check.h) can tell a fill's value from a lost write: a value
// stamped 0 is accepted as a fill's, every other stamp is judged as always.
// A failed get fills nothing (nothing says which of its keys missed).
#pragma once

#include <cstdint>
#include <unordered_set>

#include "loadgen/target.h"
#include "loadgen/workload.h"

namespace gphkv::loadgen {

// The version a fill stamps into its values: the load phase's.
constexpr uint64_t kFillVersion = 0;

// Builds one driver thread's fills (it keeps scratch sets: one per thread).
class CacheAsideFill {
 public:
  explicit CacheAsideFill(const Workload* workload) : workload_(workload) {}
  // The keys of `get` that `answer` did not find, each once, in the get's
  // order, as a put of their load-phase values into *fill. False when the get
  // failed or found every key. `answer` must list
  // the values found (TargetOptions::inspect_reads).
  bool Make(const Op& get, const OpResult& answer, Op* fill);

 private:
  const Workload* workload_;
  std::unordered_set<uint64_t> found_;  // scratch
};

}  // namespace gphkv::loadgen

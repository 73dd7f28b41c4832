// Options of one GPH table and the geometry derived from them.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "gphkv/engine/gph_hash.h"

namespace gphkv::engine {

// Per-table parameters (GPH §7.1 defaults unless a measurement says better;
// see docs/gph.md for the measurements behind each default).
struct TableOptions {
  // N, the number of buckets. Use buckets_for_capacity() to size from a key count.
  uint64_t num_buckets = 1 << 16;
  // M: slots per bucket. On the GPU a bucket is M (key, value) pairs in one
  // run of 16*M bytes, i.e. M/8 lines of 128 bytes; M = 16 makes it two lines,
  // and a lookup, hit or miss, reads the key's home line, the other only after
  // a spill (docs/gph.md, "Two lines a bucket").
  uint32_t slots_per_bucket = 16;
  // R: virtual buckets per cell, a power of two in [2, 64].
  uint32_t virtual_buckets = 8;
  // L / N: cells in the Cell Index per bucket (a cell is one byte). More cells
  // mean fewer keys per cell, so Extended Move finds a fit more often: the
  // reachable load factor with M=16, R=8 goes 0.71 (1) -> 0.79 (2) -> 0.86 (4)
  // -> 0.87 (8), measured on the GPU (docs/gph.md). Four cells cost one byte
  // per 4 slots: at 10^8 keys the index (36 MB on the GPU, with its cell
  // flags) mostly stays in the H100's L2, so a lookup's one DRAM access is its
  // line.
  double cells_per_bucket = 4.0;
  // Seed of the hash families; the eleven component seeds are derived from it.
  uint32_t seed = 0x47504831u;  // "GPH1"
  // CPU backend: worker threads for bulk operations (0 = all hardware threads).
  unsigned cpu_threads = 0;
};

// The number of buckets that holds `keys` keys at `load_factor` with M slots.
uint64_t buckets_for_capacity(uint64_t keys, double load_factor, uint32_t slots_per_bucket);

// Whether two geometries address keys identically (same L, N, M, R and seeds):
// a table image of one can be loaded into a table of the other.
bool same_addressing(const gph::Geometry& a, const gph::Geometry& b);

// Checks the options and derives the table's geometry; INVALID_ARGUMENT with the
// offending field and its limits otherwise.
absl::StatusOr<gph::Geometry> make_geometry(const TableOptions& options);

}  // namespace gphkv::engine

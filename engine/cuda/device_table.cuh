// The table as kernels see it: plain pointers and the geometry, passed by value.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "gphkv/engine/gph_hash.h"

namespace gphkv::engine::cuda {

// The slot of the one key equal to kEmptyKey, which cannot live in a bucket
// (kEmptyKey marks vacant slots there).
struct OutOfBandSlot {
  uint32_t present;
  uint32_t pad;
  uint64_t value;
};

// What Refinement did, counted on the device since the table was made (the
// service exports these as insert_relocations_total and friends).
struct RefinementStats {
  unsigned long long transactions;  // overflowed keys handed to Refinement
  unsigned long long attempts;      // tries, restarts after a wait-die death or a stale plan included
  unsigned long long deaths;        // wait-die: met an older transaction's lock, released, restarted
  unsigned long long direct;        // placed by Direct Insert after another move made room
  unsigned long long moves;         // Extended Moves applied (relocations of one cell)
  unsigned long long mappings;      // bucket sets the planner's occupancy counts loaded
};

struct DeviceTable {
  gph::Geometry geo;
  // The Cell Index (Φ<<log2R | Δ a cell) and the cells' spill flags, in
  // groups of 32 bytes (below, "Cell groups"): cell c's byte at
  // cells[cell_byte_at(c)], never at cells[c].
  uint8_t* cells;
  // N*M slots, bucket-major, each a (key, value) pair of words: the key
  // (kEmptyKey when vacant) at slots[2s], its value at slots[2s + 1]. A
  // bucket's keys and values share its 16*M bytes, so a hit reads nothing
  // past the line it finds its key in (docs/gph.md, "Two lines a bucket").
  uint64_t* slots;
  // kSpillBits bits per line (below): one is set when a key whose home is
  // that line is placed elsewhere in its bucket.
  uint32_t* spill;
  OutOfBandSlot* oob;
  unsigned long long* size;  // keys stored, counted on the device
  uint32_t* locks;           // Refinement's bucket locks, striped: lock of bucket b is b & lock_mask
  uint32_t lock_mask;
  unsigned int* fault;  // set when a kernel meets a broken invariant (a bug); checked by the host
  RefinementStats* stats;
};

// Slot s's key and value words.
GPHKV_HD uint64_t* slot_key(const DeviceTable& t, uint64_t s) { return t.slots + 2 * s; }
GPHKV_HD uint64_t* slot_value(const DeviceTable& t, uint64_t s) { return t.slots + 2 * s + 1; }
// Bucket b's M slots as 16-byte vectors: .x the key, .y the value.
GPHKV_HD const ulonglong2* bucket_pairs(const DeviceTable& t, uint64_t b) {
  return reinterpret_cast<const ulonglong2*>(t.slots) + b * t.geo.slots_per_bucket;
}

// Lines. A bucket of M pairs is M/8 lines of 8 pairs (128 bytes each) when 8
// divides M, one line otherwise. Every key has a home line, from its line
// hash. A kernel that places a key puts it in its home line while that line
// has a vacant slot, elsewhere in the bucket only when the line is full, and
// then sets one of the home line's kSpillBits spill bits, the one the key's
// line hash names (a one-hash Bloom filter of the keys that spilled). So a
// lookup reads the key's home line, and the rest of its bucket only when its
// own spill bit is set: at 16 pairs a bucket, a hit or a miss mostly costs one
// 128-byte read while the Cell Index, at 4 cells per 16 slots, stays small
// enough for L2 (docs/gph.md, "Two lines a bucket"). Spill bits are cleared
// only when the whole table is rewritten (clear, bulk build, image load): one
// that outlives the key that set it costs a lookup a second read, never a
// wrong answer.
inline constexpr uint32_t kLinePairs = 8;
// Four a line: 10% of them set after a build to load 0.8, against 26% of lines
// with one bit (and eight, 5.6%, take more of the L2 than they save;
// docs/gph.md). A power of two, at most 32.
inline constexpr uint32_t kSpillBits = 4;
GPHKV_HD uint32_t lines_per_bucket(const gph::Geometry& g) {
  return g.slots_per_bucket % kLinePairs == 0 ? g.slots_per_bucket / kLinePairs : 1;
}
// The line hash: the cell hash mixed once more, since the cell hash's high
// bits are nearly the same for the keys of one cell.
GPHKV_HD uint32_t line_hash_of(uint32_t cell_hash) { return gph::fmix32(cell_hash ^ 0x5bd1e995u); }
GPHKV_HD uint32_t line_hash(const gph::Geometry& g, uint64_t key) { return line_hash_of(gph::cell_hash(g, key)); }
// The home line of a key of line hash `lh`: its high bits, by multiply-shift
// (no division in the lookup; the spill bit reads bits 16 and 17, which the
// line does not).
GPHKV_HD uint32_t home_line_of(const gph::Geometry& g, uint32_t lh) { return gph::reduce(lh, lines_per_bucket(g)); }
GPHKV_HD uint32_t home_line(const gph::Geometry& g, uint64_t key) { return home_line_of(g, line_hash(g, key)); }
// Line `line`'s slots as a mask over its bucket's M (<= 64) slots.
GPHKV_HD unsigned long long line_mask(const gph::Geometry& g, uint32_t line) {
  if (lines_per_bucket(g) == 1) return g.slots_per_bucket == 64 ? ~0ull : (1ull << g.slots_per_bucket) - 1;
  return 0xffull << (kLinePairs * line);
}
// Whether slot s of a bucket belongs to line `line`.
GPHKV_HD bool in_line(const gph::Geometry& g, uint32_t line, uint32_t s) { return (line_mask(g, line) >> s) & 1ull; }
// The spill bit a key of line hash `lh` sets in line `line` of `bucket`.
GPHKV_HD uint64_t spill_bit(const gph::Geometry& g, uint32_t bucket, uint32_t line, uint32_t lh) {
  return (static_cast<uint64_t>(bucket) * lines_per_bucket(g) + line) * kSpillBits + ((lh >> 16) & (kSpillBits - 1));
}
// 32-bit words of spill bits a table of this geometry needs.
GPHKV_HD uint64_t spill_words(const gph::Geometry& g) {
  return (static_cast<uint64_t>(g.num_buckets) * lines_per_bucket(g) * kSpillBits + 31) / 32;
}

// Cell groups. The GPU's Cell Index is laid out in groups of one 32-byte L2
// sector: 28 cell bytes, then a 32-bit word of those 28 cells' spill flags.
// A cell's flag is set when a key of that cell is placed outside its home line
// (with the line's spill bit, below), so a lookup that misses in its home line
// reads the spill bits only when its cell's flag, which came in the same
// sector as its cell byte, is set: 18.9% of the cells after an insert build to
// load 0.8, where every miss read them before the flags (a third dependent
// read; docs/gph.md, "Cell flags"). The index is 8/7 the size of a byte a
// cell. Images keep a byte a cell (cuda_table.cc converts).
inline constexpr uint32_t kGroupCells = 28;
inline constexpr uint32_t kGroupBytes = 32;
GPHKV_HD uint64_t cell_index_bytes(uint32_t num_cells) {
  return (static_cast<uint64_t>(num_cells) + kGroupCells - 1) / kGroupCells * kGroupBytes;
}
GPHKV_HD uint64_t cell_byte_at(uint32_t c) {
  const uint32_t group = c / kGroupCells;
  return static_cast<uint64_t>(group) * kGroupBytes + (c - group * kGroupCells);
}
// The byte offset of cell c's flag word (4-aligned), and c's bit in it.
GPHKV_HD uint64_t cell_flags_at(uint32_t c) {
  return static_cast<uint64_t>(c / kGroupCells) * kGroupBytes + kGroupCells;
}
GPHKV_HD uint32_t cell_flag_bit(uint32_t c) { return 1u << (c % kGroupCells); }
// The cell bytes of an index, by cell id, for kernels that walk cells.
struct CellBytes {
  uint8_t* index;
  GPHKV_HD uint8_t& operator[](uint32_t c) const { return index[cell_byte_at(c)]; }
};

// Per-key result codes of the insert pipeline, by sorted position.
enum InsertStatus : uint8_t {
  kStatusInserted = 0,   // = UpsertOutcome::kInserted
  kStatusAssigned = 1,   // = UpsertOutcome::kAssigned
  kStatusNoRoom = 2,     // = UpsertOutcome::kNoRoom
  kStatusDuplicate = 3,  // a later occurrence of a key; its outcome follows the first one's
  kStatusOverflow = 4,   // bucket full in Saturation Fill; Refinement decides
};

#if defined(__CUDACC__)
// Loads and stores that bypass L1 (not coherent across SMs): Refinement reads
// what other blocks wrote under the same locks.
__device__ __forceinline__ uint64_t load_cg(const uint64_t* p) {
  return __ldcg(reinterpret_cast<const unsigned long long*>(p));
}
__device__ __forceinline__ void store_cg(uint64_t* p, uint64_t v) {
  __stcg(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}
__device__ __forceinline__ uint8_t load_cell_cg(const uint8_t* p) {
  return *reinterpret_cast<const volatile uint8_t*>(p);
}

__device__ __forceinline__ uint32_t* cell_flags(const DeviceTable& t, uint32_t cell) {
  return reinterpret_cast<uint32_t*>(t.cells + cell_flags_at(cell));
}

// Notes that a key of cell `cell` and line hash `lh`, whose home is line
// `line` of `bucket`, was placed outside it: the line's spill bit and the
// cell's flag.
__device__ __forceinline__ void mark_spill(const DeviceTable& t, uint32_t bucket, uint32_t line, uint32_t lh,
                                           uint32_t cell) {
  const uint64_t bit = spill_bit(t.geo, bucket, line, lh);
  atomicOr(t.spill + (bit >> 5), 1u << (bit & 31));
  atomicOr(cell_flags(t, cell), cell_flag_bit(cell));
}
// Whether such a key may have been placed outside its home line. For kernels
// that do not set spill bits (read through the read-only cache).
__device__ __forceinline__ bool spill_set(const DeviceTable& t, uint32_t bucket, uint32_t line, uint32_t lh) {
  const uint64_t bit = spill_bit(t.geo, bucket, line, lh);
  return (__ldg(t.spill + (bit >> 5)) >> (bit & 31)) & 1u;
}

// Adds the number of lanes with `pred` to *counter with one atomic per warp.
// Every lane of the warp must call it.
__device__ __forceinline__ void warp_count_add(unsigned long long* counter, bool pred, int sign) {
  const unsigned mask = __ballot_sync(0xffffffffu, pred);
  if ((threadIdx.x & 31) == 0 && mask != 0) {
    const unsigned long long n = static_cast<unsigned long long>(__popc(mask));
    atomicAdd(counter, sign > 0 ? n : static_cast<unsigned long long>(-static_cast<long long>(n)));
  }
}
#endif

}  // namespace gphkv::engine::cuda

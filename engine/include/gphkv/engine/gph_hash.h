// GPH hashing and bucket addressing, shared by the CPU and CUDA backends.
//
// Both backends include this one header so that every key lands in the same
// cell and the same bucket on either of them (GPH §4.2, §7.1). Everything here
// is a pure function of the key, the cell byte and the table geometry.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define GPHKV_HD __host__ __device__ __forceinline__
#else
#define GPHKV_HD inline
#endif

namespace gphkv::engine::gph {

// The empty-slot marker inside buckets. The key with this value is still a
// valid key: tables keep it out of band (one extra slot beside the buckets).
inline constexpr uint64_t kEmptyKey = ~uint64_t{0};

// The largest R a one-byte cell can hold while leaving at least one bit of
// Mapping Φ: Δ takes log2(R) bits, Φ the rest.
inline constexpr uint32_t kMaxVirtualBuckets = 64;

// MurmurHash3's 32-bit finalizer (GPH §7.1 builds every hash from it).
GPHKV_HD uint32_t fmix32(uint32_t h) {
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

// H_{i,n}(x): one seeded fmix32 component.
GPHKV_HD uint32_t seeded(uint32_t x, uint32_t seed) { return fmix32(x ^ seed); }

// Maps a 32-bit hash onto [0, n) by multiply-shift: uniform for any n, no division.
GPHKV_HD uint32_t reduce(uint32_t h, uint32_t n) { return static_cast<uint32_t>((static_cast<uint64_t>(h) * n) >> 32); }

// The seeds of the three hash families. The paper defines a multi-argument
// hash as H_i(k1..kn) = H_{i,0}(H_{i,1}(k1) + ... + H_{i,n}(kn)), each H_{i,n} an
// fmix32 with its own seed. A 64-bit key enters as two 32-bit arguments
// (low word, high word), so H_c has three components, H_v and H_b four.
struct HashSeeds {
  uint32_t cell[3];     // H_c(k_lo, k_hi)
  uint32_t vbucket[4];  // H_v(k_lo, k_hi, Φ)
  uint32_t bucket[4];   // H_b(i, r, Φ)
};

// Derives the eleven distinct component seeds from one table seed.
inline HashSeeds derive_seeds(uint32_t table_seed) {
  HashSeeds s{};
  uint32_t* all[] = {&s.cell[0],    &s.cell[1],   &s.cell[2],   &s.vbucket[0], &s.vbucket[1], &s.vbucket[2],
                     &s.vbucket[3], &s.bucket[0], &s.bucket[1], &s.bucket[2],  &s.bucket[3]};
  uint32_t x = table_seed;
  for (uint32_t i = 0; i < 11; ++i) {
    // A Weyl step before mixing keeps the seeds distinct even for seed 0.
    x += 0x9e3779b9u;
    *all[i] = fmix32(x);
  }
  return s;
}

// The shape of one table: plain data, passed by value into kernels.
struct Geometry {
  uint32_t num_cells = 0;         // L: one-byte cells in the Cell Index
  uint32_t num_buckets = 0;       // N: buckets of M slots
  uint32_t slots_per_bucket = 0;  // M
  uint32_t virtual_buckets = 0;   // R: a power of two, 2..kMaxVirtualBuckets
  uint32_t delta_bits = 0;        // log2(R): the low bits of a cell hold Δ
  HashSeeds seeds{};

  GPHKV_HD uint32_t num_mappings() const { return 1u << (8u - delta_bits); }
  GPHKV_HD uint64_t num_slots() const { return static_cast<uint64_t>(num_buckets) * slots_per_bucket; }
};

// One Cell Index entry: Mapping Φ in the high bits, Offset Δ in the low log2(R) bits.
GPHKV_HD uint32_t cell_mapping(const Geometry& g, uint8_t cell) { return cell >> g.delta_bits; }
GPHKV_HD uint32_t cell_offset(const Geometry& g, uint8_t cell) { return cell & (g.virtual_buckets - 1u); }
GPHKV_HD uint8_t make_cell(const Geometry& g, uint32_t mapping, uint32_t offset) {
  return static_cast<uint8_t>((mapping << g.delta_bits) | offset);
}

GPHKV_HD uint32_t key_lo(uint64_t k) { return static_cast<uint32_t>(k); }
GPHKV_HD uint32_t key_hi(uint64_t k) { return static_cast<uint32_t>(k >> 32); }

// The 32-bit hash behind H_c: reduce() takes the cell from it, and the CUDA
// backend the key's home line inside its bucket from its low bits.
GPHKV_HD uint32_t cell_hash(const Geometry& g, uint64_t key) {
  const HashSeeds& s = g.seeds;
  return seeded(seeded(key_lo(key), s.cell[1]) + seeded(key_hi(key), s.cell[2]), s.cell[0]);
}

// i = H_c(k): the key's cell.
GPHKV_HD uint32_t cell_of(const Geometry& g, uint64_t key) { return reduce(cell_hash(g, key), g.num_cells); }

// j = H_v(k, Φ): the key's virtual bucket within its cell, in [0, R).
GPHKV_HD uint32_t virtual_bucket_of(const Geometry& g, uint64_t key, uint32_t mapping) {
  const HashSeeds& s = g.seeds;
  uint32_t h =
      seeded(seeded(key_lo(key), s.vbucket[1]) + seeded(key_hi(key), s.vbucket[2]) + seeded(mapping, s.vbucket[3]),
             s.vbucket[0]);
  return h & (g.virtual_buckets - 1u);
}

// H_b(i, r, Φ): the real bucket behind rotated virtual bucket r of cell i.
// For a fixed (i, Φ) the R values of r name the cell's R buckets; Δ only
// rotates which virtual bucket goes to which of them (GPH §4.2, §6.1).
GPHKV_HD uint32_t bucket_of(const Geometry& g, uint32_t cell, uint32_t rotated, uint32_t mapping) {
  const HashSeeds& s = g.seeds;
  uint32_t h =
      seeded(seeded(cell, s.bucket[1]) + seeded(rotated, s.bucket[2]) + seeded(mapping, s.bucket[3]), s.bucket[0]);
  return reduce(h, g.num_buckets);
}

// V_i^j = H_b(i, (j + Δ_i) mod R, Φ_i): the only bucket key k can live in,
// given the byte of its cell. This is the whole of a lookup's addressing.
GPHKV_HD uint32_t bucket_for_key(const Geometry& g, uint64_t key, uint32_t cell, uint8_t cell_byte) {
  uint32_t mapping = cell_mapping(g, cell_byte);
  uint32_t j = virtual_bucket_of(g, key, mapping);
  uint32_t rotated = (j + cell_offset(g, cell_byte)) & (g.virtual_buckets - 1u);
  return bucket_of(g, cell, rotated, mapping);
}

}  // namespace gphkv::engine::gph

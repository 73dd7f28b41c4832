// The keys engine_bench stores, queries and writes: a bijective mix of an
// index, so that key(i) is distinct for distinct i, in three disjoint ranges
// (stored, absent, burst), and the launchers that fill device buffers with
// them (key_spaces.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "engine/bench/axes.h"
#include "gphkv/engine/gph_hash.h"
#include "gphkv/engine/table.h"

namespace gphkv::bench {

// splitmix64's finalizer: a bijection.
__host__ __device__ inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
// The i-th key of a benchmark key space. Stored keys use i in [0, N), absent
// ones i in [2^40, ...), burst keys i in [2^41, ...).
__host__ __device__ inline uint64_t bench_key(uint64_t i) { return mix64(i * 0x9e3779b97f4a7c15ull + 0x1234567ull); }
constexpr uint64_t kAbsentBase = 1ull << 40;
constexpr uint64_t kBurstBase = 1ull << 41;

// Where the gather ceiling and the baseline table send a query: the engine's
// own finalizer (MurmurHash3's fmix32).
using engine::gph::fmix32;

// queries[q]: a stored key (of n_keys) with probability c.hit_pct/100, else
// an absent one, drawn by c.distribution. Zipf ranks are scattered over the
// key space by multiplying with `scatter` mod n_keys (odd: a bijection when
// coprime).
void fill_queries(uint64_t* queries, uint64_t nq, uint64_t n_keys, FindCase c, uint64_t seed, uint64_t scatter,
                  cudaStream_t s);
// keys[i], values[i] for the stored keys first + i.
void fill_keys(uint64_t* keys, uint64_t* values, uint64_t first, uint64_t n, cudaStream_t s);
// The same as pairs.
void fill_pairs(engine::KeyValue* kv, uint64_t first, uint64_t n, cudaStream_t s);
// n puts of new keys first + i.
void fill_writes(engine::WriteOp* w, uint64_t first, uint64_t n, cudaStream_t s);
// n puts over n/2 distinct keys: the first half writes each once, the second
// half repeats them (each write a random key of the first half).
void fill_repeating_writes(engine::WriteOp* w, uint64_t first, uint64_t n, cudaStream_t s);
// The writes' keys and values, apart.
void split_writes(const engine::WriteOp* w, uint64_t n, uint64_t* keys, uint64_t* values, cudaStream_t s);

}  // namespace gphkv::bench

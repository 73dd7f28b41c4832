#include "engine/bench/key_spaces.cuh"

#include "engine/bench/context.h"

namespace gphkv::bench {
namespace {

using engine::KeyValue;
using engine::WriteOp;

// Zipf (TaoBench-like): rank r drawn with P(rank <= x) = (x/n)^(1-s),
// s = 0.877, so the hottest 20% of ranks take 0.2^0.123 = 82% of the queries.
__global__ void make_queries(uint64_t* queries, uint64_t nq, uint64_t n_keys, int hit_pct, Distribution dist,
                             uint64_t seed, uint64_t scatter) {
  const uint64_t q = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  if (q >= nq) return;
  const uint64_t r1 = mix64(q ^ seed), r2 = mix64(r1 + seed);
  const bool hit = (r1 % 100) < static_cast<uint64_t>(hit_pct);
  uint64_t index;
  if (dist == Distribution::kZipf) {
    const double u = (static_cast<double>(r2 >> 11) + 0.5) * (1.0 / 9007199254740992.0);
    constexpr double kOneMinusS = 0.123;
    uint64_t rank = static_cast<uint64_t>(pow(u, 1.0 / kOneMinusS) * static_cast<double>(n_keys));
    if (rank >= n_keys) rank = n_keys - 1;
    index = static_cast<uint64_t>((static_cast<unsigned __int128>(rank) * scatter) % n_keys);
  } else {
    index = static_cast<uint64_t>((static_cast<unsigned __int128>(r2) * n_keys) >> 64);
  }
  queries[q] = bench_key(hit ? index : kAbsentBase + index);
}

__global__ void make_keys(uint64_t* keys, uint64_t* values, uint64_t first, uint64_t n) {
  const uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  keys[i] = bench_key(first + i);
  values[i] = mix64(first + i) ^ 0x5555;
}

__global__ void make_pairs(KeyValue* kv, uint64_t first, uint64_t n) {
  const uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  if (i < n) kv[i] = KeyValue{bench_key(first + i), mix64(first + i) ^ 0x5555};
}

__global__ void make_writes(WriteOp* w, uint64_t first, uint64_t n) {
  const uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  if (i < n) w[i] = WriteOp{bench_key(first + i), mix64(first + i) ^ 0x5555, false};
}

__global__ void make_dup_writes(WriteOp* w, uint64_t first, uint64_t n) {
  const uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  const uint64_t half = n / 2 == 0 ? 1 : n / 2;
  if (i < n) w[i] = WriteOp{bench_key(first + (i < half ? i : mix64(i) % half)), mix64(i), false};
}

__global__ void split_writes_kernel(const WriteOp* w, uint64_t n, uint64_t* keys, uint64_t* values) {
  const uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  if (i < n) {
    keys[i] = w[i].key;
    values[i] = w[i].value;
  }
}

}  // namespace

void fill_queries(uint64_t* queries, uint64_t nq, uint64_t n_keys, FindCase c, uint64_t seed, uint64_t scatter,
                  cudaStream_t s) {
  make_queries<<<blocks_for(nq), 256, 0, s>>>(queries, nq, n_keys, c.hit_pct, c.distribution, seed, scatter);
  CK(cudaGetLastError());
}

void fill_keys(uint64_t* keys, uint64_t* values, uint64_t first, uint64_t n, cudaStream_t s) {
  make_keys<<<blocks_for(n), 256, 0, s>>>(keys, values, first, n);
  CK(cudaGetLastError());
}

void fill_pairs(KeyValue* kv, uint64_t first, uint64_t n, cudaStream_t s) {
  make_pairs<<<blocks_for(n), 256, 0, s>>>(kv, first, n);
  CK(cudaGetLastError());
}

void fill_writes(WriteOp* w, uint64_t first, uint64_t n, cudaStream_t s) {
  make_writes<<<blocks_for(n), 256, 0, s>>>(w, first, n);
  CK(cudaGetLastError());
}

void fill_repeating_writes(WriteOp* w, uint64_t first, uint64_t n, cudaStream_t s) {
  make_dup_writes<<<blocks_for(n), 256, 0, s>>>(w, first, n);
  CK(cudaGetLastError());
}

void split_writes(const WriteOp* w, uint64_t n, uint64_t* keys, uint64_t* values, cudaStream_t s) {
  split_writes_kernel<<<blocks_for(n), 256, 0, s>>>(w, n, keys, values);
  CK(cudaGetLastError());
}

}  // namespace gphkv::bench

// lookup_bounds: what the memory system allows a one-probe lookup of each
// table layout, measured with synthetic access patterns and no hash table, so
// the engine's figures can be read against the bound of their own layout.
//
//   lookup_bounds [--keys=1e8] [--reps=7] [--json=PATH]
//
// Every pattern reads random 128-byte buckets the way the lookup does (4
// threads, two 16-byte vectors each, all loads issued before use), from a
// table sized like GPH's at load 0.8 for --keys keys. The patterns differ in
// what else a lookup must read, and in whether that read depends on the
// bucket's contents:
//
//   ceiling          the bucket alone (the figure engine_bench divides by)
//   cell+bucket      one random byte of a Cell Index first, then the bucket it
//                    names (GPH's miss: the bucket address depends on the byte)
//   +value dependent then, for every 2nd query, an 8-byte value at the slot the
//                    bucket's contents name (GPH's hit with keys and values in
//                    separate arrays, the layout the engine has)
//
// A layout that keeps a slot's key and value in one 128-byte bucket (M = 8
// pairs) needs no value read: its bound is "cell+bucket" with the Cell Index
// of twice as many buckets. Each cell pattern is run with the Cell Index
// pinned in L2 (a persisting access-policy window) and without.
//
// Two more M = 16 layouts keep the Cell Index of today's table:
//
//   adjacent         a bucket is 256 bytes, its 16 keys then their 16 values,
//                    so a hit's dependent value read falls in the DRAM page
//                    the bucket was just read from
//   fingerprints     a 32-byte line of 16 two-byte fingerprints per bucket,
//                    read by one thread, and a separate array of key-value
//                    pairs; a hit then reads the one 16-byte pair its
//                    fingerprint names (dependent), a miss reads nothing more
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "engine/bench/cuda_check.h"
#include "gphkv/engine/gph_hash.h"

#ifndef GPHKV_GIT_COMMIT
#define GPHKV_GIT_COMMIT "unknown"
#endif

namespace {

using gphkv::engine::gph::fmix32;  // the engine's own hash, as the lookups use it

constexpr int kGroup = 4;    // threads per bucket, as the lookup's default |g|
constexpr int kVectors = 2;  // 16-byte vectors per thread: 4 x 2 x 16 = 128 bytes

// Query hash h's bucket of nb behind one random byte of a Cell Index of
// ncells: the bucket depends on the byte, as bucket_for_key does on (Φ, Δ).
__device__ __forceinline__ uint64_t bucket_behind_cell(uint32_t h, const uint8_t* cells, uint64_t ncells, uint64_t nb) {
  const uint8_t byte = __ldg(cells + (static_cast<uint64_t>(h) * ncells >> 32));
  return (static_cast<uint64_t>(fmix32(h ^ byte)) * nb) >> 32;
}

// A thread's share of a bucket line, kVectors evict-first 16-byte loads at
// p, folded into a word so that the compiler keeps every load.
__device__ __forceinline__ uint32_t read_share(const int4* p) {
  int4 v[kVectors];
#pragma unroll
  for (int i = 0; i < kVectors; ++i) v[i] = __ldcs(p + i);
  uint32_t acc = 0;
#pragma unroll
  for (int i = 0; i < kVectors; ++i) acc ^= static_cast<uint32_t>(v[i].x) ^ static_cast<uint32_t>(v[i].w);
  return acc;
}

// One pass over nq queries, one group of kGroup threads per query (one
// query per group, no grid-stride loop: the shape of the engine's lookup).
// cells == nullptr: the bucket comes straight from the query's hash.
// value_every > 0: every value_every-th query then reads values[bucket*16 + s]
// where s comes from the loaded bucket (a dependent read).
__global__ void __launch_bounds__(256)
    probe(const int4* buckets, uint64_t nb, const uint8_t* cells, uint64_t ncells, const uint64_t* values,
          int value_every, uint64_t nq, uint32_t seed, unsigned long long* sink) {
  const uint64_t q = (blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x) / kGroup;
  const int member = threadIdx.x % kGroup;
  if (q >= nq) return;
  const uint32_t h = fmix32(static_cast<uint32_t>(q) ^ seed);
  const uint64_t b = cells != nullptr ? bucket_behind_cell(h, cells, ncells, nb) : static_cast<uint64_t>(h) * nb >> 32;
  uint32_t acc = read_share(buckets + b * (128 / 16) + member * kVectors);
  if (value_every > 0 && member == 0 && q % value_every == 0) {
    const uint32_t slot = acc & 15u;  // named by the bucket's contents
    acc ^= static_cast<uint32_t>(__ldcs(reinterpret_cast<const unsigned long long*>(values) + b * 16 + slot));
  }
  if (acc == 0x2a2a2a2au) atomicAdd(sink, 1ull);
}

// The fingerprint layout: one thread per query reads the cell byte, then the
// bucket's 32-byte fingerprint line (two 16-byte loads), and for every
// hit_every-th query (0: none) the 16-byte pair at the slot the line names.
__global__ void __launch_bounds__(256)
    probe_fingerprints(const int4* fingerprints, uint64_t nb, const uint8_t* cells, uint64_t ncells, const int4* pairs,
                       int hit_every, uint64_t nq, uint32_t seed, unsigned long long* sink) {
  const uint64_t q = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  if (q >= nq) return;
  const uint64_t b = bucket_behind_cell(fmix32(static_cast<uint32_t>(q) ^ seed), cells, ncells, nb);
  const int4 f0 = __ldcs(fingerprints + 2 * b);
  const int4 f1 = __ldcs(fingerprints + 2 * b + 1);
  uint32_t acc = static_cast<uint32_t>(f0.x ^ f0.w ^ f1.y ^ f1.z);
  if (hit_every > 0 && q % hit_every == 0) {
    const uint32_t slot = acc & 15u;  // named by the line's contents
    const int4 kv = __ldcs(pairs + b * 16 + slot);
    acc ^= static_cast<uint32_t>(kv.x ^ kv.z);
  }
  if (acc == 0x2a2a2a2au) atomicAdd(sink, 1ull);
}

// The adjacent layout: a 256-byte bucket (16 keys, then 16 values) read the
// way probe reads one, then for every value_every-th query the value at the
// slot the keys name, in the bucket's second line.
__global__ void __launch_bounds__(256)
    probe_adjacent(const int4* buckets, uint64_t nb, const uint8_t* cells, uint64_t ncells, int value_every,
                   uint64_t nq, uint32_t seed, unsigned long long* sink) {
  const uint64_t q = (blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x) / kGroup;
  const int member = threadIdx.x % kGroup;
  if (q >= nq) return;
  const uint64_t b = bucket_behind_cell(fmix32(static_cast<uint32_t>(q) ^ seed), cells, ncells, nb);
  uint32_t acc = read_share(buckets + b * (256 / 16) + member * kVectors);
  if (value_every > 0 && member == 0 && q % value_every == 0) {
    const uint32_t slot = acc & 15u;
    acc ^= static_cast<uint32_t>(
        __ldcs(reinterpret_cast<const unsigned long long*>(buckets + b * (256 / 16)) + 16 + slot));
  }
  if (acc == 0x2a2a2a2au) atomicAdd(sink, 1ull);
}

struct Args {
  double keys = 1e8;
  int reps = 7;
  std::string json;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    if (!std::strncmp(argv[i], "--keys=", 7)) {
      a.keys = std::atof(argv[i] + 7);
    } else if (!std::strncmp(argv[i], "--reps=", 7)) {
      a.reps = std::atoi(argv[i] + 7);
    } else if (!std::strncmp(argv[i], "--json=", 7)) {
      a.json = argv[i] + 7;
    } else {
      std::fprintf(stderr, "usage: lookup_bounds [--keys=1e8] [--reps=7] [--json=PATH]\n");
      std::exit(2);
    }
  }
  if (a.keys < 1e6 || a.reps < 1) {
    std::fprintf(stderr, "--keys must be >= 1e6 and --reps >= 1\n");
    std::exit(2);
  }
  return a;
}

struct Row {
  std::string pattern;
  double cell_mb;
  bool pinned;
  double gops;
};

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  // GPH's default geometry at load 0.8: M = 16 keys per 128-byte bucket and
  // 4 cells per bucket; the pairs layout has M = 8 (twice the buckets).
  const uint64_t nkeys = static_cast<uint64_t>(args.keys);
  const uint64_t nb16 = static_cast<uint64_t>(args.keys / (0.8 * 16));
  const uint64_t nb8 = 2 * nb16;
  const uint64_t nq = nkeys;

  int4* buckets;
  int4* fingerprints;
  uint64_t* values;
  uint8_t* cells;
  unsigned long long* sink;
  // Big enough for every layout: nb8 128-byte buckets = nb16 256-byte ones =
  // nb16 * 16 pairs of 16 bytes.
  const uint64_t bucket_bytes = nb8 * 128;
  const uint64_t cell_bytes = nb8 * 8;  // up to 8 cells per M = 8 bucket
  CK(cudaMalloc(&buckets, bucket_bytes));
  CK(cudaMalloc(&fingerprints, nb16 * 32));
  CK(cudaMalloc(&values, nb16 * 128));
  CK(cudaMalloc(&cells, cell_bytes));
  CK(cudaMalloc(&sink, 8));
  CK(cudaMemsetAsync(buckets, 0x5b, bucket_bytes, s));
  CK(cudaMemsetAsync(fingerprints, 0x6d, nb16 * 32, s));
  CK(cudaMemsetAsync(values, 0x17, nb16 * 128, s));
  CK(cudaMemsetAsync(cells, 0x3c, cell_bytes, s));

  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  uint32_t seed = static_cast<uint32_t>(std::time(nullptr));
  // Times `launch` (one pass over the nq queries with `threads_per_query`
  // threads each) and returns G queries/s, the median of --reps after a
  // warm-up; `pinned` sets a persisting L2 window over the Cell Index.
  enum class Kernel { kProbe, kFingerprints, kAdjacent };
  auto run = [&](Kernel kernel, uint64_t nb, const uint8_t* c, uint64_t ncells, int every, bool pinned) {
    const uint64_t threads_per_query = kernel == Kernel::kFingerprints ? 1 : kGroup;
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(static_cast<unsigned>((nq * threads_per_query + 255) / 256));
    config.blockDim = dim3(256);
    config.stream = s;
    cudaLaunchAttribute attr[1];
    if (pinned && c != nullptr) {
      const size_t window = std::min<size_t>(ncells, prop.accessPolicyMaxWindowSize);
      CK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, std::min<size_t>(window, prop.persistingL2CacheMaxSize)));
      attr[0].id = cudaLaunchAttributeAccessPolicyWindow;
      attr[0].val.accessPolicyWindow.base_ptr = const_cast<uint8_t*>(c);
      attr[0].val.accessPolicyWindow.num_bytes = window;
      attr[0].val.accessPolicyWindow.hitRatio =
          std::min(1.0f, static_cast<float>(prop.persistingL2CacheMaxSize) / static_cast<float>(window));
      attr[0].val.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
      attr[0].val.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
      config.attrs = attr;
      config.numAttrs = 1;
    }
    std::vector<float> ms;
    for (int r = 0; r <= args.reps; ++r) {  // run 0 is the warm-up
      CK(cudaEventRecord(e0, s));
      switch (kernel) {
        case Kernel::kProbe:
          CK(cudaLaunchKernelEx(&config, probe, static_cast<const int4*>(buckets), nb, c, ncells,
                                static_cast<const uint64_t*>(values), every, nq, seed++, sink));
          break;
        case Kernel::kFingerprints:
          CK(cudaLaunchKernelEx(&config, probe_fingerprints, static_cast<const int4*>(fingerprints), nb, c, ncells,
                                static_cast<const int4*>(buckets), every, nq, seed++, sink));
          break;
        case Kernel::kAdjacent:
          CK(cudaLaunchKernelEx(&config, probe_adjacent, static_cast<const int4*>(buckets), nb, c, ncells, every, nq,
                                seed++, sink));
          break;
      }
      CK(cudaGetLastError());
      CK(cudaEventRecord(e1, s));
      CK(cudaEventSynchronize(e1));
      float t;
      CK(cudaEventElapsedTime(&t, e0, e1));
      if (r > 0) ms.push_back(t);
    }
    if (pinned) {
      CK(cudaCtxResetPersistingL2Cache());
      CK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0));
    }
    std::sort(ms.begin(), ms.end());
    return static_cast<double>(nq) / (ms[ms.size() / 2] * 1e-3) / 1e9;
  };

  std::printf("lookup_bounds on %s (%d SMs, %d MB L2, persisting max %zu MB), %llu queries, median of %d\n", prop.name,
              prop.multiProcessorCount, prop.l2CacheSize >> 20, prop.persistingL2CacheMaxSize >> 20,
              static_cast<unsigned long long>(nq), args.reps);
  std::vector<Row> rows;
  const double ceiling = run(Kernel::kProbe, nb16, nullptr, 0, 0, false);
  rows.push_back({"ceiling (bucket only)", 0, false, ceiling});
  struct Shape {
    const char* layout;
    uint64_t nb;
    uint64_t ncells;
  };
  const Shape shapes[] = {
      {"keys|values M=16, 4 cells/bucket", nb16, nb16 * 4},
      {"pairs M=8, 4 cells/bucket", nb8, nb8 * 4},
      {"pairs M=8, 2 cells/bucket", nb8, nb8 * 2},
      {"pairs M=8, 8 cells/bucket", nb8, nb8 * 8},
  };
  for (const Shape& sh : shapes) {
    for (bool pinned : {false, true}) {
      rows.push_back({std::string("cell+bucket, ") + sh.layout, sh.ncells / 1e6, pinned,
                      run(Kernel::kProbe, sh.nb, cells, sh.ncells, 0, pinned)});
    }
  }
  for (bool pinned : {false, true}) {
    rows.push_back({"cell+bucket+value dependent (every 2nd), keys|values M=16, 4 cells/bucket", nb16 * 4 / 1e6, pinned,
                    run(Kernel::kProbe, nb16, cells, nb16 * 4, 2, pinned)});
  }
  // The two M = 16 layouts that keep today's Cell Index, at 0, 50 and 100%
  // hits (every = 0, 2, 1).
  const struct {
    const char* name;
    int every;
  } hit_rates[] = {{"0% hits", 0}, {"50% hits", 2}, {"100% hits", 1}};
  for (const auto& hr : hit_rates) {
    rows.push_back({std::string("adjacent keys then values, 256 B bucket, M=16, 4 cells/bucket, ") + hr.name,
                    nb16 * 4 / 1e6, false, run(Kernel::kAdjacent, nb16, cells, nb16 * 4, hr.every, false)});
  }
  for (const auto& hr : hit_rates) {
    rows.push_back({std::string("fingerprint line + dependent 16 B pair, M=16, 4 cells/bucket, ") + hr.name,
                    nb16 * 4 / 1e6, false, run(Kernel::kFingerprints, nb16, cells, nb16 * 4, hr.every, false)});
  }
  rows.push_back({"keys|values M=16, 4 cells/bucket, 100% hits (value dependent every query)", nb16 * 4 / 1e6, false,
                  run(Kernel::kProbe, nb16, cells, nb16 * 4, 1, false)});

  std::printf("%-80s %8s %6s %8s %8s\n", "pattern", "cells MB", "pinned", "G/s", "/ceiling");
  for (const Row& r : rows) {
    std::printf("%-80s %8.1f %6s %8.2f %8.3f\n", r.pattern.c_str(), r.cell_mb, r.pinned ? "yes" : "no", r.gops,
                r.gops / ceiling);
  }

  if (!args.json.empty()) {
    FILE* f = std::fopen(args.json.c_str(), "w");
    if (f == nullptr) {
      std::perror(args.json.c_str());
      return 1;
    }
    char date[32];
    const std::time_t now = std::time(nullptr);
    std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    std::fprintf(f,
                 "{\n  \"benchmark\": \"lookup_bounds\",\n  \"device\": \"%s\",\n  \"commit\": \"%s\",\n"
                 "  \"command\": \"lookup_bounds --keys=%.0e --reps=%d\",\n  \"date\": \"%s\",\n  \"keys\": %llu,\n"
                 "  \"results\": [\n",
                 prop.name, GPHKV_GIT_COMMIT, args.keys, args.reps, date, static_cast<unsigned long long>(nkeys));
    for (size_t i = 0; i < rows.size(); ++i) {
      std::fprintf(f,
                   "    {\"pattern\": \"%s\", \"cell_index_mb\": %.1f, \"cells_pinned_in_l2\": %s, \"g_per_s\": %.3f, "
                   "\"vs_ceiling\": %.4f}%s\n",
                   rows[i].pattern.c_str(), rows[i].cell_mb, rows[i].pinned ? "true" : "false", rows[i].gops,
                   rows[i].gops / ceiling, i + 1 < rows.size() ? "," : "");
    }
    std::fprintf(f, "  ]\n}\n");
    std::fclose(f);
  }
  CK(cudaFree(buckets));
  CK(cudaFree(fingerprints));
  CK(cudaFree(values));
  CK(cudaFree(cells));
  CK(cudaFree(sink));
  return 0;
}

// GPH §6.2-6.3 Refinement on the GPU.
//
// One warp per overflowed key (a transaction). Per-bucket locks, taken with
// wait-die ordering (GPH §6.3): a transaction's priority is its position in
// the overflow list; meeting a lock held by a younger one it waits, by an
// older one it dies (releases everything, backs off, restarts with the same
// priority), so there is no deadlock and the oldest always progresses.
//
// The cell lock of the paper is implied: a transaction locks all R buckets of
// its cell's current mapping and then re-reads the cell byte; a cell byte only
// changes under the locks of its current buckets, so two transactions on one
// cell exclude each other.
//
// The cell's keys are staged in the warp's shared-memory Workspace; the
// (Φ', Δ') search is gph::plan_extended_move, the same code the CPU backend
// runs, evaluated by every lane of the warp in lock step so that the
// per-bucket occupancy it asks for can be counted by the whole warp.
#include "engine/cuda/refinement.h"

#include <algorithm>

#include "gphkv/engine/detail/move_planner.h"
#include "gphkv/engine/gph_hash.h"

namespace gphkv::engine::cuda {
namespace {

constexpr unsigned kFullWarp = 0xffffffffu;

// The warp's Workspace in shared memory.
struct Workspace {
  uint64_t* keys;      // the cell's keys, the new one last
  uint64_t* values;
  uint64_t* old_slot;  // where each of the cell's keys sits now (global slot index)
  uint32_t* held;      // lock ids this transaction holds
};

__host__ __device__ size_t workspace_bytes(const gph::Geometry& g) {
  const size_t cap = static_cast<size_t>(g.virtual_buckets) * g.slots_per_bucket + 1;
  return cap * 3 * sizeof(uint64_t) + 2 * g.virtual_buckets * sizeof(uint32_t) + 16;
}

__device__ Workspace carve(const gph::Geometry& g, uint8_t* base) {
  const size_t cap = static_cast<size_t>(g.virtual_buckets) * g.slots_per_bucket + 1;
  Workspace w;
  w.keys = reinterpret_cast<uint64_t*>(base);
  w.values = w.keys + cap;
  w.old_slot = w.values + cap;
  w.held = reinterpret_cast<uint32_t*>(w.old_slot + cap);
  return w;
}

// Lane 0 only. Wait-die: true when held (now or already), false when this
// transaction must die.
__device__ bool acquire(const DeviceTable& t, uint32_t bucket, uint32_t me, uint32_t* held, uint32_t* nheld) {
  const uint32_t id = bucket & t.lock_mask;
  for (;;) {
    const uint32_t owner = atomicCAS(&t.locks[id], 0u, me);
    if (owner == 0) {
      held[(*nheld)++] = id;
      return true;
    }
    if (owner == me) return true;  // two of our buckets share a striped lock
    if (me > owner) return false;  // we are younger (larger id): die
    __nanosleep(100);              // we are older: wait
  }
}

// Lane 0 only.
__device__ void release_all(const DeviceTable& t, uint32_t* held, uint32_t* nheld) {
  __threadfence();  // our slot and cell writes are visible before the locks open
  for (uint32_t i = 0; i < *nheld; ++i) atomicExch(&t.locks[held[i]], 0u);
  *nheld = 0;
}

// Warp-collective: locks the R buckets of (cell, mapping). Uniform result.
__device__ bool lock_cell_buckets(const DeviceTable& t, uint32_t cell, uint32_t mapping, uint32_t me,
                                  Workspace& w, uint32_t* nheld) {
  bool ok = true;
  if ((threadIdx.x & 31) == 0) {
    for (uint32_t r = 0; r < t.geo.virtual_buckets && ok; ++r) {
      ok = acquire(t, gph::bucket_of(t.geo, cell, r, mapping), me, w.held, nheld);
    }
    __threadfence();  // acquire: what the previous holders wrote is visible to our loads
  }
  return __shfl_sync(kFullWarp, ok, 0);
}

// Warp-collective: slots of `bucket` holding keys of cells other than `cell`.
__device__ uint32_t others_in_bucket(const DeviceTable& t, uint32_t bucket, uint32_t cell) {
  const uint32_t M = t.geo.slots_per_bucket;
  uint32_t n = 0;
  for (uint32_t s = threadIdx.x & 31; s < M; s += 32) {
    const uint64_t k = load_cg(t.keys + static_cast<uint64_t>(bucket) * M + s);
    n += k != gph::kEmptyKey && gph::cell_of(t.geo, k) != cell;
  }
  return __reduce_add_sync(kFullWarp, n);
}

// Warp-collective: the first vacant slot of `bucket`, or M. Uniform result.
__device__ uint32_t first_vacant(const DeviceTable& t, uint32_t bucket) {
  const uint32_t M = t.geo.slots_per_bucket;
  const int lane = threadIdx.x & 31;
  for (uint32_t s0 = 0; s0 < M; s0 += 32) {
    const uint32_t s = s0 + lane;
    const bool vacant = s < M && load_cg(t.keys + static_cast<uint64_t>(bucket) * M + s) == gph::kEmptyKey;
    const unsigned mask = __ballot_sync(kFullWarp, vacant);
    if (mask) return s0 + __ffs(mask) - 1;
  }
  return M;
}

// Warp-collective: appends the keys of `cell` found in `bucket` to the Workspace.
__device__ uint32_t gather_cell_keys(const DeviceTable& t, uint32_t bucket, uint32_t cell, Workspace& w, uint32_t n) {
  const uint32_t M = t.geo.slots_per_bucket;
  const int lane = threadIdx.x & 31;
  for (uint32_t s0 = 0; s0 < M; s0 += 32) {
    const uint32_t s = s0 + lane;
    const uint64_t slot = static_cast<uint64_t>(bucket) * M + s;
    const uint64_t k = s < M ? load_cg(t.keys + slot) : gph::kEmptyKey;
    const bool mine = k != gph::kEmptyKey && gph::cell_of(t.geo, k) == cell;
    const unsigned mask = __ballot_sync(kFullWarp, mine);
    if (mine) {
      const uint32_t at = n + __popc(mask & ((1u << lane) - 1u));
      w.keys[at] = k;
      w.values[at] = load_cg(t.values + slot);
      w.old_slot[at] = slot;
    }
    n += __popc(mask);
  }
  __syncwarp();
  return n;
}

// Warp-collective: under the locks of every bucket involved, does `chosen` still fit?
__device__ bool still_fits(const DeviceTable& t, uint32_t cell, uint8_t chosen, const Workspace& w, uint32_t n) {
  const uint32_t R = t.geo.virtual_buckets;
  const uint32_t phi = gph::cell_mapping(t.geo, chosen);
  for (uint32_t r = 0; r < R; ++r) {
    const uint32_t b = gph::bucket_of(t.geo, cell, r, phi);
    bool repeat = false;
    for (uint32_t q = 0; q < r; ++q) repeat |= gph::bucket_of(t.geo, cell, q, phi) == b;
    if (repeat) continue;
    uint32_t mine = 0;
    for (uint32_t k = threadIdx.x & 31; k < n; k += 32) mine += gph::bucket_for_key(t.geo, w.keys[k], cell, chosen) == b;
    mine = __reduce_add_sync(kFullWarp, mine);
    if (mine > 0 && mine + others_in_bucket(t, b, cell) > t.geo.slots_per_bucket) return false;
  }
  return true;
}

__global__ void refinement_kernel(DeviceTable t, const uint64_t* __restrict__ sorted_keys,
                                  const uint32_t* __restrict__ sorted_index, const uint64_t* __restrict__ values,
                                  uint8_t* __restrict__ status, const uint2* __restrict__ overflow,
                                  const uint32_t* __restrict__ overflow_count, size_t ws_bytes) {
  extern __shared__ __align__(16) uint8_t shared[];
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  Workspace w = carve(t.geo, shared + warp * ws_bytes);
  const uint32_t total = *overflow_count;
  const uint32_t warps = gridDim.x * (blockDim.x >> 5);
  const uint32_t M = t.geo.slots_per_bucket;

  for (uint32_t e = blockIdx.x * (blockDim.x >> 5) + warp; e < total; e += warps) {
    const uint2 job = overflow[e];
    const uint64_t key = sorted_keys[job.x];
    const uint64_t value = values[sorted_index[job.y]];
    const uint32_t me = e + 1;  // lock word: 0 free, else owner's priority + 1 (smaller = older)
    const uint32_t cell = gph::cell_of(t.geo, key);
    uint32_t nheld = 0;  // meaningful in lane 0
    uint8_t result = kStatusNoRoom;
    for (uint32_t attempt = 0;; ++attempt) {
      if (attempt > 0) __nanosleep(64u << min(attempt, 8u));  // backoff after a death or a stale plan
      const uint8_t current = load_cell_cg(t.cells + cell);
      if (!lock_cell_buckets(t, cell, gph::cell_mapping(t.geo, current), me, w, &nheld)) {
        if (lane == 0) release_all(t, w.held, &nheld);
        continue;
      }
      if (load_cell_cg(t.cells + cell) != current) {  // the cell moved while we queued
        if (lane == 0) release_all(t, w.held, &nheld);
        continue;
      }
      // A move of another key of this cell may have made room: Direct Insert again.
      const uint32_t home = gph::bucket_for_key(t.geo, key, cell, current);
      const uint32_t s = first_vacant(t, home);
      if (s < M) {
        if (lane == 0) {
          store_cg(t.keys + static_cast<uint64_t>(home) * M + s, key);
          store_cg(t.values + static_cast<uint64_t>(home) * M + s, value);
          release_all(t, w.held, &nheld);
        }
        result = kStatusInserted;
        break;
      }
      // Extended Move (GPH §6.1): stage the cell's keys and the new one.
      uint32_t n = 0;
      const uint32_t mapping = gph::cell_mapping(t.geo, current);
      for (uint32_t r = 0; r < t.geo.virtual_buckets; ++r) {
        const uint32_t b = gph::bucket_of(t.geo, cell, r, mapping);
        bool repeat = false;
        for (uint32_t q = 0; q < r; ++q) repeat |= gph::bucket_of(t.geo, cell, q, mapping) == b;
        if (!repeat) n = gather_cell_keys(t, b, cell, w, n);
      }
      if (lane == 0) {
        w.keys[n] = key;
        w.values[n] = value;
      }
      __syncwarp();
      ++n;
      uint8_t chosen = current;
      const bool planned = gph::plan_extended_move(
          t.geo, cell, current, w.keys, n, [&](uint32_t b) { return others_in_bucket(t, b, cell); }, &chosen);
      if (!planned) {
        if (lane == 0) release_all(t, w.held, &nheld);
        result = kStatusNoRoom;
        break;
      }
      // The plan read unlocked buckets: lock the targets, then check it again.
      if (!lock_cell_buckets(t, cell, gph::cell_mapping(t.geo, chosen), me, w, &nheld)) {
        if (lane == 0) release_all(t, w.held, &nheld);
        continue;
      }
      if (!still_fits(t, cell, chosen, w, n)) {
        if (lane == 0) release_all(t, w.held, &nheld);
        continue;
      }
      // Relocate: vacate the old slots, switch the cell, place every key.
      for (uint32_t k = lane; k + 1 < n; k += 32) store_cg(t.keys + w.old_slot[k], gph::kEmptyKey);
      __syncwarp();
      if (lane == 0) *reinterpret_cast<volatile uint8_t*>(t.cells + cell) = chosen;
      for (uint32_t k = 0; k < n; ++k) {
        const uint32_t b = gph::bucket_for_key(t.geo, w.keys[k], cell, chosen);
        const uint32_t slot = first_vacant(t, b);
        if (lane == 0) {
          if (slot < M) {
            store_cg(t.keys + static_cast<uint64_t>(b) * M + slot, w.keys[k]);
            store_cg(t.values + static_cast<uint64_t>(b) * M + slot, w.values[k]);
          } else {
            atomicAdd(t.fault, 1u);  // the verified plan overfilled a bucket: a bug
          }
        }
        __syncwarp();
      }
      if (lane == 0) release_all(t, w.held, &nheld);
      result = kStatusInserted;
      break;
    }
    if (lane == 0) {
      status[job.x] = result;
      if (result == kStatusInserted) atomicAdd(t.size, 1ull);
    }
    __syncwarp();
  }
}

}  // namespace

cudaError_t prepare_refinement(const gph::Geometry& g, int sms, RefinementShape* shape) {
  const size_t per_warp = (workspace_bytes(g) + 15) & ~size_t{15};
  constexpr size_t kBudget = 160 * 1024;  // leave room for other blocks on the SM
  shape->warps_per_block = static_cast<int>(std::clamp<size_t>(kBudget / per_warp, 1, 4));
  shape->shared_bytes = per_warp * shape->warps_per_block;
  shape->blocks = sms * 8;
  if (shape->shared_bytes > 48 * 1024) {
    return cudaFuncSetAttribute(refinement_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                static_cast<int>(shape->shared_bytes));
  }
  return cudaSuccess;
}

cudaError_t launch_refinement(const DeviceTable& t, const uint64_t* sorted_keys, const uint32_t* sorted_index,
                              const uint64_t* values, uint8_t* status, const uint2* overflow,
                              const uint32_t* overflow_count, const RefinementShape& shape,
                              cudaStream_t stream) {
  const size_t per_warp = shape.shared_bytes / shape.warps_per_block;
  refinement_kernel<<<shape.blocks, shape.warps_per_block * 32, shape.shared_bytes, stream>>>(
      t, sorted_keys, sorted_index, values, status, overflow, overflow_count, per_warp);
  return cudaGetLastError();
}

}  // namespace gphkv::engine::cuda

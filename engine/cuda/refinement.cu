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

#include "engine/cuda/refinement_lanes.h"
#include "engine/cuda/refinement_workspace.cuh"
#include "gphkv/engine/detail/move_planner.h"
#include "gphkv/engine/gph_hash.h"

namespace gphkv::engine::cuda {
namespace {

using refinement::carve;
using refinement::kFullWarp;
using refinement::lane_id;
using refinement::slot_in_target;
using refinement::Workspace;
using refinement::workspace_bytes;

// Warp-collective: every lane's writes reach L2 before any lock opens.
__device__ void release_all(const DeviceTable& t, Workspace& w) {
  __threadfence();
  __syncwarp();
  const uint32_t n = w.scalars[0];
  for (uint32_t i = lane_id(); i < n; i += 32) atomicExch(&t.locks[w.held[i]], 0u);
  __syncwarp();
  if (lane_id() == 0) w.scalars[0] = 0;
  __syncwarp();
}

// Warp-collective: w.bucket/w.canon := the R buckets of (cell, phi).
__device__ void load_mapping(const DeviceTable& t, uint32_t cell, uint32_t phi, Workspace& w) {
  const uint32_t R = t.geo.virtual_buckets;
  __syncwarp();  // every lane is done reading the previous mapping
  for (uint32_t r = lane_id(); r < R; r += 32) w.bucket[r] = gph::bucket_of(t.geo, cell, r, phi);
  __syncwarp();
  for (uint32_t r = lane_id(); r < R; r += 32) {
    uint32_t c = r;
    for (uint32_t q = 0; q < r; ++q) {
      if (w.bucket[q] == w.bucket[r]) {
        c = q;
        break;
      }
    }
    w.canon[r] = c;
  }
  if (lane_id() == 0) {
    w.scalars[1] = phi;
    w.scalars[2] = 1;
  }
  __syncwarp();
}

// Warp-collective, wait-die (GPH §6.3): locks the buckets in w.bucket, all R
// at once, one lane per bucket. A lock held by a younger transaction (larger
// id) is waited for; one held by an older one makes us die: false, and the
// caller releases everything it holds and starts over with the same id.
__device__ bool lock_mapping(const DeviceTable& t, uint32_t me, Workspace& w) {
  const uint32_t R = t.geo.virtual_buckets;
  for (uint32_t r0 = 0; r0 < R; r0 += 32) {
    const uint32_t r = r0 + lane_id();
    bool pending = r < R;
    for (;;) {
      bool die = false;
      bool got = false;
      uint32_t id = 0;
      if (pending) {
        id = w.bucket[r] & t.lock_mask;
        const uint32_t owner = atomicCAS(&t.locks[id], 0u, me);
        if (owner == 0) {
          got = true;
          pending = false;
        } else if (owner == me) {
          pending = false;  // ours already (another bucket of ours shares the striped lock)
        } else if (me > owner) {
          die = true;
        }
      }
      const unsigned got_mask = __ballot_sync(kFullWarp, got);
      if (got) w.held[w.scalars[0] + __popc(got_mask & ((1u << lane_id()) - 1u))] = id;
      __syncwarp();
      if (lane_id() == 0) w.scalars[0] += __popc(got_mask);
      __syncwarp();
      if (__any_sync(kFullWarp, die)) return false;
      if (!__any_sync(kFullWarp, pending)) break;
      __nanosleep(100);  // an older transaction waits for a younger holder
    }
  }
  __threadfence();  // acquire: the previous holders' writes are visible to our L2 loads
  return true;
}

// Warp-collective: w.count[r] := slots of w.bucket[r] held by keys of other cells.
__device__ void count_others(const DeviceTable& t, uint32_t cell, Workspace& w) {
  const uint32_t R = t.geo.virtual_buckets, M = t.geo.slots_per_bucket;
  __syncwarp();  // every lane is done reading the previous counts
  for (uint32_t r = lane_id(); r < R; r += 32) w.count[r] = 0;
  __syncwarp();
  for (uint32_t x = lane_id(); x < R * M; x += 32) {
    const uint32_t r = x / M;
    const uint64_t k = load_cg(slot_key(t, static_cast<uint64_t>(w.bucket[r]) * M + x % M));
    if (k != gph::kEmptyKey && gph::cell_of(t.geo, k) != cell) atomicAdd(&w.count[r], 1u);
  }
  __syncwarp();
}

// Warp-collective: slots of one bucket holding keys of other cells.
__device__ uint32_t others_in_bucket(const DeviceTable& t, uint32_t bucket, uint32_t cell) {
  const uint32_t M = t.geo.slots_per_bucket;
  uint32_t n = 0;
  for (uint32_t s = lane_id(); s < M; s += 32) {
    const uint64_t k = load_cg(slot_key(t, static_cast<uint64_t>(bucket) * M + s));
    n += k != gph::kEmptyKey && gph::cell_of(t.geo, k) != cell;
  }
  return __reduce_add_sync(kFullWarp, n);
}

// Warp-collective: the vacant slots of `bucket` as a mask over its M (<= 64)
// slots. Uniform result.
__device__ unsigned long long vacant_slots(const DeviceTable& t, uint32_t bucket) {
  const uint32_t M = t.geo.slots_per_bucket;
  unsigned long long vacant = 0;
  for (uint32_t s0 = 0; s0 < M; s0 += 32) {
    const uint32_t s = s0 + lane_id();
    const bool free = s < M && load_cg(slot_key(t, static_cast<uint64_t>(bucket) * M + s)) == gph::kEmptyKey;
    vacant |= static_cast<unsigned long long>(__ballot_sync(kFullWarp, free)) << s0;
  }
  return vacant;
}

// Warp-collective: stages the keys of `cell` from the buckets in w.bucket
// (each distinct bucket once) in the Workspace; returns how many.
__device__ uint32_t gather_cell_keys(const DeviceTable& t, uint32_t cell, Workspace& w) {
  const uint32_t R = t.geo.virtual_buckets, M = t.geo.slots_per_bucket;
  uint32_t n = 0;
  __syncwarp();  // every lane is done with the previous transaction's keys
  for (uint32_t x0 = 0; x0 < R * M; x0 += 32) {
    const uint32_t x = x0 + lane_id();
    bool mine = false;
    uint64_t k = 0, slot = 0;
    if (x < R * M && w.canon[x / M] == x / M) {
      slot = static_cast<uint64_t>(w.bucket[x / M]) * M + x % M;
      k = load_cg(slot_key(t, slot));
      mine = k != gph::kEmptyKey && gph::cell_of(t.geo, k) == cell;
    }
    const unsigned mask = __ballot_sync(kFullWarp, mine);
    if (mine) {
      const uint32_t at = n + __popc(mask & ((1u << lane_id()) - 1u));
      w.keys[at] = k;
      w.values[at] = load_cg(slot_value(t, slot));
      w.old_slot[at] = slot;
    }
    n += __popc(mask);
  }
  __syncwarp();
  return n;
}

// The occupancy the shared planner asks for, bucket by bucket. The planner
// walks the mappings in order and, within one, asks for its buckets r = 0, 1,
// ...; so on a miss this counts all R buckets of the next mapping at once
// (one round of loads instead of R), and answers the rest from the Workspace.
// A bucket that is not where the walk predicts is counted alone: slower, still right.
struct CachedOthers {
  const DeviceTable* t;
  Workspace* w;
  uint32_t cell;
  uint32_t first_phi;
  __device__ uint32_t operator()(uint32_t b) const {
    const uint32_t R = t->geo.virtual_buckets;
    if (w->scalars[2]) {
      for (uint32_t r = 0; r < R; ++r) {
        if (w->bucket[r] == b) return w->count[r];
      }
    }
    const uint32_t next = w->scalars[2] ? (w->scalars[1] + 1) % t->geo.num_mappings() : first_phi;
    if (gph::bucket_of(t->geo, cell, 0, next) == b) {
      if (lane_id() == 0) ++w->scalars[3];  // mapping loads, flushed at kernel end
      load_mapping(*t, cell, next, *w);
      count_others(*t, cell, *w);
      return w->count[0];
    }
    return others_in_bucket(*t, b, cell);
  }
};

// Warp-collective, under the locks of all buckets involved: the cell's keys
// fit the buckets of `chosen` given what other cells hold there now. Leaves
// w.target[k] = canonical bucket index of key k.
__device__ bool still_fits(const DeviceTable& t, uint32_t cell, uint8_t chosen, Workspace& w, uint32_t n) {
  const uint32_t R = t.geo.virtual_buckets;
  load_mapping(t, cell, gph::cell_mapping(t.geo, chosen), w);
  count_others(t, cell, w);
  const uint32_t phi = gph::cell_mapping(t.geo, chosen), delta = gph::cell_offset(t.geo, chosen);
  for (uint32_t k = lane_id(); k < n; k += 32) {
    const uint32_t rotated = (gph::virtual_bucket_of(t.geo, w.keys[k], phi) + delta) & (R - 1);
    w.target[k] = w.canon[rotated];
    atomicAdd(&w.count[w.target[k]], 1u);
  }
  __syncwarp();
  bool fits = true;
  for (uint32_t r = lane_id(); r < R; r += 32) fits &= w.count[r] <= t.geo.slots_per_bucket;
  return __all_sync(kFullWarp, fits);
}

// Warp-collective: vacate the old slots, switch the cell byte, and place every
// key at its target bucket (slot_in_target), all in parallel; the cell's flag
// ends exact (device_table.cuh, "Cell groups").
__device__ void relocate(const DeviceTable& t, uint32_t cell, uint8_t chosen, Workspace& w, uint32_t n) {
  const uint32_t R = t.geo.virtual_buckets, M = t.geo.slots_per_bucket;
  __syncwarp();
  for (uint32_t k = lane_id(); k + 1 < n; k += 32) store_cg(slot_key(t, w.old_slot[k]), gph::kEmptyKey);
  for (uint32_t r = lane_id(); r < R; r += 32) w.vacant[r] = 0;
  __threadfence_block();
  __syncwarp();
  if (lane_id() == 0) {
    *reinterpret_cast<volatile uint8_t*>(t.cells + cell_byte_at(cell)) = chosen;
    // Every key of the cell is placed again below: its flag starts clear and
    // is set again only if one of them lands outside its home line.
    atomicAnd(cell_flags(t, cell), ~cell_flag_bit(cell));
  }
  for (uint32_t x = lane_id(); x < R * M; x += 32) {
    const uint32_t r = x / M;
    if (w.canon[r] != r) continue;
    if (load_cg(slot_key(t, static_cast<uint64_t>(w.bucket[r]) * M + x % M)) == gph::kEmptyKey) {
      atomicOr(&w.vacant[r], 1ull << (x % M));
    }
  }
  for (uint32_t k = lane_id(); k < n; k += 32) w.line[k] = static_cast<uint8_t>(home_line(t.geo, w.keys[k]));
  __syncwarp();
  for (uint32_t k = lane_id(); k < n; k += 32) {
    bool spilled = false;
    const uint32_t s = slot_in_target(t, w, n, k, &spilled);
    if (s >= M) {
      atomicAdd(t.fault, 1u);  // the verified plan overfilled a bucket: a bug
      continue;
    }
    const uint32_t bucket = w.bucket[w.target[k]];
    const uint64_t slot = static_cast<uint64_t>(bucket) * M + s;
    store_cg(slot_key(t, slot), w.keys[k]);
    store_cg(slot_value(t, slot), w.values[k]);
    if (spilled) mark_spill(t, bucket, w.line[k], line_hash(t.geo, w.keys[k]), cell);
  }
  __syncwarp();
}

__global__ void refinement_kernel(DeviceTable t, const uint64_t* __restrict__ sorted_keys,
                                  const uint32_t* __restrict__ sorted_index, const uint64_t* __restrict__ values,
                                  uint8_t* __restrict__ status, const uint2* __restrict__ overflow,
                                  const uint32_t* __restrict__ overflow_count, size_t ws_bytes) {
  extern __shared__ __align__(16) uint8_t shared[];
  const int lane = lane_id();
  const int warp = threadIdx.x >> 5;
  Workspace w = carve(t.geo, shared + warp * ws_bytes);
  if (lane == 0) {
    w.scalars[0] = 0;
    w.scalars[3] = 0;
  }
  __syncwarp();
  const uint32_t total = *overflow_count;
  const uint32_t warps = gridDim.x * (blockDim.x >> 5);
  const uint32_t M = t.geo.slots_per_bucket;
  // This warp's share of the counters, added to the table's once at the end:
  // global atomics per transaction on a handful of addresses serialize.
  RefinementStats mine{};
  unsigned long long inserted = 0;

  for (uint32_t e = blockIdx.x * (blockDim.x >> 5) + warp; e < total; e += warps) {
    const uint2 job = overflow[e];
    const uint64_t key = sorted_keys[job.x];
    const uint64_t value = values[sorted_index[job.y]];
    const uint32_t me = e + 1;  // lock word: 0 free, else owner's id (smaller = older)
    const uint32_t cell = gph::cell_of(t.geo, key);
    uint8_t result = kStatusNoRoom;
    uint32_t attempt = 0, deaths = 0, no_room_seen = 0;
    bool direct = false;
    for (;; ++attempt) {
      if (attempt > 0) __nanosleep(64u << min(attempt, 8u));  // back off after a death or a stale plan
      const uint8_t current = load_cell_cg(t.cells + cell_byte_at(cell));
      const uint32_t mapping = gph::cell_mapping(t.geo, current);
      load_mapping(t, cell, mapping, w);
      if (!lock_mapping(t, me, w)) {
        release_all(t, w);
        ++deaths;
        continue;
      }
      // A cell byte changes only under the locks of its current buckets.
      if (__shfl_sync(kFullWarp, load_cell_cg(t.cells + cell_byte_at(cell)), 0) != current) {
        release_all(t, w);
        continue;
      }
      // GPH §6.1 Direct Insert again: a move of this cell may have made room.
      const uint32_t home = gph::bucket_for_key(t.geo, key, cell, current);
      const unsigned long long vacant = vacant_slots(t, home);
      if (vacant != 0) {
        // The home line first; elsewhere in the bucket only when it is full.
        const uint32_t lh = line_hash(t.geo, key), line = home_line_of(t.geo, lh);
        const unsigned long long own = vacant & line_mask(t.geo, line);
        const uint32_t s = __ffsll(static_cast<long long>(own != 0 ? own : vacant)) - 1;
        if (lane == 0) {
          store_cg(slot_key(t, static_cast<uint64_t>(home) * M + s), key);
          store_cg(slot_value(t, static_cast<uint64_t>(home) * M + s), value);
          if (own == 0) mark_spill(t, home, line, lh, cell);
        }
        release_all(t, w);
        result = kStatusInserted;
        direct = true;
        break;
      }
      // GPH §6.1 Extended Move: stage the cell's keys and the new one, plan.
      uint32_t n = gather_cell_keys(t, cell, w);
      if (lane == 0) {
        w.keys[n] = key;
        w.values[n] = value;
        w.scalars[2] = 0;  // the occupancy cache starts empty
      }
      __syncwarp();
      ++n;
      uint8_t chosen = current;
      const bool planned =
          gph::plan_extended_move(t.geo, cell, current, w.keys, n, CachedOthers{&t, &w, cell, mapping}, &chosen);
      if (!planned) {
        release_all(t, w);
        // The occupancy was read without locks, and a bucket read while another
        // transaction moves keys inside it can look fuller than it is: confirm
        // a failure with fresh reads before answering kNoRoom.
        if (++no_room_seen < 3) continue;
        result = kStatusNoRoom;
        break;
      }
      // The plan read unlocked buckets: lock the targets, then check it again.
      load_mapping(t, cell, gph::cell_mapping(t.geo, chosen), w);
      if (!lock_mapping(t, me, w) || !still_fits(t, cell, chosen, w, n)) {
        release_all(t, w);
        continue;
      }
      relocate(t, cell, chosen, w, n);
      release_all(t, w);
      result = kStatusInserted;
      break;
    }
    if (lane == 0) status[job.x] = result;
    inserted += result == kStatusInserted;
    mine.transactions += 1;
    mine.attempts += attempt + 1;
    mine.deaths += deaths;
    if (result == kStatusInserted) (direct ? mine.direct : mine.moves) += 1;
    __syncwarp();
  }
  if (lane == 0 && mine.transactions > 0) {
    atomicAdd(t.size, inserted);
    atomicAdd(&t.stats->transactions, mine.transactions);
    atomicAdd(&t.stats->attempts, mine.attempts);
    atomicAdd(&t.stats->deaths, mine.deaths);
    atomicAdd(&t.stats->direct, mine.direct);
    atomicAdd(&t.stats->moves, mine.moves);
    atomicAdd(&t.stats->mappings, static_cast<unsigned long long>(w.scalars[3]));
  }
}

}  // namespace

RefinementKernel default_refinement_kernel(const gph::Geometry& g) {
  return lanes_refinement_fits(g) ? RefinementKernel::kLanes : RefinementKernel::kWarp;
}

cudaError_t prepare_refinement(const gph::Geometry& g, int sms, RefinementKernel kernel, RefinementShape* shape) {
  shape->kernel = kernel;
  if (kernel == RefinementKernel::kLanes) return prepare_refinement_lanes(g, sms, shape);
  const size_t per_warp = (workspace_bytes(g) + 15) & ~size_t{15};
  constexpr size_t kBudget = 160 * 1024;  // leave room for other blocks on the SM
  shape->warps_per_block = static_cast<int>(std::clamp<size_t>(kBudget / per_warp, 1, 4));
  shape->shared_bytes = per_warp * shape->warps_per_block;
  if (shape->shared_bytes > 48 * 1024) {
    const cudaError_t e = cudaFuncSetAttribute(refinement_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               static_cast<int>(shape->shared_bytes));
    if (e != cudaSuccess) return e;
  }
  // As many blocks as are resident at once (registers and shared memory
  // decide), and no more: the warps share the overflow list out evenly, so a
  // block beyond the resident ones starts its share only when a resident one
  // ends (ncu: 1716 blocks, 1056 resident; sizing by occupancy gave inserts
  // and bursts 5-6%, docs/gph.md "Tuning on the H100").
  int per_sm = 0;
  const cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, refinement_kernel,
                                                                      shape->warps_per_block * 32, shape->shared_bytes);
  if (e != cudaSuccess) return e;
  shape->blocks = sms * std::max(per_sm, 1);
  return cudaSuccess;
}

cudaError_t launch_refinement(const DeviceTable& t, const uint64_t* sorted_keys, const uint32_t* sorted_index,
                              const uint64_t* values, uint8_t* status, const uint2* overflow, uint32_t* overflow_count,
                              const RefinementShape& shape, cudaStream_t stream) {
  if (shape.kernel == RefinementKernel::kLanes) {
    return launch_refinement_lanes(t, sorted_keys, sorted_index, values, status, overflow, overflow_count, shape,
                                   stream);
  }
  const size_t per_warp = shape.shared_bytes / shape.warps_per_block;
  refinement_kernel<<<shape.blocks, shape.warps_per_block * 32, shape.shared_bytes, stream>>>(
      t, sorted_keys, sorted_index, values, status, overflow, overflow_count, per_warp);
  return cudaGetLastError();
}

}  // namespace gphkv::engine::cuda

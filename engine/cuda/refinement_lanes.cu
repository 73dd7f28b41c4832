// GPH §6.2-6.3 Refinement on the GPU, the transaction with the planner's
// candidates across lanes (RefinementKernel::kLanes; R = 8, M = 8 or 16).
//
// The same transaction as refinement.cu (one warp per overflowed key, the
// same wait-die bucket locks, the same Direct Insert, the same (Φ, Δ) choice
// in the paper's order, the same placement by line), with far fewer
// instructions. There, every lane ran gph::plan_extended_move in lock step
// (every lane hashed every bucket and every key of each mapping it tried), and
// each of the passes over the cell's 8 x 16 slots (counting other cells'
// keys, gathering the cell's, the vacancy masks, the verification) hashed
// every slot's key again: ~6.8 k warp instructions a transaction
// (bench/results/ncu_refinement_burst_h100.txt). Here:
// - One pass over the current mapping's buckets, under their locks, gives
//   each bucket's occupied slots and the cell's keys (one hash a slot, once a
//   transaction); Direct Insert, the planner's first mapping and the
//   placement's vacancy masks all come from it, without another load.
// - A group of 8 lanes is one mapping: lane r hashes bucket r, and the cell's
//   keys are split over the group for their virtual buckets (a histogram of
//   8-bit counts in one 64-bit word, summed by shuffles); lane d of the group
//   then tests offset Δ = d (a rotation of that word against the rooms), and a
//   ballot picks the first fitting candidate in the paper's order. The current
//   mapping is tried alone (most moves end there), then 4 mappings a round.
// - A plan within the current mapping was made under its locks and needs no
//   second look; one in another mapping locks those buckets, reads them again
//   and checks the plan before it moves anything.
// Other cells' keys in a bucket are its occupied slots less the cell's own
// (whose slots the pass recorded), so no pass hashes a key twice.
#include "engine/cuda/refinement_lanes.h"

#include <algorithm>

#include "engine/cuda/refinement_workspace.cuh"
#include "gphkv/engine/gph_hash.h"

namespace gphkv::engine::cuda {
namespace {

using refinement::carve;
using refinement::kFullWarp;
using refinement::lane_id;
using refinement::slot_in_target;
using refinement::Workspace;

constexpr uint32_t kR = 8;             // virtual buckets: a group of 8 lanes holds one mapping
constexpr uint32_t kGroups = 32 / kR;  // mappings a round tries at once
constexpr uint32_t kNoLock = ~0u;
// Per-byte fields of the 64-bit words below: bit 7 of each byte, and the
// room (5 bits: at most 16) under the canonical index (3 bits).
constexpr uint64_t kHighBits = 0x8080808080808080ull;
constexpr uint64_t kRoomBits = 0x1f1f1f1f1f1f1f1full;

// Warp-collective, wait-die (GPH §6.3): each lane with `want` takes the lock
// of `bucket` (lanes of one lock word agree: one takes it, the others see it
// ours). The lane that took one keeps its id in *held. false: an older
// transaction holds one; the caller releases what it holds and starts over.
__device__ bool lock_lanes(const DeviceTable& t, uint32_t me, bool want, uint32_t bucket, uint32_t* held) {
  bool pending = want;
  for (;;) {
    bool die = false;
    if (pending) {
      const uint32_t id = bucket & t.lock_mask;
      const uint32_t owner = atomicCAS(&t.locks[id], 0u, me);
      if (owner == 0) {
        *held = id;
        pending = false;
      } else if (owner == me) {
        pending = false;  // ours already (another bucket of ours shares the striped lock)
      } else if (me > owner) {
        die = true;
      }
    }
    if (__any_sync(kFullWarp, die)) return false;
    if (!__any_sync(kFullWarp, pending)) break;
    __nanosleep(100);  // an older transaction waits for a younger holder
  }
  __threadfence();  // acquire: the previous holders' writes are visible to our L2 loads
  return true;
}

// Warp-collective: every lane's writes reach L2 before any lock opens.
__device__ void release_lanes(const DeviceTable& t, uint32_t* held_a, uint32_t* held_b) {
  __threadfence();
  __syncwarp();
  if (*held_a != kNoLock) atomicExch(&t.locks[*held_a], 0u);
  if (*held_b != kNoLock) atomicExch(&t.locks[*held_b], 0u);
  *held_a = *held_b = kNoLock;
  __syncwarp();
}

// Within a group of 8 lanes, lane r holding bucket b: the first r' <= r of
// the group with the same bucket (virtual buckets that share a real bucket
// share its room, as in the shared planner).
__device__ uint32_t canonical(uint32_t b, uint32_t r) {
  uint32_t c = r;
#pragma unroll
  for (int q = kR - 2; q >= 0; --q) {
    const uint32_t bq = __shfl_sync(kFullWarp, b, q, kR);
    if (static_cast<uint32_t>(q) < r && bq == b) c = q;
  }
  return c;
}

// Sums (or ORs) a word over the lane's group of 8.
__device__ uint64_t group_sum(uint64_t v) {
  v += __shfl_xor_sync(kFullWarp, v, 1);
  v += __shfl_xor_sync(kFullWarp, v, 2);
  v += __shfl_xor_sync(kFullWarp, v, 4);
  return v;
}

// The group's rooms and canonical indexes, byte r for bucket r. `room` is the
// lane's bucket's free slots (0 for a bucket that is not canonical).
__device__ uint64_t group_rooms(uint32_t room, uint32_t canon, uint32_t r) {
  return group_sum(static_cast<uint64_t>(room | canon << 5) << (8 * r));
}

// Whether the keys counted in `vcount` (byte j: keys of virtual bucket j)
// fit the rooms under offset d (virtual bucket j goes to bucket (j + d) mod
// 8). Without shared buckets the loads are `vcount` rotated by d bytes; with
// them, each bucket's load goes to its canonical byte. Loads are at most 128
// (n <= R*M keys), rooms at most 16: the subtraction per byte never borrows.
__device__ bool offset_fits(uint64_t vcount, uint64_t rooms, uint32_t d, bool shared_buckets) {
  uint64_t load;
  if (!shared_buckets) {
    load = d == 0 ? vcount : (vcount << (8 * d)) | (vcount >> (64 - 8 * d));
  } else {
    load = 0;
#pragma unroll
    for (uint32_t r = 0; r < kR; ++r) {
      const uint32_t c = static_cast<uint32_t>(rooms >> (8 * r + 5)) & (kR - 1);
      const uint32_t j = (r - d) & (kR - 1);
      load += ((vcount >> (8 * j)) & 0xff) << (8 * c);
    }
  }
  return ((((rooms & kRoomBits) | kHighBits) - load) & kHighBits) == kHighBits;
}

// The group's count of the cell's n keys per virtual bucket under mapping
// phi, byte j for virtual bucket j (lane r hashes keys r, r + 8, ...).
__device__ uint64_t virtual_counts(const gph::Geometry& g, const Workspace& w, uint32_t n, uint32_t phi, uint32_t r) {
  uint64_t v = 0;
  for (uint32_t k = r; k < n; k += kR) v += 1ull << (8 * gph::virtual_bucket_of(g, w.keys[k], phi));
  return group_sum(v);
}

// Bucket b's occupied slots as a mask (read past L1: other blocks write them
// under locks).
template <uint32_t kM>
__device__ uint32_t occupied_slots(const DeviceTable& t, uint32_t b) {
  uint64_t k[kM];
#pragma unroll
  for (uint32_t s = 0; s < kM; ++s) k[s] = load_cg(slot_key(t, static_cast<uint64_t>(b) * kM + s));
  uint32_t m = 0;
#pragma unroll
  for (uint32_t s = 0; s < kM; ++s) m |= static_cast<uint32_t>(k[s] != gph::kEmptyKey) << s;
  return m;
}

// The slots of bucket b that the cell's staged keys (the first n) hold.
template <uint32_t kM>
__device__ uint32_t cell_slots_in(const Workspace& w, uint32_t n, uint32_t b) {
  uint32_t m = 0;
  for (uint32_t k = 0; k < n; ++k) {
    const uint64_t s = w.old_slot[k];
    if (s / kM == b) m |= 1u << (s % kM);
  }
  return m;
}

// Warp w takes the overflow list's entries w, w + warps, ...
template <uint32_t kM>
__global__ void __launch_bounds__(128, 8)
    refinement_lanes_kernel(DeviceTable t, const uint64_t* __restrict__ sorted_keys,
                            const uint32_t* __restrict__ sorted_index, const uint64_t* __restrict__ values,
                            uint8_t* __restrict__ status, const uint2* __restrict__ overflow,
                            uint32_t* __restrict__ overflow_count, size_t ws_bytes) {
  static_assert(kM == 8 || kM == 16, "a bucket's slots are one 32-bit mask, its room 5 bits");
  constexpr uint32_t kSlots = kR * kM;
  constexpr uint32_t kChunks = kSlots / 32;
  constexpr uint32_t kAllSlots = (1u << kM) - 1;
  extern __shared__ __align__(16) uint8_t shared[];
  const uint32_t lane = lane_id();
  const uint32_t r = lane & (kR - 1), group = lane / kR;
  const uint32_t warp = threadIdx.x >> 5;
  Workspace w = carve(t.geo, shared + warp * ws_bytes);
  const uint32_t total = *overflow_count;
  const uint32_t warps = gridDim.x * (blockDim.x >> 5);
  const uint32_t mappings = t.geo.num_mappings();
  RefinementStats mine{};
  unsigned long long inserted = 0;

  for (uint32_t e = blockIdx.x * (blockDim.x >> 5) + warp; e < total; e += warps) {
    const uint2 job = overflow[e];
    const uint64_t key = sorted_keys[job.x];
    const uint64_t value = values[sorted_index[job.y]];
    const uint32_t me = e + 1;  // lock word: 0 free, else owner's id (smaller = older)
    const uint32_t ch = gph::cell_hash(t.geo, key);
    const uint32_t cell = gph::reduce(ch, t.geo.num_cells);
    const uint32_t lh = line_hash_of(ch);
    uint32_t held_a = kNoLock, held_b = kNoLock;
    uint8_t result = kStatusNoRoom;
    uint32_t attempt = 0, deaths = 0, no_room_seen = 0;
    bool direct = false;
    for (;; ++attempt) {
      if (attempt > 0) __nanosleep(64u << min(attempt, 8u));  // back off after a death or a stale plan
      const uint8_t current = __shfl_sync(kFullWarp, load_cell_cg(t.cells + cell_byte_at(cell)), 0);
      const uint32_t phi0 = gph::cell_mapping(t.geo, current), d0 = gph::cell_offset(t.geo, current);
      const uint32_t cur_bucket = gph::bucket_of(t.geo, cell, r, phi0);
      const uint32_t cur_canon = canonical(cur_bucket, r);
      if (!lock_lanes(t, me, lane < kR, cur_bucket, &held_a)) {
        release_lanes(t, &held_a, &held_b);
        ++deaths;
        continue;
      }
      // A cell byte changes only under the locks of its current buckets.
      if (__shfl_sync(kFullWarp, load_cell_cg(t.cells + cell_byte_at(cell)), 0) != current) {
        release_lanes(t, &held_a, &held_b);
        continue;
      }
      // One pass over the cell's buckets (each distinct one once): every lane
      // ends with its bucket r's occupied slots and the cell's keys among
      // them; the cell's keys are staged with their slots and home lines.
      uint32_t occ = 0, own = 0, n = 0;
      __syncwarp();  // every lane is done with the previous transaction's Workspace
#pragma unroll
      for (uint32_t c = 0; c < kChunks; ++c) {
        const uint32_t x = c * 32 + lane, xr = x / kM;
        const uint32_t b = __shfl_sync(kFullWarp, cur_bucket, xr);
        const bool distinct = __shfl_sync(kFullWarp, cur_canon, xr) == xr;
        const uint64_t slot = static_cast<uint64_t>(b) * kM + x % kM;
        const uint64_t k = distinct ? load_cg(slot_key(t, slot)) : gph::kEmptyKey;
        const bool used = k != gph::kEmptyKey;
        const uint32_t kh = used ? gph::cell_hash(t.geo, k) : 0;
        const bool of_cell = used && gph::reduce(kh, t.geo.num_cells) == cell;
        const unsigned used_mask = __ballot_sync(kFullWarp, used);
        const unsigned cell_mask = __ballot_sync(kFullWarp, of_cell);
        if (of_cell) {
          const uint32_t at = n + __popc(cell_mask & ((1u << lane) - 1u));
          w.keys[at] = k;
          w.values[at] = load_cg(slot_value(t, slot));
          w.old_slot[at] = slot;
          w.line[at] = static_cast<uint8_t>(home_line_of(t.geo, line_hash_of(kh)));
        }
        n += __popc(cell_mask);
        if (c == r * kM / 32) {
          occ = (used_mask >> (r * kM % 32)) & kAllSlots;
          own = (cell_mask >> (r * kM % 32)) & kAllSlots;
        }
      }
      // GPH §6.1 Direct Insert again: a move of this cell may have made room.
      const uint32_t home_r = __shfl_sync(kFullWarp, cur_canon, (gph::virtual_bucket_of(t.geo, key, phi0) + d0) & 7);
      const unsigned long long vacant = ~__shfl_sync(kFullWarp, occ, home_r) & kAllSlots;
      if (vacant != 0) {
        // The home line first; elsewhere in the bucket only when it is full.
        const uint32_t home = __shfl_sync(kFullWarp, cur_bucket, home_r);
        const uint32_t line = home_line_of(t.geo, lh);
        const unsigned long long in_line = vacant & line_mask(t.geo, line);
        const uint32_t s = __ffsll(static_cast<long long>(in_line != 0 ? in_line : vacant)) - 1;
        if (lane == 0) {
          store_cg(slot_key(t, static_cast<uint64_t>(home) * kM + s), key);
          store_cg(slot_value(t, static_cast<uint64_t>(home) * kM + s), value);
          if (in_line == 0) mark_spill(t, home, line, lh, cell);
        }
        release_lanes(t, &held_a, &held_b);
        result = kStatusInserted;
        direct = true;
        break;
      }
      // GPH §6.1 Extended Move: the new key joins the staged ones; plan.
      if (lane == 0) {
        w.keys[n] = key;
        w.values[n] = value;
        w.line[n] = static_cast<uint8_t>(home_line_of(t.geo, lh));
      }
      __syncwarp();
      ++n;
      bool found = false;
      uint32_t phi = phi0, d = 0, tgt_bucket = cur_bucket, tgt_canon = cur_canon;
      uint32_t tgt_vacant = (~occ & kAllSlots) | own;
      uint64_t vcount = 0;
      if (n <= kSlots) {  // more keys than the cell's buckets hold never fit (§6.2)
        // The current mapping first, from its offset on (group 0's lanes; the
        // other groups compute the same and are not asked), on what the pass read.
        const uint64_t rooms = group_rooms(cur_canon == r ? kM - __popc(occ & ~own) : 0, cur_canon, r);
        const bool shared_buckets = (__ballot_sync(kFullWarp, cur_canon != r) & 0xffu) != 0;
        vcount = virtual_counts(t.geo, w, n, phi0, r);
        const unsigned fit =
            __ballot_sync(kFullWarp, group == 0 && offset_fits(vcount, rooms, (d0 + r) & 7, shared_buckets));
        mine.mappings += 1;
        if (fit != 0) {
          found = true;
          d = (d0 + __ffs(fit) - 1) & 7;
        }
        // Then the next mappings, 4 a round (group g tries mapping t0 + g),
        // every offset from 0, on occupancy read without their locks.
        for (uint32_t t0 = 1; !found && t0 < mappings; t0 += kGroups) {
          const uint32_t step = t0 + group;
          const bool valid = step < mappings;
          const uint32_t phi_g = (phi0 + step) % mappings;
          const uint32_t b = gph::bucket_of(t.geo, cell, r, phi_g);
          const uint32_t canon = canonical(b, r);
          const uint32_t used = valid && canon == r ? occupied_slots<kM>(t, b) : 0;
          const uint32_t room = canon == r ? kM - __popc(used & ~cell_slots_in<kM>(w, n - 1, b)) : 0;
          const uint64_t rooms_g = group_rooms(room, canon, r);
          const bool shared_g = ((__ballot_sync(kFullWarp, canon != r) >> (group * kR)) & 0xffu) != 0;
          const uint64_t vcount_g = virtual_counts(t.geo, w, n, phi_g, r);
          const unsigned fit_g = __ballot_sync(kFullWarp, valid && offset_fits(vcount_g, rooms_g, r, shared_g));
          mine.mappings += min(kGroups, mappings - t0);
          if (fit_g != 0) {
            found = true;
            const uint32_t first = __ffs(fit_g) - 1, from = (first & ~(kR - 1)) | r;
            phi = __shfl_sync(kFullWarp, phi_g, first);
            d = first & (kR - 1);
            tgt_bucket = __shfl_sync(kFullWarp, b, from);
            tgt_canon = __shfl_sync(kFullWarp, canon, from);
            vcount = __shfl_sync(kFullWarp, vcount_g, first);
          }
        }
      }
      if (!found) {
        release_lanes(t, &held_a, &held_b);
        // The other mappings were read without locks, and a bucket read while
        // another transaction moves keys inside it can look fuller than it
        // is: confirm a failure with fresh reads before answering kNoRoom.
        if (++no_room_seen < 3) continue;
        result = kStatusNoRoom;
        break;
      }
      if (phi != phi0) {
        // The plan read unlocked buckets: lock the targets, read them again
        // and check it before anything moves.
        if (!lock_lanes(t, me, lane < kR, tgt_bucket, &held_b)) {
          release_lanes(t, &held_a, &held_b);
          ++deaths;
          continue;
        }
        uint32_t used = lane < kR && tgt_canon == r ? occupied_slots<kM>(t, tgt_bucket) : 0;
        used = __shfl_sync(kFullWarp, used, r);
        const uint32_t cells_own = cell_slots_in<kM>(w, n - 1, tgt_bucket);
        const uint64_t rooms = group_rooms(tgt_canon == r ? kM - __popc(used & ~cells_own) : 0, tgt_canon, r);
        const bool shared_buckets = (__ballot_sync(kFullWarp, tgt_canon != r) & 0xffu) != 0;
        if (!offset_fits(vcount, rooms, d, shared_buckets)) {
          release_lanes(t, &held_a, &held_b);
          continue;
        }
        tgt_vacant = (~used & kAllSlots) | cells_own;
      }
      // Relocate: vacate the cell's slots, switch the cell byte, place every
      // key (slot_in_target: by line, as refinement.cu); the cell's flag ends exact.
      const uint8_t chosen = gph::make_cell(t.geo, phi, d);
      if (lane < kR) {
        w.vacant[r] = tgt_vacant;
        w.bucket[r] = tgt_bucket;
        w.canon[r] = tgt_canon;
      }
      __syncwarp();
      for (uint32_t k = lane; k < n; k += 32) {
        w.target[k] = w.canon[(gph::virtual_bucket_of(t.geo, w.keys[k], phi) + d) & (kR - 1)];
      }
      for (uint32_t k = lane; k + 1 < n; k += 32) store_cg(slot_key(t, w.old_slot[k]), gph::kEmptyKey);
      __threadfence_block();
      __syncwarp();
      if (lane == 0) {
        *reinterpret_cast<volatile uint8_t*>(t.cells + cell_byte_at(cell)) = chosen;
        // Every key of the cell is placed again below: its flag starts clear and
        // is set again only if one of them lands outside its home line.
        atomicAnd(cell_flags(t, cell), ~cell_flag_bit(cell));
      }
      __syncwarp();
      for (uint32_t k = lane; k < n; k += 32) {
        bool spilled = false;
        const uint32_t s = slot_in_target(t, w, n, k, &spilled);
        if (s >= kM) {
          atomicAdd(t.fault, 1u);  // the verified plan overfilled a bucket: a bug
          continue;
        }
        const uint32_t bucket = w.bucket[w.target[k]];
        const uint64_t slot = static_cast<uint64_t>(bucket) * kM + s;
        store_cg(slot_key(t, slot), w.keys[k]);
        store_cg(slot_value(t, slot), w.values[k]);
        if (spilled) mark_spill(t, bucket, w.line[k], line_hash(t.geo, w.keys[k]), cell);
      }
      release_lanes(t, &held_a, &held_b);
      result = kStatusInserted;
      break;
    }
    if (lane == 0) status[job.x] = result;
    inserted += result == kStatusInserted;
    mine.transactions += 1;
    mine.attempts += attempt + 1;
    mine.deaths += deaths;
    if (result == kStatusInserted) (direct ? mine.direct : mine.moves) += 1;
  }
  if (lane == 0 && mine.transactions > 0) {
    atomicAdd(t.size, inserted);
    atomicAdd(&t.stats->transactions, mine.transactions);
    atomicAdd(&t.stats->attempts, mine.attempts);
    atomicAdd(&t.stats->deaths, mine.deaths);
    atomicAdd(&t.stats->direct, mine.direct);
    atomicAdd(&t.stats->moves, mine.moves);
    atomicAdd(&t.stats->mappings, mine.mappings);
  }
}

template <uint32_t kM>
cudaError_t prepare_for(const gph::Geometry& g, int sms, RefinementShape* shape) {
  const size_t per_warp = (refinement::workspace_bytes(g) + 15) & ~size_t{15};
  shape->warps_per_block = 4;
  shape->shared_bytes = per_warp * shape->warps_per_block;
  int per_sm = 0;
  const cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, refinement_lanes_kernel<kM>,
                                                                      shape->warps_per_block * 32, shape->shared_bytes);
  if (e != cudaSuccess) return e;
  shape->blocks = sms * std::max(per_sm, 1);
  return cudaSuccess;
}

}  // namespace

bool lanes_refinement_fits(const gph::Geometry& g) {
  return g.virtual_buckets == kR && (g.slots_per_bucket == 8 || g.slots_per_bucket == 16);
}

cudaError_t prepare_refinement_lanes(const gph::Geometry& g, int sms, RefinementShape* shape) {
  if (!lanes_refinement_fits(g)) return cudaErrorInvalidValue;
  return g.slots_per_bucket == 8 ? prepare_for<8>(g, sms, shape) : prepare_for<16>(g, sms, shape);
}

cudaError_t launch_refinement_lanes(const DeviceTable& t, const uint64_t* sorted_keys, const uint32_t* sorted_index,
                                    const uint64_t* values, uint8_t* status, const uint2* overflow,
                                    uint32_t* overflow_count, const RefinementShape& shape, cudaStream_t stream) {
  const size_t per_warp = shape.shared_bytes / shape.warps_per_block;
  const dim3 grid(shape.blocks), block(shape.warps_per_block * 32);
  if (t.geo.slots_per_bucket == 8) {
    refinement_lanes_kernel<8><<<grid, block, shape.shared_bytes, stream>>>(t, sorted_keys, sorted_index, values,
                                                                            status, overflow, overflow_count, per_warp);
  } else {
    refinement_lanes_kernel<16><<<grid, block, shape.shared_bytes, stream>>>(
        t, sorted_keys, sorted_index, values, status, overflow, overflow_count, per_warp);
  }
  return cudaGetLastError();
}

}  // namespace gphkv::engine::cuda

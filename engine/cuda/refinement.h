// GPH §6.2-6.3 Refinement: Extended Move for the keys Saturation Fill could not place.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "engine/cuda/device_table.cuh"

namespace gphkv::engine::cuda {

// Which transaction Refinement runs (docs/gph.md, "Insert kernel").
enum class RefinementKernel : uint8_t {
  // Every lane runs the shared planner in lock step; warp-wide passes over
  // the cell's buckets, each hashing every slot's key (refinement.cu). Any geometry.
  kWarp,
  // The planner's candidates across lanes (a group of 8 lanes a mapping, a
  // lane an offset) and one pass over the cell's buckets, each slot's key
  // hashed once a transaction (refinement_lanes.cu). R = 8, M = 8 or 16.
  kLanes,
};

// Variants of the insert path (engine_bench --burst_variants measures them
// against the default, interleaved). Round four's two (a
// warp-wide overflow append, a queue for Refinement's warps) lost or tied and
// left; docs/gph.md keeps their numbers and git history their code.
// How insert and erase batches find a key's repeats: grouping the batch in a
// scratch set (batch_groups.h) or sorting it (batch_sort.h). The set wins
// while it stays in L2 (1% bursts into 10^8 keys: 10^6 keys, a 16 MB set)
// and loses past it (10^7 keys: a 256 MB set), so the default picks by size.
enum class RepeatFinder : uint8_t {
  kBySize,  // grouping where batch_groups_fit(n, the device's L2), else sorting
  kSort,
  kGroup,
};

struct InsertVariants {
  RepeatFinder repeats = RepeatFinder::kBySize;
};

// Launch shape of the Refinement kernel, fixed per table (it depends on R*M).
struct RefinementShape {
  RefinementKernel kernel = RefinementKernel::kWarp;
  InsertVariants variants;
  int warps_per_block = 4;
  int blocks = 0;           // grid: warps loop over the overflow list
  size_t shared_bytes = 0;  // dynamic shared memory per block (the Workspaces)
};

// The kernel a table of this geometry runs unless told otherwise: kLanes
// where it fits, kWarp elsewhere.
RefinementKernel default_refinement_kernel(const gph::Geometry& g);

// Computes the shape of `kernel` for a geometry on a device with `sms`
// multiprocessors and raises the kernel's shared-memory limit when a
// Workspace needs it. cudaErrorInvalidValue: kLanes for a geometry it does not fit.
cudaError_t prepare_refinement(const gph::Geometry& g, int sms, RefinementKernel kernel, RefinementShape* shape);

// One warp per overflowed key: lock the cell's buckets (wait-die), retry the
// direct insert, else plan an Extended Move with the shared planner, lock the
// target buckets, verify and relocate through the warp's shared-memory
// Workspace. status[first] becomes kStatusInserted or kStatusNoRoom.
cudaError_t launch_refinement(const DeviceTable& t, const uint64_t* sorted_keys, const uint32_t* sorted_index,
                              const uint64_t* values, uint8_t* status, const uint2* overflow, uint32_t* overflow_count,
                              const RefinementShape& shape, cudaStream_t stream);

}  // namespace gphkv::engine::cuda

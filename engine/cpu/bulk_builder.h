// HashGraph-style bulk build of a GPH table on the CPU (HashGraph §3,
// GPH §6 invariants): bin, count, prefix-sum, choose cells' (Φ, Δ) in
// parallel rounds, place. Produces a TableImage that a CpuTable loads.
#pragma once

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/cpu/worker_pool.h"
#include "gphkv/engine/table.h"

namespace gphkv::engine::cpu {

absl::StatusOr<TableImage> bulk_build_image(const gph::Geometry& geometry, absl::Span<const KeyValue> base,
                                            absl::Span<const WriteOp> burst, WorkerPool& pool, BuildStats* stats);

}  // namespace gphkv::engine::cpu

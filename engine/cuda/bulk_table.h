// The CUDA backend's bulk_build(): host spans in, a CudaTable built on the
// device out (engine/cuda/bulk_build.h). Host-only header, so that
// engine/table_factory.cc can call it without CUDA headers.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "gphkv/engine/table.h"

namespace gphkv::engine::cuda {

absl::StatusOr<std::unique_ptr<Table>> bulk_build_table(const TableOptions& options, absl::Span<const KeyValue> base,
                                                        absl::Span<const WriteOp> burst, BuildStats* stats, int device);

}  // namespace gphkv::engine::cuda

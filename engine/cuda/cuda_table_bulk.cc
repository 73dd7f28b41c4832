// CudaTable's bulk loads: the device bulk build (bulk_build.h) into the table.
#include "engine/cuda/bulk_table.h"
#include "engine/cuda/cuda_table.h"
#include "gphkv/cuda/status.h"

namespace gphkv::engine::cuda {

using ::gphkv::cuda::StreamScratch;

absl::Status CudaTable::bulk_load_async_base(const BulkBase& base, uint64_t input_pairs, const WriteOp* burst,
                                             uint64_t n_burst, cudaStream_t stream, BuildStats* stats,
                                             const BulkBuildConfig& config) {
  GPHKV_CUDA_TRY(cudaSetDevice(device_));
  absl::Status st = bulk_build_device(view(), base, burst, n_burst, input_pairs, config, stream, stats);
  if (!st.ok()) {
    cudaStreamSynchronize(stream);
    return st;
  }
  return synchronize(stream);  // size() and the fault flag of the placement
}

absl::Status CudaTable::bulk_load(const KeyValue* base, uint64_t n, const WriteOp* burst, uint64_t n_burst,
                                  cudaStream_t stream, BuildStats* stats, const BulkBuildConfig& config) {
  return bulk_load_async_base(BulkBase::pairs(base, n), n, burst, n_burst, stream, stats, config);
}

absl::Status CudaTable::bulk_load_from(const CudaTable& source, const WriteOp* burst, uint64_t n_burst,
                                       cudaStream_t stream, BuildStats* stats, const BulkBuildConfig& config) {
  if (source.device_ != device_) {
    return absl::InvalidArgumentError("bulk_load_from: the source table lives on another device");
  }
  if (&source == this) return absl::InvalidArgumentError("bulk_load_from: a table cannot rebuild into itself");
  return bulk_load_async_base(BulkBase::slots(source.slots_.get(), source.geo_.num_slots(), source.oob_.get()),
                              source.size_, burst, n_burst, stream, stats, config);
}

absl::Status CudaTable::bulk_load(absl::Span<const KeyValue> base, absl::Span<const WriteOp> burst, BuildStats* stats) {
  GPHKV_CUDA_TRY(cudaSetDevice(device_));
  // The build runs on a stream of its own at the least priority, so that the
  // serving table's work (its stream is at the greatest) goes first while an
  // ElasticTable rebuild runs in the background; nothing here touches the
  // legacy default stream or waits for the device.
  int least = 0, greatest = 0;
  GPHKV_CUDA_TRY(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  cudaStream_t build = nullptr;
  GPHKV_CUDA_TRY(cudaStreamCreateWithPriority(&build, cudaStreamNonBlocking, least));
  absl::Status st = [&]() -> absl::Status {
    StreamScratch scratch(build);
    const size_t o_base = scratch.reserve<KeyValue>(base.size());
    const size_t o_burst = scratch.reserve<WriteOp>(burst.size());
    GPHKV_RETURN_IF_ERROR(scratch.allocate());
    auto* d_base = scratch.at<KeyValue>(o_base);
    auto* d_burst = scratch.at<WriteOp>(o_burst);
    if (!base.empty()) {
      GPHKV_CUDA_TRY(
          cudaMemcpyAsync(d_base, base.data(), base.size() * sizeof(KeyValue), cudaMemcpyHostToDevice, build));
    }
    if (!burst.empty()) {
      GPHKV_CUDA_TRY(
          cudaMemcpyAsync(d_burst, burst.data(), burst.size() * sizeof(WriteOp), cudaMemcpyHostToDevice, build));
    }
    return bulk_load(d_base, base.size(), d_burst, burst.size(), build, stats, BulkBuildConfig{});
  }();
  cudaStreamSynchronize(build);
  cudaStreamDestroy(build);
  return st;
}

absl::StatusOr<std::unique_ptr<Table>> bulk_build_table(const TableOptions& options, absl::Span<const KeyValue> base,
                                                        absl::Span<const WriteOp> burst, BuildStats* stats,
                                                        int device) {
  auto table = CudaTable::create(options, device);
  if (!table.ok()) return table.status();
  BuildStats local;
  GPHKV_RETURN_IF_ERROR((*table)->bulk_load(base, burst, stats != nullptr ? stats : &local));
  return std::unique_ptr<Table>(std::move(*table));
}

}  // namespace gphkv::engine::cuda

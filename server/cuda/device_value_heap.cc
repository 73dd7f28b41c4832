#include "server/cuda/device_value_heap.h"

#include <algorithm>
#include <cstring>

#include "absl/numeric/bits.h"
#include "absl/strings/str_cat.h"
#include "gphkv/cuda/status.h"
#include "server/cuda/value_kernels.h"

namespace gphkv::server {
namespace {

// Staged per value for the place kernel: its handle, source and destination.
constexpr uint64_t kHeadBytes = 3 * sizeof(uint64_t);

uint64_t pages_for(uint64_t ids) { return (ids + DeviceLocations::kPageIds - 1) / DeviceLocations::kPageIds; }
// The directory grows by doubling from 64 entries (it is tiny: 8 bytes a page).
uint64_t directory_entries(uint64_t pages) { return pages == 0 ? 0 : std::max<uint64_t>(64, absl::bit_ceil(pages)); }

}  // namespace

absl::StatusOr<std::unique_ptr<DeviceValueHeap>> DeviceValueHeap::create(uint32_t max_value_bytes, int device) {
  if (max_value_bytes > value_handle::kMaxLength) {
    return absl::InvalidArgumentError(absl::StrCat("--max_value_bytes=", max_value_bytes,
                                                   " is over the device value heap's limit of ",
                                                   value_handle::kMaxLength, " bytes (the length field of a handle)"));
  }
  std::unique_ptr<DeviceValueHeap> h(new DeviceValueHeap(max_value_bytes, device));
  if (auto s = h->init(); !s.ok()) return s;
  return h;
}

DeviceValueHeap::DeviceValueHeap(uint32_t max_value_bytes, int device)
    : ExtentValueHeap(max_value_bytes, kMinChunkBytes), device_(device) {}

absl::Status DeviceValueHeap::init() {
  GPHKV_CUDA_TRY(cudaSetDevice(device_));
  // The greatest priority, as the table's stream: gets gather values here
  // while a background rebuild (least priority) may be running.
  int least = 0, greatest = 0;
  GPHKV_CUDA_TRY(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  GPHKV_CUDA_TRY(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, greatest));
  bulk_ = std::make_unique<cuda::DeviceBulkWrite>(device_, stream_);
  return absl::OkStatus();
}

DeviceValueHeap::~DeviceValueHeap() {
  // Destructor path: nothing useful to do with an error.
  cudaSetDevice(device_);
  bulk_.reset();  // waits for its copies, on the stream destroyed below
  if (stream_ != nullptr) {
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
  }
  unmap_all();
  for (char** page : pages_) cudaFree(page);
}

absl::StatusOr<char*> DeviceValueHeap::map_chunk() {
  GPHKV_CUDA_TRY(cudaSetDevice(device_));
  void* p = nullptr;
  GPHKV_CUDA_TRY(cudaMalloc(&p, chunk_bytes()));  // 256-byte aligned
  return static_cast<char*>(p);
}

void DeviceValueHeap::unmap_chunk(char* base) {
  // cudaFree waits for the device: trim() and a refused put's undo are the
  // only callers, neither on the path of a served get. An error here means
  // the device is lost; the next CUDA call reports it. Staged bulk writes
  // into the chunk are started first, so that cudaFree waits for them too.
  (void)settle_bulk();
  cudaSetDevice(device_);
  cudaFree(base);
}

uint64_t DeviceValueHeap::id_table_bytes(uint64_t ids) const {
  const uint64_t pages = pages_for(ids);
  return pages * DeviceLocations::kPageBytes + directory_entries(pages) * sizeof(char**);
}

absl::Status DeviceValueHeap::reserve_ids(uint64_t ids) {
  const uint64_t want = pages_for(ids);
  if (want <= pages_.size()) return absl::OkStatus();
  GPHKV_CUDA_TRY(cudaSetDevice(device_));
  const uint64_t had = pages_.size();
  while (pages_.size() < want) {
    void* p = nullptr;
    GPHKV_CUDA_TRY(cudaMalloc(&p, DeviceLocations::kPageBytes));
    pages_.push_back(static_cast<char**>(p));
  }
  if (directory_entries(want) != directory_.size()) {
    // A larger directory: the old one is freed once the kernels that read it
    // are done (DeviceArray's cudaFree waits for them).
    gphkv::cuda::DeviceArray<char**> grown;
    GPHKV_RETURN_IF_ERROR(grown.allocate(directory_entries(want)));
    GPHKV_CUDA_TRY(cudaMemcpy(grown.get(), pages_.data(), pages_.size() * sizeof(char**), cudaMemcpyHostToDevice));
    directory_ = std::move(grown);
  } else {
    GPHKV_CUDA_TRY(
        cudaMemcpy(directory_.get() + had, pages_.data() + had, (want - had) * sizeof(char**), cudaMemcpyHostToDevice));
  }
  return absl::OkStatus();
}

absl::Status DeviceValueHeap::place_staged(uint64_t n, uint64_t payload, bool moving) {
  const uint64_t head = kHeadBytes * n;
  GPHKV_CUDA_TRY(cudaMemcpyAsync(d_stage_.at(), stage_.data(), head + payload, cudaMemcpyHostToDevice, stream_));
  GPHKV_CUDA_TRY(cuda::launch_place(device_locations(), d_stage_.at<uint64_t>(), d_stage_.at<const char*>(8 * n),
                                    d_stage_.at<char*>(16 * n), n, moving, stream_));
  // The staging buffers are reused by the next round, and the caller
  // acknowledges the put (or writes into the vacated space) once this
  // returns: wait for the kernel.
  GPHKV_CUDA_TRY(cudaStreamSynchronize(stream_));
  return absl::OkStatus();
}

absl::Status DeviceValueHeap::write(absl::Span<const ValueHandle> handles, absl::Span<const std::string_view> bytes) {
  if (handles.size() != bytes.size()) return absl::InvalidArgumentError("write: handles and values differ in count");
  for (size_t i = 0; i < handles.size(); ++i) {
    if (bytes[i].size() != length(handles[i]))
      return absl::InvalidArgumentError("write: value length differs from its slot's");
  }
  GPHKV_CUDA_TRY(cudaSetDevice(device_));
  GPHKV_RETURN_IF_ERROR(settle_bulk());
  // Rounds of at most kStageBytes: [handles | sources | destinations | bytes],
  // the sources pointing into the staged bytes' device copy.
  size_t begin = 0;
  while (begin < handles.size()) {
    size_t end = begin;
    uint64_t payload = 0;
    while (end < handles.size()) {
      const uint64_t len = bytes[end].size();
      if (end > begin && kHeadBytes * (end - begin + 1) + payload + len > kStageBytes) break;
      payload += len;
      ++end;
    }
    const uint64_t n = end - begin;
    const uint64_t head = kHeadBytes * n;
    GPHKV_RETURN_IF_ERROR(stage_.reserve(head + payload));
    GPHKV_RETURN_IF_ERROR(d_stage_.reserve(head + payload));
    uint64_t* h = reinterpret_cast<uint64_t*>(stage_.data());
    const char** from = reinterpret_cast<const char**>(h + n);
    char** to = reinterpret_cast<char**>(h + 2 * n);
    char* data = stage_.data() + head;
    uint64_t at = 0;
    for (uint64_t i = 0; i < n; ++i) {
      const ValueHandle handle = handles[begin + i];
      h[i] = handle;
      from[i] = d_stage_.at(head + at);
      to[i] = address(handle);
      const std::string_view b = bytes[begin + i];
      if (!b.empty()) std::memcpy(data + at, b.data(), b.size());
      at += b.size();
    }
    GPHKV_RETURN_IF_ERROR(place_staged(n, payload, /*moving=*/false));
    begin = end;
  }
  return absl::OkStatus();
}

absl::Status DeviceValueHeap::write_bulk(absl::Span<const ValueHandle> handles,
                                         absl::Span<const std::string_view> bytes) {
  if (handles.size() != bytes.size()) return absl::InvalidArgumentError("write: handles and values differ in count");
  const DeviceLocations locations = device_locations();
  for (size_t i = 0; i < handles.size(); ++i) {
    const uint32_t len = length(handles[i]);
    if (bytes[i].size() != len) return absl::InvalidArgumentError("write: value length differs from its slot's");
    GPHKV_RETURN_IF_ERROR(
        bulk_->add(handles[i], bytes[i], address(handles[i]), chunk_of(handles[i]), extent_bytes(len), locations));
  }
  return absl::OkStatus();
}

absl::Status DeviceValueHeap::flush_writes() { return bulk_->flush(device_locations()); }

absl::Status DeviceValueHeap::move(absl::Span<const Move> moves, bool overlapping) {
  if (moves.empty()) return absl::OkStatus();
  GPHKV_RETURN_IF_ERROR(settle_bulk());
  if (!overlapping) return place_moves(moves);
  // The place kernel copies all values at once: values whose ranges overlap
  // go through scratch memory, each first to a place of its own there, then
  // on to its destination.
  uint64_t total = 0;
  for (const Move& m : moves) total += extent_bytes(length(m.handle));
  GPHKV_RETURN_IF_ERROR(d_out_.reserve(total));
  std::vector<Move> in(moves.begin(), moves.end()), out(moves.begin(), moves.end());
  uint64_t at = 0;
  for (size_t i = 0; i < moves.size(); ++i) {
    in[i].to = d_out_.at(at);
    out[i].from = d_out_.at(at);
    at += extent_bytes(length(moves[i].handle));
  }
  GPHKV_RETURN_IF_ERROR(place_moves(in));
  return place_moves(out);
}

absl::Status DeviceValueHeap::place_moves(absl::Span<const Move> moves) {
  GPHKV_CUDA_TRY(cudaSetDevice(device_));
  const uint64_t per_round = kStageBytes / kHeadBytes;
  for (size_t begin = 0; begin < moves.size(); begin += per_round) {
    const uint64_t n = std::min<uint64_t>(per_round, moves.size() - begin);
    GPHKV_RETURN_IF_ERROR(stage_.reserve(kHeadBytes * n));
    GPHKV_RETURN_IF_ERROR(d_stage_.reserve(kHeadBytes * n));
    uint64_t* h = reinterpret_cast<uint64_t*>(stage_.data());
    const char** from = reinterpret_cast<const char**>(h + n);
    char** to = reinterpret_cast<char**>(h + 2 * n);
    for (uint64_t i = 0; i < n; ++i) {
      h[i] = moves[begin + i].handle;
      from[i] = moves[begin + i].from;
      to[i] = moves[begin + i].to;
    }
    GPHKV_RETURN_IF_ERROR(place_staged(n, 0, /*moving=*/true));
  }
  return absl::OkStatus();
}

absl::Status DeviceValueHeap::gather(absl::Span<const ValueHandle> handles, std::string* out) const {
  const uint64_t n = handles.size();
  if (n == 0) return absl::OkStatus();
  GPHKV_CUDA_TRY(cudaSetDevice(device_));
  GPHKV_RETURN_IF_ERROR(settle_bulk());
  // Staged: handles (n), then offsets (n + 1: the gather takes each value's
  // length as the difference of its offsets).
  const uint64_t staged = 8 * (2 * n + 1);
  GPHKV_RETURN_IF_ERROR(stage_.reserve(staged));
  uint64_t* h = reinterpret_cast<uint64_t*>(stage_.data());
  uint64_t* off = h + n;
  uint64_t total = 0;
  for (uint64_t i = 0; i < n; ++i) {
    h[i] = handles[i];
    off[i] = total;
    total += value_handle::length(handles[i]);
  }
  off[n] = total;
  GPHKV_RETURN_IF_ERROR(d_stage_.reserve(staged));
  GPHKV_RETURN_IF_ERROR(d_out_.reserve(total));
  GPHKV_CUDA_TRY(cudaMemcpyAsync(d_stage_.at(), stage_.data(), staged, cudaMemcpyHostToDevice, stream_));
  GPHKV_CUDA_TRY(cuda::launch_gather(device_locations(), d_stage_.at<uint64_t>(), nullptr, d_stage_.at<uint64_t>(8 * n),
                                     n, d_out_.at(), total, nullptr, stream_));
  const size_t pos = out->size();
  out->resize(pos + total);
  if (total > 0) {
    GPHKV_CUDA_TRY(cudaMemcpyAsync(out->data() + pos, d_out_.at(), total, cudaMemcpyDeviceToHost, stream_));
  }
  GPHKV_CUDA_TRY(cudaStreamSynchronize(stream_));
  return absl::OkStatus();
}

absl::Status DeviceValueHeap::access(absl::Span<const ValueHandle> handles, cuda::AccessOp op,
                                     std::vector<uint8_t>* bits) {
  const uint64_t n = handles.size();
  if (bits != nullptr) bits->assign(n, 0);
  if (n == 0) return absl::OkStatus();
  GPHKV_CUDA_TRY(cudaSetDevice(device_));
  // A value still staged by a bulk write has no place entry yet.
  GPHKV_RETURN_IF_ERROR(settle_bulk());
  // Staged: handles (n), then the bits (n bytes) when read.
  const uint64_t staged = 8 * n + (bits != nullptr ? n : 0);
  GPHKV_RETURN_IF_ERROR(stage_.reserve(staged));
  GPHKV_RETURN_IF_ERROR(d_stage_.reserve(staged));
  std::memcpy(stage_.data(), handles.data(), 8 * n);
  GPHKV_CUDA_TRY(cudaMemcpyAsync(d_stage_.at(), stage_.data(), 8 * n, cudaMemcpyHostToDevice, stream_));
  uint8_t* d_bits = bits != nullptr ? d_stage_.at<uint8_t>(8 * n) : nullptr;
  GPHKV_CUDA_TRY(cuda::launch_access(device_locations(), d_stage_.at<uint64_t>(), n, op, d_bits, stream_));
  if (bits != nullptr) {
    GPHKV_CUDA_TRY(cudaMemcpyAsync(stage_.data() + 8 * n, d_bits, n, cudaMemcpyDeviceToHost, stream_));
  }
  GPHKV_CUDA_TRY(cudaStreamSynchronize(stream_));
  if (bits != nullptr) std::memcpy(bits->data(), stage_.data() + 8 * n, n);
  return absl::OkStatus();
}

absl::Status DeviceValueHeap::mark_accessed(absl::Span<const ValueHandle> handles) {
  return access(handles, cuda::AccessOp::kMark, nullptr);
}

absl::Status DeviceValueHeap::read_accessed(absl::Span<const ValueHandle> handles, std::vector<uint8_t>* bits) {
  return access(handles, cuda::AccessOp::kRead, bits);
}

absl::Status DeviceValueHeap::clear_accessed(absl::Span<const ValueHandle> handles) {
  return access(handles, cuda::AccessOp::kClear, nullptr);
}

}  // namespace gphkv::server

#include "server/cuda/device_value_heap.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "gphkv/cuda/status.h"
#include "server/cuda/value_kernels.h"

namespace gphkv::server {

namespace dh = device_handle;

absl::StatusOr<std::unique_ptr<DeviceValueHeap>> DeviceValueHeap::create(uint32_t max_value_bytes, int device) {
  if (max_value_bytes > dh::kMaxLength) {
    return absl::InvalidArgumentError(absl::StrCat("--max_value_bytes=", max_value_bytes,
                                                   " is over the device value heap's limit of ", dh::kMaxLength,
                                                   " bytes (the length field of a handle)"));
  }
  std::unique_ptr<DeviceValueHeap> h(new DeviceValueHeap(max_value_bytes, device));
  if (auto s = h->init(); !s.ok()) return s;
  return h;
}

DeviceValueHeap::DeviceValueHeap(uint32_t max_value_bytes, int device)
    : max_value_bytes_(max_value_bytes), device_(device) {
  for (uint32_t bytes : value_size_classes(max_value_bytes)) {
    SizeClass c;
    c.slot_bytes = bytes;
    c.slots_per_slab = static_cast<uint32_t>(std::max<uint64_t>(1, kMinSlabBytes / bytes));
    classes_.push_back(std::move(c));
  }
}

absl::Status DeviceValueHeap::init() {
  static_assert(kMinSlabBytes / kMinClassBytes <= dh::kMaxSlotsPerSlab, "slot index must fit its handle field");
  GPHKV_CUDA_TRY(cudaSetDevice(device_));
  // The greatest priority, as the table's stream: gets gather values here
  // while a background rebuild (least priority) may be running.
  int least = 0, greatest = 0;
  GPHKV_CUDA_TRY(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  GPHKV_CUDA_TRY(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, greatest));
  return absl::OkStatus();
}

DeviceValueHeap::~DeviceValueHeap() {
  cudaSetDevice(device_);
  if (stream_ != nullptr) {
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
  }
  for (const DeviceSlab& s : slabs_) cudaFree(s.base);
}

uint32_t DeviceValueHeap::class_of(uint32_t length) const { return size_classes::class_of(classes_, length); }

uint32_t DeviceValueHeap::max_live_slot_bytes() const {
  for (size_t i = classes_.size(); i-- > 0;) {
    if (classes_[i].live > 0) return classes_[i].slot_bytes;
  }
  return 0;
}

absl::Status DeviceValueHeap::add_slab(uint32_t size_class) {
  SizeClass& c = classes_[size_class];
  if (slabs_.size() >= dh::kMaxSlabs) return absl::ResourceExhaustedError("device value heap: out of slab ids");
  const uint64_t bytes = static_cast<uint64_t>(c.slot_bytes) * c.slots_per_slab;
  GPHKV_CUDA_TRY(cudaSetDevice(device_));
  void* p = nullptr;
  GPHKV_CUDA_TRY(cudaMalloc(&p, bytes));
  const uint64_t id = slabs_.size();
  slabs_.push_back(DeviceSlab{static_cast<char*>(p), c.slot_bytes, size_class});
  reserved_ += bytes;
  // The device copy of the slab table: grown by doubling, the new entry
  // copied synchronously (a slab is added rarely; kernels that use the
  // handle run after this returns).
  if (slabs_.size() > d_slabs_capacity_) {
    const uint64_t cap = std::max<uint64_t>(64, 2 * d_slabs_capacity_);
    cuda::DeviceBytes grown;
    GPHKV_RETURN_IF_ERROR(grown.reserve(cap * sizeof(DeviceSlab)));
    GPHKV_CUDA_TRY(cudaMemcpy(grown.at(), slabs_.data(), slabs_.size() * sizeof(DeviceSlab), cudaMemcpyHostToDevice));
    std::swap(grown, d_slabs_);
    d_slabs_capacity_ = cap;
  } else {
    GPHKV_CUDA_TRY(cudaMemcpy(d_slabs_.at<DeviceSlab>() + id, &slabs_[id], sizeof(DeviceSlab), cudaMemcpyHostToDevice));
  }
  // Reverse order: the lowest slot is handed out first.
  for (uint64_t s = c.slots_per_slab; s-- > 0;) c.free_slots.push_back(dh::make(0, id, s));
  return absl::OkStatus();
}

absl::Status DeviceValueHeap::allocate_slots(absl::Span<const uint32_t> lengths, std::vector<ValueHandle>* handles) {
  // Checked first, so that a refusal changes nothing (no slab reserved either).
  auto plan = size_classes::plan(classes_, lengths, max_value_bytes_);
  if (!plan.ok()) return plan.status();
  const std::vector<uint64_t>& need = plan->need;
  const uint64_t grow = plan->new_bytes, new_slabs = plan->new_slabs;
  if (grow > 0 && reserved_ + grow > limit_) {
    return absl::ResourceExhaustedError(absl::StrCat("value heap needs ", grow, " more bytes of device memory for ",
                                                     lengths.size(), " values but holds ", reserved_, " of the ",
                                                     limit_, " bytes that --memory leaves it"));
  }
  if (slabs_.size() + new_slabs > dh::kMaxSlabs) {
    return absl::ResourceExhaustedError("device value heap: out of slab ids");
  }
  for (size_t ci = 0; ci < classes_.size(); ++ci) {
    while (need[ci] > classes_[ci].free_slots.size()) {
      // A failed cudaMalloc leaves the slabs added so far reserved (usable
      // by later puts) and refuses this batch before any slot is taken.
      GPHKV_RETURN_IF_ERROR(add_slab(static_cast<uint32_t>(ci)));
    }
  }
  for (uint32_t len : lengths) {
    SizeClass& c = classes_[class_of(len)];
    const uint64_t id = c.free_slots.back();
    c.free_slots.pop_back();
    ++c.live;
    used_ += c.slot_bytes;
    ++live_;
    handles->push_back(id | (static_cast<uint64_t>(len) << dh::kLengthShift));
  }
  return absl::OkStatus();
}

absl::StatusOr<ValueHandle> DeviceValueHeap::allocate(std::string_view bytes) {
  if (bytes.size() > max_value_bytes_) {
    return absl::InvalidArgumentError(
        absl::StrCat("value of ", bytes.size(), " bytes is over the limit of ", max_value_bytes_, " bytes"));
  }
  std::vector<ValueHandle> h;
  const uint32_t len = static_cast<uint32_t>(bytes.size());
  GPHKV_RETURN_IF_ERROR(allocate_slots({&len, 1}, &h));
  if (auto s = write(h, {&bytes, 1}); !s.ok()) {
    release(h[0]);
    return s;
  }
  return h[0];
}

void DeviceValueHeap::release(ValueHandle handle) {
  const DeviceSlab& s = slabs_[dh::slab(handle)];
  SizeClass& c = classes_[s.size_class];
  c.free_slots.push_back(handle & dh::kSlotIdMask);
  --c.live;
  used_ -= c.slot_bytes;
  --live_;
}

absl::Status DeviceValueHeap::write(absl::Span<const ValueHandle> handles, absl::Span<const std::string_view> bytes) {
  if (handles.size() != bytes.size()) return absl::InvalidArgumentError("write: handles and values differ in count");
  GPHKV_CUDA_TRY(cudaSetDevice(device_));
  // Chunks of at most kStageBytes: [handles | source offsets | bytes].
  size_t begin = 0;
  while (begin < handles.size()) {
    size_t end = begin;
    uint64_t payload = 0;
    while (end < handles.size()) {
      const uint64_t len = bytes[end].size();
      if (len != dh::length(handles[end])) return absl::InvalidArgumentError("write: value length differs from its slot's");
      if (end > begin && 16 * (end - begin + 1) + payload + len > kStageBytes) break;
      payload += len;
      ++end;
    }
    const uint64_t n = end - begin;
    const uint64_t head = 16 * n;
    GPHKV_RETURN_IF_ERROR(stage_.reserve(head + payload));
    GPHKV_RETURN_IF_ERROR(d_stage_.reserve(head + payload));
    char* p = stage_.data();
    uint64_t* h = reinterpret_cast<uint64_t*>(p);
    uint64_t* off = h + n;
    char* data = p + head;
    uint64_t at = 0;
    for (uint64_t i = 0; i < n; ++i) {
      h[i] = handles[begin + i];
      off[i] = at;
      if (!bytes[begin + i].empty()) std::memcpy(data + at, bytes[begin + i].data(), bytes[begin + i].size());
      at += bytes[begin + i].size();
    }
    GPHKV_CUDA_TRY(cudaMemcpyAsync(d_stage_.at(), p, head + payload, cudaMemcpyHostToDevice, stream_));
    GPHKV_CUDA_TRY(cuda::launch_scatter(device_slabs(), d_stage_.at<uint64_t>(), d_stage_.at<uint64_t>(8 * n),
                                        d_stage_.at(head), n, stream_));
    // The staging buffer is reused by the next chunk, and the caller
    // acknowledges the put once this returns: wait for the scatter.
    GPHKV_CUDA_TRY(cudaStreamSynchronize(stream_));
    begin = end;
  }
  return absl::OkStatus();
}

absl::Status DeviceValueHeap::gather(absl::Span<const ValueHandle> handles, std::string* out) const {
  const uint64_t n = handles.size();
  if (n == 0) return absl::OkStatus();
  GPHKV_CUDA_TRY(cudaSetDevice(device_));
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
    total += dh::length(handles[i]);
  }
  off[n] = total;
  GPHKV_RETURN_IF_ERROR(d_stage_.reserve(staged));
  GPHKV_RETURN_IF_ERROR(d_out_.reserve(total));
  GPHKV_CUDA_TRY(cudaMemcpyAsync(d_stage_.at(), stage_.data(), staged, cudaMemcpyHostToDevice, stream_));
  GPHKV_CUDA_TRY(cuda::launch_gather(device_slabs(), d_stage_.at<uint64_t>(), d_stage_.at<uint64_t>(8 * n), n,
                                     d_out_.at(), total, nullptr, stream_));
  const size_t pos = out->size();
  out->resize(pos + total);
  if (total > 0) {
    GPHKV_CUDA_TRY(cudaMemcpyAsync(out->data() + pos, d_out_.at(), total, cudaMemcpyDeviceToHost, stream_));
  }
  GPHKV_CUDA_TRY(cudaStreamSynchronize(stream_));
  return absl::OkStatus();
}

}  // namespace gphkv::server

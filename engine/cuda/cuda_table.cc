#include "engine/cuda/cuda_table.h"

#include <algorithm>
#include <cstring>

#include "engine/cuda/batch_sort.h"
#include "engine/cuda/erase.h"
#include "engine/cuda/insert.h"
#include "engine/cuda/key_export.h"
#include "engine/cuda/lookup.h"
#include "engine/cuda/refinement_lanes.h"
#include "engine/cuda/slot_clear.h"
#include "engine/cuda/spill_marks.h"
#include "gphkv/cuda/status.h"

namespace gphkv::engine {

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the error so later calls start clean
    return 0;
  }
  return n;
}

std::string cuda_device_name(int device) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    (void)cudaGetLastError();  // clear it: the caller falls back to "cuda:N"
    return "";
  }
  return prop.name;
}

absl::StatusOr<std::unique_ptr<Table>> make_cuda_table(const TableOptions& options, int device) {
  auto table = cuda::CudaTable::create(options, device);
  if (!table.ok()) return table.status();
  return std::unique_ptr<Table>(std::move(*table));
}

namespace cuda {
namespace {

using ::gphkv::cuda::cuda_status;
using ::gphkv::cuda::StreamScratch;

// The striped bucket locks of Refinement: enough that unrelated transactions
// rarely share one, few enough to stay small (16 MiB at most).
constexpr uint64_t kMaxLocks = uint64_t{1} << 22;

absl::Status size_mismatch(const char* op, size_t keys, const char* what, size_t got) {
  return absl::InvalidArgumentError(
      absl::StrCat(op, ": ", keys, " keys but ", got, " ", what, "; the spans must be equally long"));
}

absl::Status check_batch(const char* op, uint64_t n) {
  // cub's sort and the overflow list index batch positions with 32 bits.
  if (n > INT32_MAX) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": a batch holds at most ", INT32_MAX, " keys, got ", n));
  }
  return absl::OkStatus();
}

// Where a batch's repeats are found, sorted (batch_sort.h) or grouped
// (batch_groups.h), in a StreamScratch: reserve() before the scratch is
// allocated, bind() after. Grouping needs neither the sorted keys nor cub's
// scratch; sorting needs no set.
class BatchOrderLayout {
 public:
  absl::Status reserve(StreamScratch& scratch, uint64_t n, bool grouped) {
    grouped_ = grouped;
    if (grouped) {
      capacity_ = batch_group_capacity(n);
      owner_ = scratch.reserve<uint32_t>(capacity_);
      last_ = scratch.reserve<uint32_t>(capacity_);
      lead_ = scratch.reserve<uint32_t>(n);
      index_ = scratch.reserve<uint32_t>(n);
      return absl::OkStatus();
    }
    GPHKV_CUDA_TRY(sort_batch_temp_bytes(n, &temp_bytes_));
    keys_ = scratch.reserve<uint64_t>(n);
    index_ = scratch.reserve<uint32_t>(n);
    index_tmp_ = scratch.reserve<uint32_t>(n);
    temp_ = scratch.reserve<uint8_t>(temp_bytes_);
    return absl::OkStatus();
  }
  SortedBatch sorted(const StreamScratch& scratch) const {
    if (grouped_) return SortedBatch{};
    return SortedBatch{scratch.at<uint64_t>(keys_), scratch.at<uint32_t>(index_), scratch.at<uint32_t>(index_tmp_),
                       scratch.at<void>(temp_), temp_bytes_};
  }
  GroupedBatch grouped(const StreamScratch& scratch) const {
    if (!grouped_) return GroupedBatch{};
    return GroupedBatch{scratch.at<uint32_t>(owner_), scratch.at<uint32_t>(last_), scratch.at<uint32_t>(lead_),
                        scratch.at<uint32_t>(index_), capacity_};
  }

 private:
  bool grouped_ = false;
  size_t keys_ = 0, index_ = 0, index_tmp_ = 0, temp_ = 0, temp_bytes_ = 0;
  size_t owner_ = 0, last_ = 0, lead_ = 0;
  uint64_t capacity_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<CudaTable>> CudaTable::create(const TableOptions& options, int device) {
  const int count = cuda_device_count();
  if (count == 0) {
    int n = 0;
    return cuda_status(cudaGetDeviceCount(&n) == cudaSuccess ? cudaErrorNoDevice : cudaGetLastError(),
                       "cudaGetDeviceCount", __FILE__, __LINE__);
  }
  if (device < 0 || device >= count) {
    return absl::InvalidArgumentError(absl::StrCat("CUDA device ", device, " requested, ", count, " present"));
  }
  auto geometry = make_geometry(options);
  if (!geometry.ok()) return geometry.status();
  std::unique_ptr<CudaTable> t(new CudaTable(options, *geometry, device));
  GPHKV_RETURN_IF_ERROR(t->init());
  return t;
}

CudaTable::CudaTable(const TableOptions& options, const gph::Geometry& geometry, int device)
    : options_(options), geo_(geometry), device_(device) {}

CudaTable::~CudaTable() {
  if (stream_ != nullptr) {
    cudaSetDevice(device_);
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
  }
}

absl::Status CudaTable::init() {
  GPHKV_CUDA_TRY(cudaSetDevice(device_));
  // The table's own stream at the greatest priority: while a bulk build runs
  // at the least (bulk_load), the block scheduler serves this table's lookups
  // first (docs/gph.md, "Bulk build": lookups during a rebuild).
  int least = 0, greatest = 0;
  GPHKV_CUDA_TRY(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  GPHKV_CUDA_TRY(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, greatest));
  // Keep freed batch scratch in the stream-ordered pool instead of handing it
  // back to the driver at every synchronization.
  cudaMemPool_t pool;
  GPHKV_CUDA_TRY(cudaDeviceGetDefaultMemPool(&pool, device_));
  uint64_t keep = UINT64_MAX;
  GPHKV_CUDA_TRY(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  int sms = 0;
  GPHKV_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device_));
  int l2 = 0;
  GPHKV_CUDA_TRY(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device_));
  l2_bytes_ = static_cast<uint64_t>(l2);
  GPHKV_CUDA_TRY(prepare_refinement(geo_, sms, default_refinement_kernel(geo_), &refinement_shape_));

  uint64_t locks = 1;
  while (locks < std::min<uint64_t>(geo_.num_buckets, kMaxLocks)) locks <<= 1;
  GPHKV_RETURN_IF_ERROR(cells_.allocate(cell_index_bytes(geo_.num_cells)));
  GPHKV_RETURN_IF_ERROR(slots_.allocate(2 * geo_.num_slots()));
  GPHKV_RETURN_IF_ERROR(spill_.allocate(spill_words(geo_)));
  GPHKV_RETURN_IF_ERROR(oob_.allocate(1));
  GPHKV_RETURN_IF_ERROR(counters_.allocate(1));
  GPHKV_RETURN_IF_ERROR(locks_.allocate(locks));
  GPHKV_CUDA_TRY(cudaMemsetAsync(locks_.get(), 0, locks_.bytes(), stream_));
  GPHKV_CUDA_TRY(cudaMemsetAsync(counters_.get(), 0, counters_.bytes(), stream_));
  GPHKV_RETURN_IF_ERROR(reset_contents(stream_));
  GPHKV_CUDA_TRY(cudaStreamSynchronize(stream_));
  return absl::OkStatus();
}

uint64_t CudaTable::device_bytes() const { return cells_.bytes() + slots_.bytes() + spill_.bytes() + locks_.bytes(); }

absl::Status CudaTable::reset_contents(cudaStream_t stream) {
  gphkv::cuda::clear_stale_launch_error();  // the slot clear's launch check reads it
  GPHKV_CUDA_TRY(cudaMemsetAsync(cells_.get(), 0, cells_.bytes(), stream));
  GPHKV_CUDA_TRY(launch_clear_slots(slots_.get(), geo_.num_slots(), stream));
  GPHKV_CUDA_TRY(cudaMemsetAsync(spill_.get(), 0, spill_.bytes(), stream));
  GPHKV_CUDA_TRY(cudaMemsetAsync(oob_.get(), 0, oob_.bytes(), stream));
  GPHKV_CUDA_TRY(cudaMemsetAsync(&counters_.get()->size, 0, sizeof(unsigned long long), stream));
  return absl::OkStatus();
}

DeviceTable CudaTable::view() const {
  DeviceTable t;
  t.geo = geo_;
  t.cells = cells_.get();
  t.slots = slots_.get();
  t.spill = spill_.get();
  t.oob = oob_.get();
  t.size = &counters_.get()->size;
  t.locks = locks_.get();
  t.lock_mask = static_cast<uint32_t>(locks_.size() - 1);
  t.fault = &counters_.get()->fault;
  t.stats = &counters_.get()->stats;
  return t;
}

template <class Body>
absl::Status CudaTable::run_sync(Body&& body) {
  GPHKV_CUDA_TRY(cudaSetDevice(device_));
  absl::Status st = body();
  if (st.ok()) return synchronize(stream_);
  cudaStreamSynchronize(stream_);
  return st;
}

absl::Status CudaTable::synchronize(cudaStream_t stream) {
  GPHKV_CUDA_TRY(cudaSetDevice(device_));
  Counters host{};
  GPHKV_CUDA_TRY(cudaMemcpyAsync(&host, counters_.get(), sizeof(host), cudaMemcpyDeviceToHost, stream));
  GPHKV_CUDA_TRY(cudaStreamSynchronize(stream));
  size_ = host.size;
  stats_ = host.stats;
  if (host.fault != 0) {
    return absl::InternalError(
        absl::StrCat("CUDA table: ", host.fault, " Extended Move placement(s) found no vacant slot (a bug)"));
  }
  return absl::OkStatus();
}

// ---- stream-ordered device API ----

absl::Status CudaTable::find_async(const uint64_t* keys, uint64_t n, uint64_t* values, uint8_t* found,
                                   cudaStream_t stream) {
  GPHKV_CUDA_TRY(cudaSetDevice(device_));
  gphkv::cuda::clear_stale_launch_error();  // CUB's size queries and our launch checks read it
  GPHKV_CUDA_TRY(launch_lookup(view(), keys, n, values, found, stream));
  return absl::OkStatus();
}

bool CudaTable::groups_repeats(uint64_t n) const {
  switch (refinement_shape_.variants.repeats) {
    case RepeatFinder::kSort: return false;
    case RepeatFinder::kGroup: return true;
    case RepeatFinder::kBySize: break;
  }
  return batch_groups_fit(n, l2_bytes_);
}

absl::Status CudaTable::insert_or_assign_async(const uint64_t* keys, const uint64_t* values, uint64_t n,
                                               UpsertOutcome* outcomes, cudaStream_t stream) {
  GPHKV_RETURN_IF_ERROR(check_batch("insert_or_assign", n));
  if (n == 0) return absl::OkStatus();
  GPHKV_CUDA_TRY(cudaSetDevice(device_));
  gphkv::cuda::clear_stale_launch_error();  // CUB's size queries and our launch checks read it
  StreamScratch scratch(stream);
  BatchOrderLayout order;
  GPHKV_RETURN_IF_ERROR(order.reserve(scratch, n, groups_repeats(n)));
  const size_t o_status = scratch.reserve<uint8_t>(n);
  const size_t o_overflow = scratch.reserve<uint2>(n);
  const size_t o_count = scratch.reserve<uint32_t>(1);  // InsertScratch::overflow_count
  GPHKV_RETURN_IF_ERROR(scratch.allocate());
  InsertScratch s{};
  s.sorted = order.sorted(scratch);
  s.grouped = order.grouped(scratch);
  s.status = scratch.at<uint8_t>(o_status);
  s.overflow = scratch.at<uint2>(o_overflow);
  s.overflow_count = scratch.at<uint32_t>(o_count);
  static_assert(sizeof(UpsertOutcome) == 1, "outcomes are written as bytes");
  GPHKV_CUDA_TRY(
      launch_insert(view(), keys, values, n, reinterpret_cast<uint8_t*>(outcomes), s, refinement_shape_, stream));
  return absl::OkStatus();
}

absl::Status CudaTable::erase_async(const uint64_t* keys, uint64_t n, uint8_t* erased, cudaStream_t stream) {
  GPHKV_RETURN_IF_ERROR(check_batch("erase", n));
  if (n == 0) return absl::OkStatus();
  GPHKV_CUDA_TRY(cudaSetDevice(device_));
  gphkv::cuda::clear_stale_launch_error();  // CUB's size queries and our launch checks read it
  StreamScratch scratch(stream);
  BatchOrderLayout order;
  GPHKV_RETURN_IF_ERROR(order.reserve(scratch, n, groups_repeats(n)));
  GPHKV_RETURN_IF_ERROR(scratch.allocate());
  GPHKV_CUDA_TRY(launch_erase(view(), keys, n, erased, order.sorted(scratch), order.grouped(scratch), stream));
  return absl::OkStatus();
}

// ---- the synchronous Table interface: copy in, launch, copy out ----

absl::Status CudaTable::find(absl::Span<const uint64_t> keys, absl::Span<uint64_t> values, absl::Span<uint8_t> found) {
  if (values.size() != keys.size()) return size_mismatch("find", keys.size(), "values", values.size());
  if (found.size() != keys.size()) return size_mismatch("find", keys.size(), "found flags", found.size());
  const uint64_t n = keys.size();
  if (n == 0) return absl::OkStatus();
  std::vector<uint64_t> got(n);
  absl::Status st = run_sync([&]() -> absl::Status {
    StreamScratch scratch(stream_);
    const size_t o_keys = scratch.reserve<uint64_t>(n);
    const size_t o_values = scratch.reserve<uint64_t>(n);
    const size_t o_found = scratch.reserve<uint8_t>(n);
    GPHKV_RETURN_IF_ERROR(scratch.allocate());
    uint64_t* d_keys = scratch.at<uint64_t>(o_keys);
    uint64_t* d_values = scratch.at<uint64_t>(o_values);
    uint8_t* d_found = scratch.at<uint8_t>(o_found);
    GPHKV_CUDA_TRY(cudaMemcpyAsync(d_keys, keys.data(), n * 8, cudaMemcpyHostToDevice, stream_));
    GPHKV_RETURN_IF_ERROR(find_async(d_keys, n, d_values, d_found, stream_));
    GPHKV_CUDA_TRY(cudaMemcpyAsync(got.data(), d_values, n * 8, cudaMemcpyDeviceToHost, stream_));
    GPHKV_CUDA_TRY(cudaMemcpyAsync(found.data(), d_found, n, cudaMemcpyDeviceToHost, stream_));
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  for (uint64_t i = 0; i < n; ++i) {
    if (found[i]) values[i] = got[i];  // values of misses stay untouched
  }
  return absl::OkStatus();
}

absl::Status CudaTable::insert_or_assign(absl::Span<const uint64_t> keys, absl::Span<const uint64_t> values,
                                         absl::Span<UpsertOutcome> outcomes) {
  if (values.size() != keys.size()) return size_mismatch("insert_or_assign", keys.size(), "values", values.size());
  if (outcomes.size() != keys.size()) {
    return size_mismatch("insert_or_assign", keys.size(), "outcomes", outcomes.size());
  }
  GPHKV_RETURN_IF_ERROR(check_batch("insert_or_assign", keys.size()));
  const uint64_t n = keys.size();
  if (n == 0) return absl::OkStatus();
  return run_sync([&]() -> absl::Status {
    StreamScratch scratch(stream_);
    const size_t o_keys = scratch.reserve<uint64_t>(n);
    const size_t o_values = scratch.reserve<uint64_t>(n);
    const size_t o_out = scratch.reserve<uint8_t>(n);
    GPHKV_RETURN_IF_ERROR(scratch.allocate());
    uint64_t* d_keys = scratch.at<uint64_t>(o_keys);
    uint64_t* d_values = scratch.at<uint64_t>(o_values);
    auto* d_out = scratch.at<UpsertOutcome>(o_out);
    GPHKV_CUDA_TRY(cudaMemcpyAsync(d_keys, keys.data(), n * 8, cudaMemcpyHostToDevice, stream_));
    GPHKV_CUDA_TRY(cudaMemcpyAsync(d_values, values.data(), n * 8, cudaMemcpyHostToDevice, stream_));
    GPHKV_RETURN_IF_ERROR(insert_or_assign_async(d_keys, d_values, n, d_out, stream_));
    GPHKV_CUDA_TRY(cudaMemcpyAsync(outcomes.data(), d_out, n, cudaMemcpyDeviceToHost, stream_));
    return absl::OkStatus();
  });
}

absl::Status CudaTable::erase(absl::Span<const uint64_t> keys, absl::Span<uint8_t> erased) {
  if (erased.size() != keys.size()) return size_mismatch("erase", keys.size(), "erased flags", erased.size());
  GPHKV_RETURN_IF_ERROR(check_batch("erase", keys.size()));
  const uint64_t n = keys.size();
  if (n == 0) return absl::OkStatus();
  return run_sync([&]() -> absl::Status {
    StreamScratch scratch(stream_);
    const size_t o_keys = scratch.reserve<uint64_t>(n);
    const size_t o_out = scratch.reserve<uint8_t>(n);
    GPHKV_RETURN_IF_ERROR(scratch.allocate());
    uint64_t* d_keys = scratch.at<uint64_t>(o_keys);
    uint8_t* d_out = scratch.at<uint8_t>(o_out);
    GPHKV_CUDA_TRY(cudaMemcpyAsync(d_keys, keys.data(), n * 8, cudaMemcpyHostToDevice, stream_));
    GPHKV_RETURN_IF_ERROR(erase_async(d_keys, n, d_out, stream_));
    GPHKV_CUDA_TRY(cudaMemcpyAsync(erased.data(), d_out, n, cudaMemcpyDeviceToHost, stream_));
    return absl::OkStatus();
  });
}

absl::Status CudaTable::set_refinement_kernel(RefinementKernel kernel) {
  if (kernel == RefinementKernel::kLanes && !lanes_refinement_fits(geo_)) {
    return absl::InvalidArgumentError("the lanes Refinement kernel needs R = 8 and M = 8 or 16");
  }
  GPHKV_CUDA_TRY(cudaSetDevice(device_));
  int sms = 0;
  GPHKV_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device_));
  RefinementShape shape;
  GPHKV_CUDA_TRY(prepare_refinement(geo_, sms, kernel, &shape));
  shape.variants = refinement_shape_.variants;
  refinement_shape_ = shape;
  return absl::OkStatus();
}

absl::Status CudaTable::clear() {
  return run_sync([&]() { return reset_contents(stream_); });
}

absl::Status CudaTable::copy_to_host(std::vector<uint64_t>* slots, std::vector<uint8_t>* cells,
                                     OutOfBandSlot* oob) const {
  GPHKV_CUDA_TRY(cudaSetDevice(device_));
  slots->resize(slots_.size());
  // The table's own stream: ordered after every synchronous operation.
  std::vector<uint8_t> index(cells != nullptr ? cells_.size() : 0);
  if (cells != nullptr) {
    GPHKV_CUDA_TRY(cudaMemcpyAsync(index.data(), cells_.get(), cells_.bytes(), cudaMemcpyDeviceToHost, stream_));
  }
  GPHKV_CUDA_TRY(cudaMemcpyAsync(slots->data(), slots_.get(), slots_.bytes(), cudaMemcpyDeviceToHost, stream_));
  GPHKV_CUDA_TRY(cudaMemcpyAsync(oob, oob_.get(), sizeof(*oob), cudaMemcpyDeviceToHost, stream_));
  GPHKV_CUDA_TRY(cudaStreamSynchronize(stream_));
  if (cells != nullptr) {  // a byte a cell, without the groups' flags (device_table.cuh, "Cell groups")
    cells->resize(geo_.num_cells);
    for (uint32_t c = 0; c < geo_.num_cells; ++c) (*cells)[c] = index[cell_byte_at(c)];
  }
  return absl::OkStatus();
}

absl::StatusOr<TableImage> CudaTable::image() const {
  TableImage img;
  img.geometry = geo_;
  std::vector<uint64_t> slots;
  OutOfBandSlot oob{};
  GPHKV_RETURN_IF_ERROR(copy_to_host(&slots, &img.cells, &oob));
  img.keys.resize(geo_.num_slots());
  img.values.resize(geo_.num_slots());
  for (uint64_t s = 0; s < geo_.num_slots(); ++s) {
    img.keys[s] = slots[2 * s];
    img.values[s] = slots[2 * s + 1];
  }
  img.has_empty_key = oob.present != 0;
  img.empty_key_value = oob.value;
  return img;
}

absl::Status CudaTable::load_image(const TableImage& img) {
  if (!same_addressing(img.geometry, geo_) || img.cells.size() != geo_.num_cells ||
      img.keys.size() != geo_.num_slots() || img.values.size() != geo_.num_slots()) {
    return absl::InvalidArgumentError("load_image: the image's geometry differs from the table's");
  }
  const unsigned long long count = (img.has_empty_key ? 1 : 0) + static_cast<unsigned long long>(std::count_if(
                                                                     img.keys.begin(), img.keys.end(),
                                                                     [](uint64_t k) { return k != gph::kEmptyKey; }));
  const OutOfBandSlot oob{img.has_empty_key ? 1u : 0u, 0u, img.empty_key_value};
  std::vector<uint64_t> slots(slots_.size());
  for (uint64_t s = 0; s < geo_.num_slots(); ++s) {
    slots[2 * s] = img.keys[s];
    slots[2 * s + 1] = img.values[s];
  }
  // Into cell groups with every flag clear; the marking below sets them.
  std::vector<uint8_t> index(cells_.size(), 0);
  for (uint32_t c = 0; c < geo_.num_cells; ++c) index[cell_byte_at(c)] = img.cells[c];
  return run_sync([&]() -> absl::Status {
    GPHKV_CUDA_TRY(cudaMemcpyAsync(cells_.get(), index.data(), cells_.bytes(), cudaMemcpyHostToDevice, stream_));
    GPHKV_CUDA_TRY(cudaMemcpyAsync(slots_.get(), slots.data(), slots_.bytes(), cudaMemcpyHostToDevice, stream_));
    // An image places keys anywhere in their buckets (the CPU backend's has no lines).
    gphkv::cuda::clear_stale_launch_error();  // the marking's launch check reads it
    GPHKV_CUDA_TRY(launch_mark_spills(view(), stream_));
    GPHKV_CUDA_TRY(cudaMemcpyAsync(oob_.get(), &oob, sizeof(oob), cudaMemcpyHostToDevice, stream_));
    GPHKV_CUDA_TRY(cudaMemcpyAsync(&counters_.get()->size, &count, sizeof(count), cudaMemcpyHostToDevice, stream_));
    return absl::OkStatus();
  });
}

absl::StatusOr<std::vector<KeyValue>> CudaTable::export_pairs() const {
  std::vector<uint64_t> slots;
  OutOfBandSlot oob{};
  GPHKV_RETURN_IF_ERROR(copy_to_host(&slots, nullptr, &oob));
  std::vector<KeyValue> out;
  out.reserve(size_);
  if (oob.present != 0) out.push_back({gph::kEmptyKey, oob.value});
  for (uint64_t s = 0; s < geo_.num_slots(); ++s) {
    if (slots[2 * s] != gph::kEmptyKey) out.push_back({slots[2 * s], slots[2 * s + 1]});
  }
  return out;
}

absl::Status CudaTable::export_keys(std::vector<uint64_t>* keys) const {
  keys->clear();
  GPHKV_CUDA_TRY(cudaSetDevice(device_));
  const uint64_t num_slots = geo_.num_slots();
  gphkv::cuda::DeviceArray<uint64_t> staging;
  gphkv::cuda::DeviceArray<unsigned long long> count;
  GPHKV_RETURN_IF_ERROR(staging.allocate(std::min(num_slots, kExportChunkSlots)));
  GPHKV_RETURN_IF_ERROR(count.allocate(1));
  OutOfBandSlot oob{};
  GPHKV_CUDA_TRY(cudaMemcpyAsync(&oob, oob_.get(), sizeof(oob), cudaMemcpyDeviceToHost, stream_));
  keys->reserve(size_ + 1);
  // The table's own stream: ordered after every synchronous operation.
  for (uint64_t first = 0; first < num_slots; first += kExportChunkSlots) {
    const uint64_t n = std::min(kExportChunkSlots, num_slots - first);
    GPHKV_CUDA_TRY(cudaMemsetAsync(count.get(), 0, sizeof(unsigned long long), stream_));
    gphkv::cuda::clear_stale_launch_error();
    GPHKV_CUDA_TRY(launch_export_keys(slots_.get() + 2 * first, n, staging.get(), count.get(), stream_));
    unsigned long long found = 0;
    GPHKV_CUDA_TRY(cudaMemcpyAsync(&found, count.get(), sizeof(found), cudaMemcpyDeviceToHost, stream_));
    GPHKV_CUDA_TRY(cudaStreamSynchronize(stream_));
    const size_t at = keys->size();
    keys->resize(at + found);
    GPHKV_CUDA_TRY(
        cudaMemcpyAsync(keys->data() + at, staging.get(), found * sizeof(uint64_t), cudaMemcpyDeviceToHost, stream_));
  }
  GPHKV_CUDA_TRY(cudaStreamSynchronize(stream_));
  if (oob.present != 0) keys->push_back(gph::kEmptyKey);
  return absl::OkStatus();
}

}  // namespace cuda
}  // namespace gphkv::engine

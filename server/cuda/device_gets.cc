#include "server/cuda/device_gets.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "gphkv/cuda/status.h"
#include "server/byte_key.h"
#include "server/cuda/table_keys_kernel.h"
#include "server/cuda/value_kernels.h"
#include "server/elapsed.h"
#include "server/value_handle.h"

namespace gphkv::server {
namespace {

// The small path's one block writes the values into pinned host memory over
// PCIe, store by store: fine for the few KB of a light-load batch, slower
// than the download's DMA for megabytes. A batch whose values likely take
// more than this takes the large path whatever its key count.
constexpr uint64_t kSmallGetsMaxLikelyBytes = uint64_t{64} << 10;

// Growing a buffer frees the old one (cudaFree and cudaFreeHost wait for the
// whole device) and allocates anew (a pinned allocation of megabytes takes
// milliseconds): every call queued meanwhile waits. So buffers start at a
// floor (init), at least double, and batch sizes met once are kept.
template <class Buffer>
absl::Status grow(Buffer& b, size_t need) {
  if (need <= b.bytes() && b.bytes() > 0) return absl::OkStatus();
  return b.reserve(std::max(need, 2 * b.bytes()));
}

absl::Status response_too_big(uint64_t bytes, uint64_t limit) {
  return absl::ResourceExhaustedError(absl::StrCat("the values of this Get total ", bytes,
                                                   " bytes, over the response limit of ", limit,
                                                   " bytes; ask for fewer keys per call"));
}

// Fills a get's found flags and value lengths from its keys' words of the
// download (found bit | value length) and returns the bytes its values take.
uint64_t fill_found_and_lengths(const uint32_t* meta, const GetOp& get, v1::GetResponse* out) {
  const int k = static_cast<int>(get.keys.size());
  const bool with_values = !get.exists_only;
  out->mutable_found()->Resize(k, false);
  out->mutable_value_lengths()->Resize(k, 0);
  bool* found = out->mutable_found()->mutable_data();
  uint32_t* lens = out->mutable_value_lengths()->mutable_data();
  uint64_t bytes = 0;
  for (int i = 0; i < k; ++i) {
    found[i] = (meta[i] >> 31) != 0;
    if (with_values) {
      lens[i] = meta[i] & 0x7fffffffu;
      bytes += lens[i];
    }
  }
  return bytes;
}

}  // namespace

absl::StatusOr<std::unique_ptr<DeviceGets>> DeviceGets::create(DeviceValueHeap* heap, int depth, bool time_stages,
                                                               uint64_t small_gets_keys, int byte_key_hash_bits) {
  if (depth < 1) return absl::InvalidArgumentError("the CUDA get pipeline needs at least one stream");
  if (small_gets_keys > cuda::kSmallGetsMaxKeys) {
    return absl::InvalidArgumentError(
        absl::StrCat("the CUDA small-get path takes at most ", cuda::kSmallGetsMaxKeys, " keys a batch"));
  }
  if (byte_key_hash_bits < 0 || byte_key_hash_bits > 64) {
    return absl::InvalidArgumentError("a byte key's table key keeps 0 to 64 bits");
  }
  std::unique_ptr<DeviceGets> g(new DeviceGets(heap, time_stages, small_gets_keys, byte_key_hash_bits));
  if (auto s = g->init(depth); !s.ok()) return s;
  return g;
}

absl::Status DeviceGets::init(int depth) {
  GPHKV_CUDA_TRY(cudaSetDevice(heap_->device()));
  // The small path's kernels read and write the slots' pinned buffers
  // through their host addresses: that takes unified addressing.
  int unified = 0;
  GPHKV_CUDA_TRY(cudaDeviceGetAttribute(&unified, cudaDevAttrUnifiedAddressing, heap_->device()));
  if (unified == 0) small_gets_keys_ = 0;
  // Serving streams at the greatest priority, like the table's own: a
  // background rebuild runs at the least (docs/gph.md, "Bulk build").
  int least = 0, greatest = 0;
  GPHKV_CUDA_TRY(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  depth_ = depth;
  // Twice the batches in flight: the answers of finished batches are filled
  // from their slots while the next ones run.
  for (int i = 0; i < 2 * depth; ++i) {
    auto s = std::make_unique<Slot>();
    GPHKV_CUDA_TRY(cudaStreamCreateWithPriority(&s->stream, cudaStreamNonBlocking, greatest));
    for (cudaEvent_t& e : s->ev) {
      GPHKV_CUDA_TRY(cudaEventCreateWithFlags(&e, time_stages_ ? cudaEventDefault : cudaEventDisableTiming));
    }
    // The buffers' first sizes now, at start: allocating them at a slot's
    // first batch stalled the first calls (pinning 16 MiB takes milliseconds).
    constexpr uint64_t fk = kMinStagingKeys;
    GPHKV_RETURN_IF_ERROR(s->in.reserve(9 * fk));
    GPHKV_RETURN_IF_ERROR(s->out.reserve(kMinStagingBytes));
    GPHKV_RETURN_IF_ERROR(s->d_in.reserve(9 * fk));
    GPHKV_RETURN_IF_ERROR(s->d_handles.reserve(8 * fk));
    GPHKV_RETURN_IF_ERROR(s->d_found.reserve(fk));
    GPHKV_RETURN_IF_ERROR(s->d_lens.reserve(8 * (fk + 1)));
    GPHKV_RETURN_IF_ERROR(s->d_offsets.reserve(8 * (fk + 1)));
    GPHKV_RETURN_IF_ERROR(s->d_out.reserve(kMinStagingBytes));
    slots_.push_back(std::move(s));
  }
  return absl::OkStatus();
}

DeviceGets::~DeviceGets() {
  {
    // Answers still being filled read their slots' pinned buffers.
    std::unique_lock<std::mutex> lock(free_mu_);
    free_cv_.wait(lock, [&] {
      for (auto& s : slots_) {
        if (s->busy && std::find(order_.begin(), order_.end(), s.get()) == order_.end()) return false;
      }
      return true;
    });
  }
  cudaSetDevice(heap_->device());
  for (auto& s : slots_) {
    if (s->stream != nullptr) {
      cudaStreamSynchronize(s->stream);
      cudaStreamDestroy(s->stream);
    }
    for (cudaEvent_t e : s->ev) {
      if (e != nullptr) cudaEventDestroy(e);
    }
  }
}

absl::Status DeviceGets::submit(engine::StreamOrderedTable& table, absl::Span<Call* const> calls, uint32_t now) {
  if (static_cast<int>(order_.size()) >= depth_) {
    return absl::InternalError("CUDA get pipeline: every stream is busy");
  }
  const Clock::time_point asked = Clock::now();
  Slot& s = *take_slot();
  const Clock::time_point t0 = Clock::now();
  s.slot_seconds = std::chrono::duration<double>(t0 - asked).count();
  uint64_t n = 0, n_values = 0, key_bytes = 0, uint64_keys = 0;
  bool any_exists = false;
  for (Call* c : calls) {
    n += c->get().keys.size();
    if (c->get().byte_keys.empty()) uint64_keys += c->get().keys.size();
    key_bytes += c->get().byte_keys.bytes.size();
    if (c->get().exists_only) {
      any_exists = true;
    } else {
      n_values += c->get().keys.size();
    }
  }
  // The download: total, then found+length per key, then the values. The
  // gather's room holds what the values can take (n times the largest live
  // extent: exact for uniform sizes) or, with mixed sizes whose largest class
  // is far above the mean (TaoBench's 1 B .. 64 KiB), eight times what they
  // likely take: sizing every batch for its worst case grew each slot's
  // pinned and device buffers to hundreds of MB, and every growth stalled
  // the pipeline (cudaFree waits for the device, pinning takes milliseconds):
  // tails of 200-700 ms on the H100 (docs/performance.md). A batch whose
  // values outgrow the room takes the slow path (handles copied back, values
  // gathered per call). The download covers what the values likely take.
  const uint64_t head = 8 + ((4 * n + 15) & ~uint64_t{15});
  const uint64_t mean_slot = heap_->live_values() == 0 ? 0 : heap_->used_bytes() / heap_->live_values();
  const uint64_t copied =
      std::min({n_values * heap_->max_live_extent_bytes(),
                std::max(std::max(kMinStagingBytes, head) - head, 8 * n_values * mean_slot), kMaxDownloadBytes});
  const uint64_t downloaded = std::min(copied, std::max(kMinSpeculativeBytes, 2 * n_values * mean_slot));
  // The buffers start at their floors (init), which a busy server's batches
  // rarely pass: each growth stalls the pipeline.
  // Byte keys travel with their key offsets after the want flags.
  const uint64_t key_offsets_at = key_bytes == 0 ? 0 : (9 * n + 3) & ~uint64_t{3};
  const uint64_t in_bytes = key_bytes == 0 ? 9 * n : key_offsets_at + 4 * (n + 1) + key_bytes;
  GPHKV_RETURN_IF_ERROR(grow(s.in, in_bytes));
  GPHKV_RETURN_IF_ERROR(grow(s.out, head + copied));
  GPHKV_CUDA_TRY(cudaSetDevice(heap_->device()));
  GPHKV_RETURN_IF_ERROR(grow(s.d_in, in_bytes));
  if (key_bytes > 0) GPHKV_RETURN_IF_ERROR(grow(s.d_skip, 4 * n));
  GPHKV_RETURN_IF_ERROR(grow(s.d_handles, 8 * n));
  GPHKV_RETURN_IF_ERROR(grow(s.d_found, n));
  GPHKV_RETURN_IF_ERROR(grow(s.d_lens, 8 * (n + 1)));
  GPHKV_RETURN_IF_ERROR(grow(s.d_offsets, 8 * (n + 1)));
  GPHKV_RETURN_IF_ERROR(grow(s.d_out, head + copied));
  if (n > cuda::kFusedScanMaxKeys && n + 1 > s.scan_items) {
    // CUB's scratch for a scan of this many items (asked again only when batches grow).
    size_t temp = 0;
    GPHKV_CUDA_TRY(cuda::exclusive_scan(nullptr, &temp, nullptr, nullptr, n + 1, s.stream));
    GPHKV_RETURN_IF_ERROR(grow(s.d_temp, temp));
    s.temp_bytes = s.d_temp.bytes();
    s.scan_items = n + 1;
  }

  // Byte keys hashed on the device (launch_table_keys): their table keys
  // are neither packed nor sent, and with no uint64 key in the batch the
  // upload starts past the keys' words.
  const bool hash_keys = key_bytes > 0 && hashes_byte_keys_;
  uint64_t* keys = reinterpret_cast<uint64_t*>(s.in.data());
  uint8_t* want = reinterpret_cast<uint8_t*>(s.in.data() + 8 * n);
  uint64_t at = 0;
  for (Call* c : calls) {
    const int k = static_cast<int>(c->get().keys.size());
    const bool hashed_there = hash_keys && !c->get().byte_keys.empty();
    if (k > 0 && !hashed_there) std::memcpy(keys + at, c->get().keys.data(), 8 * static_cast<size_t>(k));
    if (any_exists) std::memset(want + at, c->get().exists_only ? 0 : 1, k);
    at += k;
  }
  s.n = n;
  s.key_offsets_at = key_offsets_at;
  s.upload = key_bytes > 0 ? in_bytes : (any_exists ? 9 : 8) * n;
  s.hash_keys = hash_keys;
  s.upload_from = hash_keys && uint64_keys == 0 ? 8 * n : 0;
  if (key_bytes > 0) pack_byte_keys(s, calls, key_bytes);
  s.head = head;
  s.copied = copied;
  s.small = n > 0 && n <= small_gets_keys_ && n_values * mean_slot <= kSmallGetsMaxLikelyBytes;
  // The small path's kernel writes every value that fits straight into `out`.
  s.downloaded = s.small ? copied : downloaded;
  s.calls.assign(calls.begin(), calls.end());
  absl::Status st = n == 0    ? absl::OkStatus()
                    : s.small ? enqueue_small(table, s, any_exists, now)
                              : enqueue(table, s, any_exists, now);
  if (st.ok() && n == 0) {
    for (cudaEvent_t e : s.ev) {
      if (auto err = cudaEventRecord(e, s.stream); err != cudaSuccess) {
        st = gphkv::cuda::cuda_status(err, "cudaEventRecord", __FILE__, __LINE__);
        break;
      }
    }
  }
  if (!st.ok()) {
    // Nothing of this batch may still read the calls' buffers (pinned
    // copies only, but the slot is reused): wait for the stream.
    cudaStreamSynchronize(s.stream);
    s.calls.clear();
    release(&s);
    return st;
  }
  s.pack_seconds = seconds_since(t0);
  order_.push_back(&s);
  return absl::OkStatus();
}

DeviceGets::Slot* DeviceGets::take_slot() {
  std::unique_lock<std::mutex> lock(free_mu_);
  for (;;) {
    for (auto& s : slots_) {
      if (!s->busy) {
        s->busy = true;
        return s.get();
      }
    }
    // Every slot is in flight or still being answered: the responders are
    // behind; wait for one (back pressure on the executor).
    free_cv_.wait(lock);
  }
}

void DeviceGets::release(Slot* s) {
  {
    std::lock_guard<std::mutex> lock(free_mu_);
    s->busy = false;
  }
  free_cv_.notify_all();
}

// The answers of one slot's batch: the found flags, lengths and values sit
// in the slot's pinned download, and the slot is held until they are copied
// into the responses.
class DeviceGets::Answers final : public GetAnswers {
 public:
  Answers(DeviceGets* owner, Slot* slot, std::vector<Call*> calls, uint64_t max_response_bytes)
      : owner_(owner), slot_(slot), max_response_bytes_(max_response_bytes) {
    calls_ = std::move(calls);
    statuses_.assign(calls_.size(), absl::OkStatus());
    key_offsets_.resize(calls_.size() + 1);
    value_offsets_.resize(calls_.size() + 1);
    key_offsets_[0] = value_offsets_[0] = 0;
    for (size_t i = 0; i < calls_.size(); ++i) {
      key_offsets_[i + 1] = key_offsets_[i] + static_cast<uint64_t>(calls_[i]->get().keys.size());
    }
  }
  ~Answers() override {
    if (slot_ != nullptr) owner_->release(slot_);
  }

  // Filled: the slot's pinned download is read no more, so the next batch
  // may take the slot while the calls are answered.
  void release_buffers() override {
    if (slot_ != nullptr) owner_->release(slot_);
    slot_ = nullptr;
    meta_ = nullptr;
    values_ = nullptr;
  }

  // Every call answered with `s` (a device error): nothing to fill.
  void fail_all(const absl::Status& s) {
    statuses_.assign(calls_.size(), s);
    done_ = true;
  }
  // The responses were filled already (the slow path), with these statuses.
  void set_filled(std::vector<absl::Status> statuses) {
    statuses_ = std::move(statuses);
    done_ = true;
  }

  // Sets each call's value offset in the download and refuses the calls
  // whose values exceed the response limit (one pass over the lengths).
  void plan(const uint32_t* meta, const char* values) {
    meta_ = meta;
    values_ = values;
    for (size_t i = 0; i < calls_.size(); ++i) {
      uint64_t bytes = 0;
      if (!calls_[i]->get().exists_only) {
        for (uint64_t k = key_offsets_[i]; k < key_offsets_[i + 1]; ++k) bytes += meta[k] & 0x7fffffffu;
      }
      if (bytes > max_response_bytes_) statuses_[i] = response_too_big(bytes, max_response_bytes_);
      value_offsets_[i + 1] = value_offsets_[i] + bytes;
    }
  }

  void fill(size_t begin, size_t end) override {
    if (done_) return;
    for (size_t i = begin; i < end; ++i) {
      Call* c = calls_[i];
      v1::GetResponse* out = c->get().response;
      if (!statuses_[i].ok()) {
        out->Clear();
        continue;
      }
      const uint64_t bytes = fill_found_and_lengths(meta_ + key_offsets_[i], c->get(), out);
      if (!c->get().exists_only) {
        out->mutable_values()->assign(values_ + value_offsets_[i], bytes);
      }
    }
  }

 private:
  DeviceGets* owner_;
  Slot* slot_;
  const uint64_t max_response_bytes_;
  std::vector<uint64_t> value_offsets_;
  const uint32_t* meta_ = nullptr;
  const char* values_ = nullptr;
  bool done_ = false;
};

void DeviceGets::pack_byte_keys(Slot& s, absl::Span<Call* const> calls, uint64_t key_bytes) {
  uint32_t* offsets = reinterpret_cast<uint32_t*>(s.in.data() + s.key_offsets_at);
  char* bytes = s.in.data() + s.key_offsets_at + 4 * (s.n + 1);
  uint64_t at = 0;
  uint32_t off = 0;
  for (Call* c : calls) {
    const GetOp& get = c->get();
    if (get.byte_keys.empty()) {
      // uint64 keys: no bytes, so empty ranges.
      for (size_t i = 0; i < get.keys.size(); ++i) offsets[at++] = off;
      continue;
    }
    std::memcpy(bytes + off, get.byte_keys.bytes.data(), get.byte_keys.bytes.size());
    for (uint32_t len : get.byte_keys.lengths) {
      offsets[at++] = off;
      off += len;
    }
  }
  offsets[at] = off;
  (void)key_bytes;  // == off: submit sized the buffer for it
}

absl::Status DeviceGets::enqueue(engine::StreamOrderedTable& table, Slot& s, bool any_exists, uint32_t now) {
  const uint64_t n = s.n;
  cudaStream_t st = s.stream;
  if (time_stages_) GPHKV_CUDA_TRY(cudaEventRecord(s.ev[0], st));
  GPHKV_CUDA_TRY(cudaMemcpyAsync(s.d_in.at(s.upload_from), s.in.data() + s.upload_from, s.upload - s.upload_from,
                                 cudaMemcpyHostToDevice, st));
  if (time_stages_) GPHKV_CUDA_TRY(cudaEventRecord(s.ev[1], st));
  uint64_t* d_keys = s.d_in.at<uint64_t>();
  if (s.hash_keys) {
    // In place: a uint64 key's word (uploaded) stays, a byte key's is made.
    GPHKV_CUDA_TRY(cuda::launch_table_keys(s.d_in.at<uint32_t>(s.key_offsets_at),
                                           s.d_in.at<char>(s.key_offsets_at + 4 * (n + 1)),
                                           s.upload_from == 0 ? d_keys : nullptr, n, byte_key_hash_bits_, d_keys, st));
  }
  uint64_t* d_handles = s.d_handles.at<uint64_t>();
  uint8_t* d_found = s.d_found.at<uint8_t>();
  GPHKV_RETURN_IF_ERROR(table.find_async(d_keys, n, d_handles, d_found, st));
  // Byte keys: each hit's record compared with its key where the value lives.
  const uint32_t* d_skip = nullptr;
  if (s.key_offsets_at != 0) {
    const char* d_keys = s.d_in.at<char>(s.key_offsets_at + 4 * (n + 1));
    GPHKV_CUDA_TRY(cuda::launch_match_records(heap_->device_locations(), d_handles, d_found,
                                              s.d_in.at<uint32_t>(s.key_offsets_at), d_keys, n, now,
                                              s.d_skip.at<uint32_t>(), st));
    d_skip = s.d_skip.at<uint32_t>();
  }
  if (time_stages_) GPHKV_CUDA_TRY(cudaEventRecord(s.ev[2], st));
  const uint8_t* d_want = any_exists ? s.d_in.at<uint8_t>(8 * n) : nullptr;
  uint32_t* d_meta = s.d_out.at<uint32_t>(8);
  uint64_t* d_offsets = s.d_offsets.at<uint64_t>();
  uint64_t* d_total = s.d_out.at<uint64_t>();  // the download's first 8 bytes
  if (n <= cuda::kFusedScanMaxKeys) {
    GPHKV_CUDA_TRY(cuda::launch_lengths_scan(heap_->device_locations(), d_handles, d_found, d_want, d_skip, n, d_meta,
                                             d_offsets, d_total, st));
    d_total = nullptr;
  } else {
    GPHKV_CUDA_TRY(cuda::launch_lengths(heap_->device_locations(), d_handles, d_found, d_want, d_skip, n, d_meta,
                                        s.d_lens.at<uint64_t>(), st));
    size_t temp = s.temp_bytes;
    GPHKV_CUDA_TRY(cuda::exclusive_scan(s.d_temp.at(), &temp, s.d_lens.at<uint64_t>(), d_offsets, n + 1, st));
  }
  GPHKV_CUDA_TRY(cuda::launch_gather(heap_->device_locations(), d_handles, d_skip, d_offsets, n, s.d_out.at(s.head),
                                     s.copied, d_total, st));
  if (time_stages_) GPHKV_CUDA_TRY(cudaEventRecord(s.ev[3], st));
  GPHKV_CUDA_TRY(cudaMemcpyAsync(s.out.data(), s.d_out.at(), s.head + s.downloaded, cudaMemcpyDeviceToHost, st));
  GPHKV_CUDA_TRY(cudaEventRecord(s.ev[4], st));
  return absl::OkStatus();
}

absl::Status DeviceGets::enqueue_small(engine::StreamOrderedTable& table, Slot& s, bool any_exists, uint32_t now) {
  const uint64_t n = s.n;
  cudaStream_t st = s.stream;
  // No upload: the lookup and the kernel read the pinned buffer in place
  // (a few hundred bytes over PCIe, read once).
  if (time_stages_) {
    GPHKV_CUDA_TRY(cudaEventRecord(s.ev[0], st));
    GPHKV_CUDA_TRY(cudaEventRecord(s.ev[1], st));
  }
  const bool byte_keys = s.key_offsets_at != 0;
  const uint32_t* key_offsets = byte_keys ? reinterpret_cast<const uint32_t*>(s.in.data() + s.key_offsets_at) : nullptr;
  const char* key_bytes = byte_keys ? s.in.data() + s.key_offsets_at + 4 * (n + 1) : nullptr;
  const uint64_t* keys = reinterpret_cast<const uint64_t*>(s.in.data());
  if (s.hash_keys) {
    // The table keys made on the device, into device memory (the lookup
    // reads each more than once), a uint64 key's copied from the pinned buffer.
    uint64_t* d_keys = s.d_in.at<uint64_t>();
    GPHKV_CUDA_TRY(cuda::launch_table_keys(key_offsets, key_bytes, s.upload_from == 0 ? keys : nullptr, n,
                                           byte_key_hash_bits_, d_keys, st));
    keys = d_keys;
  }
  uint64_t* d_handles = s.d_handles.at<uint64_t>();
  uint8_t* d_found = s.d_found.at<uint8_t>();
  GPHKV_RETURN_IF_ERROR(table.find_async(keys, n, d_handles, d_found, st));
  if (time_stages_) GPHKV_CUDA_TRY(cudaEventRecord(s.ev[2], st));
  const uint8_t* want = any_exists ? reinterpret_cast<const uint8_t*>(s.in.data() + 8 * n) : nullptr;
  GPHKV_CUDA_TRY(cuda::launch_small_gets(
      heap_->device_locations(), d_handles, d_found, key_offsets, key_bytes, want, n, now,
      byte_keys ? s.d_skip.at<uint32_t>() : nullptr, reinterpret_cast<uint32_t*>(s.out.data() + 8),
      s.d_offsets.at<uint64_t>(), reinterpret_cast<uint64_t*>(s.out.data()), s.out.data() + s.head, s.copied, st));
  if (time_stages_) GPHKV_CUDA_TRY(cudaEventRecord(s.ev[3], st));
  GPHKV_CUDA_TRY(cudaEventRecord(s.ev[4], st));
  return absl::OkStatus();
}

bool DeviceGets::oldest_done() const {
  if (order_.empty()) return false;
  // Any answer but "not ready" is final: success, or an error that finish()'s
  // cudaEventSynchronize reports for the batch.
  return cudaEventQuery(order_.front()->ev[4]) != cudaErrorNotReady;
}

std::shared_ptr<GetAnswers> DeviceGets::finish(uint64_t max_response_bytes, GetStageTimes* times) {
  Slot& s = *order_.front();
  order_.pop_front();
  std::vector<Call*> calls = std::move(s.calls);
  s.calls.clear();
  auto answers = std::make_shared<Answers>(this, &s, std::move(calls), max_response_bytes);
  *times = GetStageTimes{};
  times->seconds[kStagePack] = s.pack_seconds;
  times->seconds[kStageSlot] = s.slot_seconds;
  const Clock::time_point t0 = Clock::now();
  if (cudaError_t err = cudaEventSynchronize(s.ev[4]); err != cudaSuccess) {
    answers->fail_all(gphkv::cuda::cuda_status(err, "CUDA get batch", __FILE__, __LINE__));
    return answers;
  }
  times->seconds[kStageWait] = seconds_since(t0);
  if (time_stages_ && s.n > 0) {
    times->device_timed = true;
    for (int i = 0; i < 4; ++i) {
      float ms = 0;
      if (cudaEventElapsedTime(&ms, s.ev[i], s.ev[i + 1]) == cudaSuccess) {
        times->seconds[kStageH2D + i] = ms * 1e-3;
      }
    }
  }
  const Clock::time_point t1 = Clock::now();
  const uint64_t total = *reinterpret_cast<const uint64_t*>(s.out.data());
  if (s.n > 0 && total > s.copied) {
    // The slow path reads the heap: it runs here, before any write.
    std::vector<absl::Status> statuses(answers->calls().size());
    if (auto st = fill_from_handles(s, answers->calls(), max_response_bytes, &statuses); !st.ok()) {
      answers->fail_all(st);
    } else {
      answers->set_filled(std::move(statuses));
    }
    times->seconds[kStageRespond] = seconds_since(t1);
    return answers;
  }
  if (total > s.downloaded) {
    // Larger values than the download guessed: the rest is in d_out already.
    const uint64_t from = s.head + s.downloaded;
    cudaError_t err =
        cudaMemcpyAsync(s.out.data() + from, s.d_out.at(from), total - s.downloaded, cudaMemcpyDeviceToHost, s.stream);
    if (err == cudaSuccess) err = cudaStreamSynchronize(s.stream);
    if (err != cudaSuccess) {
      answers->fail_all(gphkv::cuda::cuda_status(err, "CUDA get download", __FILE__, __LINE__));
      return answers;
    }
    ++late_downloads_;
  }
  answers->plan(reinterpret_cast<const uint32_t*>(s.out.data() + 8), s.out.data() + s.head);
  times->seconds[kStageRespond] = seconds_since(t1);
  return answers;
}

absl::Status DeviceGets::fill_from_handles(Slot& s, const std::vector<Call*>& calls, uint64_t max_response_bytes,
                                           std::vector<absl::Status>* statuses) {
  std::vector<uint64_t> handles(s.n);
  GPHKV_CUDA_TRY(cudaMemcpyAsync(handles.data(), s.d_handles.at(), 8 * s.n, cudaMemcpyDeviceToHost, s.stream));
  GPHKV_CUDA_TRY(cudaStreamSynchronize(s.stream));
  const uint32_t* meta = reinterpret_cast<const uint32_t*>(s.out.data() + 8);
  uint64_t pos = 0;
  std::vector<ValueHandle> found_handles;
  for (size_t ci = 0; ci < calls.size(); ++ci) {
    Call* c = calls[ci];
    const uint64_t first = pos;
    const uint64_t bytes = fill_found_and_lengths(meta + first, c->get(), c->get().response);
    pos += c->get().keys.size();
    if (bytes > max_response_bytes) {
      c->get().response->Clear();
      (*statuses)[ci] = response_too_big(bytes, max_response_bytes);
      continue;
    }
    if (c->get().exists_only) continue;
    found_handles.clear();
    for (uint64_t i = first; i < pos; ++i) {
      if ((meta[i] >> 31) != 0) found_handles.push_back(handles[i]);
    }
    const ByteKeys& byte_keys = c->get().byte_keys;
    if (byte_keys.empty()) {
      GPHKV_RETURN_IF_ERROR(heap_->gather(found_handles, c->get().response->mutable_values()));
      continue;
    }
    // The records the device matched: each value follows its key.
    std::string records;
    GPHKV_RETURN_IF_ERROR(heap_->gather(found_handles, &records));
    std::string* values = c->get().response->mutable_values();
    size_t at = 0, j = 0;
    byte_keys.for_each([&](size_t i, std::string_view) {
      if ((meta[first + i] >> 31) == 0) return;
      const uint32_t len = value_handle::length(found_handles[j++]);
      // The value ends the record, past its header and key.
      const uint32_t value_len = meta[first + i] & 0x7fffffffu;
      values->append(records, at + len - value_len, value_len);
      at += len;
    });
  }
  return absl::OkStatus();
}

}  // namespace gphkv::server

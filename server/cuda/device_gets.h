// The CUDA get path, pipelined: a get batch goes to the device as
//   keys (one upload from pinned memory) -> [byte keys: their table keys
//   hashed on the device] -> GPH lookup -> handles on the
//   device -> lengths -> prefix sum (CUB) -> gather kernel -> one download
//   of [total | found+length per key | values] into pinned memory,
// all stream-ordered on one of the slots' streams, each with its own pinned
// and device buffers. submit() enqueues a batch and returns; finish() waits
// for the oldest and hands back its answers, which other threads write into
// the responses (GetAnswers) while the slot's pinned buffer stays theirs.
// Up to `depth` batches are on the device at once; twice as many slots exist,
// so batches are answered while the next ones run. With depth >= 2 the
// executor submits batch i+1 before finishing batch i, so i+1's upload and
// kernels overlap i's download.
//
// Reads only: the table and the value heap must not change while batches are
// in flight. The executor finishes every batch in flight before it applies a
// put or delete (so a slot freed by a write is never read by an older get),
// and uses this path only while no rebuild runs (the rebuild overlay lives on
// the host; Store falls back to the synchronous path then).
#pragma once

#include <cuda_runtime.h>

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "gphkv/engine/stream_ordered_table.h"
#include "server/call.h"
#include "server/cuda/device_value_heap.h"
#include "server/cuda/pinned_buffer.h"
#include "server/get_answers.h"
#include "server/get_pipeline.h"
#include "server/get_stages.h"

namespace gphkv::server {

class DeviceGets final : public GetPipeline {
 public:
  // The gather's device buffer holds at most this many bytes of values
  // (device_gets.cc says how a run's room is sized); a run whose values
  // need more takes the slow path (handles copied back, values gathered per
  // call by the heap).
  static constexpr uint64_t kMaxDownloadBytes = uint64_t{256} << 20;
  // The download that travels with the batch covers what the values most
  // likely take (twice the mean stored slot per key, at least this much);
  // the rest, when the values turn out larger, is copied when the batch is
  // finished. Mixed sizes (TaoBench's 1 B .. 64 KiB) then cross PCIe at
  // about their real size instead of keys x the largest class.
  static constexpr uint64_t kMinSpeculativeBytes = 64 * 1024;
  // The first size of a slot's value buffers (pinned and device), allocated
  // when the store starts, so that typical batches never make them grow: a
  // growth frees the old buffer, which waits for the whole device, and
  // pinning megabytes takes milliseconds, a stall every queued call feels.
  static constexpr uint64_t kMinStagingBytes = uint64_t{16} << 20;
  // Likewise the key buffers' first size, in keys (4x the default --max_batch_keys).
  static constexpr uint64_t kMinStagingKeys = uint64_t{1} << 16;

  // small_gets_keys: batches of at most this many keys (at most
  // cuda::kSmallGetsMaxKeys; 0: none) whose values likely take at most 64
  // KiB (device_gets.cc) take the small path: the lookup reads the keys
  // from the pinned upload buffer and one kernel matches, scans and gathers
  // into the pinned download buffer, so the batch makes two launches and no
  // copy (the large path: an upload, three or four kernels, a download).
  // byte_key_hash_bits: the bits of a byte key's table key that the device
  // keeps (StoreOptions::byte_key_hash_bits), as byte_key::table_key does.
  static absl::StatusOr<std::unique_ptr<DeviceGets>> create(DeviceValueHeap* heap, int depth, bool time_stages,
                                                            uint64_t small_gets_keys = 0, int byte_key_hash_bits = 64);
  ~DeviceGets() override;

  int depth() const override { return depth_; }
  size_t in_flight() const override { return order_.size(); }
  // Batches whose values outgrew their download and were copied at finish().
  uint64_t late_downloads() const override { return late_downloads_; }
  void set_hashes_byte_keys(bool on) override { hashes_byte_keys_ = on; }

  // Enqueues the batch of get calls (in_flight() < depth() required; waits
  // for a slot whose answers are still being filled). An error leaves nothing
  // in flight for this batch; its calls are the caller's to answer.
  absl::Status submit(engine::StreamOrderedTable& table, absl::Span<Call* const> calls, uint32_t now) override;
  bool oldest_done() const override;
  // Waits for the oldest batch and returns its answers: statuses that are
  // set already (a device error for all) and responses to fill. Everything
  // the batch read of the table and the heap was read by then: writes may
  // proceed while the answers are filled.
  std::shared_ptr<GetAnswers> finish(uint64_t max_response_bytes, GetStageTimes* times) override;

 private:
  class Answers;
  struct Slot {
    bool busy = false;  // in flight, or its answers not yet filled (under free_mu_)
    cudaStream_t stream = nullptr;
    cudaEvent_t ev[5] = {};  // 0 start, 1 after upload, 2 after lookup, 3 after gather, 4 done
    // keys (8n) | want flags (n) | with byte keys: padding to 4, key offsets
    // (4(n + 1)), key bytes (the upload's bytes are [upload_from, upload)).
    // Byte keys hashed on the device leave their keys' words unwritten.
    cuda::PinnedBuffer in;
    cuda::PinnedBuffer out;  // total (8) | meta (4n, padded to 16) | values
    cuda::DeviceBytes d_in, d_handles, d_found, d_lens, d_offsets, d_temp, d_out;
    cuda::DeviceBytes d_skip;  // with byte keys: where each value starts in its slot (4n)
    size_t temp_bytes = 0;
    uint64_t scan_items = 0;  // the largest scan temp_bytes was sized for
    // The batch in flight.
    std::vector<Call*> calls;
    uint64_t n = 0;
    uint64_t upload = 0;          // where the batch's upload of `in` ends
    uint64_t upload_from = 0;     // where it starts: 8n when no key's word is the host's
    bool hash_keys = false;       // the byte keys' table keys made on the device
    uint64_t key_offsets_at = 0;  // where the key offsets start in `in`; 0: no byte keys
    uint64_t head = 0;            // bytes before the values in out/d_out
    uint64_t copied = 0;          // value bytes the gather may write (its buffer's capacity)
    uint64_t downloaded = 0;      // of those, the bytes the batch's own download brings
    bool small = false;           // the small path: answers written into `out` by the kernel
    double pack_seconds = 0;
    double slot_seconds = 0;  // submit's wait for this slot to be free
  };
  DeviceGets(DeviceValueHeap* heap, bool time_stages, uint64_t small_gets_keys, int byte_key_hash_bits)
      : heap_(heap),
        time_stages_(time_stages),
        small_gets_keys_(small_gets_keys),
        byte_key_hash_bits_(byte_key_hash_bits) {}
  absl::Status init(int depth);
  absl::Status enqueue(engine::StreamOrderedTable& table, Slot& s, bool any_exists, uint32_t now);
  absl::Status enqueue_small(engine::StreamOrderedTable& table, Slot& s, bool any_exists, uint32_t now);
  // Packs the batch's byte keys after its keys and want flags (key_offsets_at).
  void pack_byte_keys(Slot& s, absl::Span<Call* const> calls, uint64_t key_bytes);
  // The slow path of finish(): values gathered per call from handles copied back.
  absl::Status fill_from_handles(Slot& s, const std::vector<Call*>& calls, uint64_t max_response_bytes,
                                 std::vector<absl::Status>* statuses);
  // A free slot (waits for answers being filled to release one), marked busy.
  Slot* take_slot();
  // Called by the last reference to a slot's answers.
  void release(Slot* s);

  DeviceValueHeap* heap_;
  bool time_stages_;
  uint64_t small_gets_keys_;  // 0 also when the device lacks unified addressing (init)
  const int byte_key_hash_bits_;
  bool hashes_byte_keys_ = true;
  int depth_ = 0;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::deque<Slot*> order_;  // batches in flight, oldest first
  std::mutex free_mu_;
  std::condition_variable free_cv_;
  uint64_t late_downloads_ = 0;
};

}  // namespace gphkv::server

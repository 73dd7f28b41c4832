// What the host and the device value heaps share: values in extents of
// 8-byte granules carved from chunks of backing memory, with all the
// bookkeeping on the host.
//
// Why extents and not size classes: a store does not evict by default, so
// memory freed by deletes and overwrites must serve whatever sizes come
// next. Freed extents
// merge with their free neighbours (FreeExtents), so space freed by large
// values serves small ones at once; and because a handle names an id, not an
// address, the heap can move live values out of sparse chunks (compaction)
// when a put finds enough free bytes but no hole large enough, and on trim(),
// which hands wholly free chunks back. Measured against size classes and a
// best-fit index in bench/value_heap_bench.cc (docs/service.md, "The value
// heap").
//
// Subclasses provide the backing memory (map_chunk, unmap_chunk), the copies
// (write, gather, move) and, on a device, the table of places the kernels read
// (reserve_ids). One owner thread calls everything: no locks.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "server/free_extents.h"
#include "server/prefault.h"
#include "server/value_handle.h"
#include "server/value_heap.h"

namespace gphkv::server {

class ExtentValueHeap : public ValueHeap {
 public:
  // 8 bytes, as the size classes before: 16 wasted 12% on 100-byte values
  // (bench/value_heap_bench.cc).
  static constexpr uint64_t kGranuleBytes = 8;
  // A chunk holds at least this many values of max_value_bytes, so the
  // space a chunk's end cannot use is at most a quarter of it.
  static constexpr uint64_t kMaxValuesPerChunk = 4;

  absl::StatusOr<ValueHandle> allocate(std::string_view bytes) override;
  absl::Status allocate_slots(absl::Span<const uint32_t> lengths, std::vector<ValueHandle>* handles) override {
    return allocate(lengths, handles, /*packed=*/false);
  }
  absl::Status allocate_packed_slots(absl::Span<const uint32_t> lengths, std::vector<ValueHandle>* handles) override {
    return allocate(lengths, handles, /*packed=*/true);
  }
  void reserve_values(uint64_t values) override;
  void release(ValueHandle handle) override;
  uint32_t length(ValueHandle handle) const override { return records_[value_handle::id(handle)].length; }
  // Its first granule's address: chunk by chunk, then by offset.
  uint64_t place(ValueHandle handle) const override { return records_[value_handle::id(handle)].addr; }
  // The host's access bits, in the records (a device heap keeps its own).
  absl::Status mark_accessed(absl::Span<const ValueHandle> handles) override;
  absl::Status read_accessed(absl::Span<const ValueHandle> handles, std::vector<uint8_t>* bits) override;
  absl::Status clear_accessed(absl::Span<const ValueHandle> handles) override;
  double backing_seconds() const override { return backing_seconds_; }
  uint64_t reserved_bytes() const override { return reserved_; }
  uint64_t used_bytes() const override { return used_; }
  uint64_t live_values() const override { return live_; }
  absl::StatusOr<uint64_t> trim() override;
  void begin_trim() override;
  bool trimming() const override { return trim_.has_value(); }
  absl::StatusOr<TrimProgress> trim_step(uint64_t max_values) override;

  uint64_t chunk_bytes() const { return chunk_granules_ * kGranuleBytes; }
  uint64_t mapped_chunks() const { return mapped_chunks_; }
  // Free bytes inside the mapped chunks, and the largest free extent's.
  uint64_t free_bytes() const { return free_.free_granules() * kGranuleBytes; }
  uint64_t largest_free_bytes() const { return free_.largest() * kGranuleBytes; }
  // Value bytes compaction has copied so far.
  uint64_t moved_bytes() const { return moved_granules_ * kGranuleBytes; }
  // At least the extent of the longest live value (at most 1/8 more): no
  // stored value is longer. 0 when the heap is empty.
  uint64_t max_live_extent_bytes() const;
  // The bytes a value of `length` takes.
  static uint64_t extent_bytes(uint32_t length) { return granules(length) * kGranuleBytes; }

 protected:
  // min_chunk_bytes: the smallest chunk the backing should map; chunks are a
  // multiple of it, large enough for kMaxValuesPerChunk values of max_value_bytes.
  ExtentValueHeap(uint32_t max_value_bytes, uint64_t min_chunk_bytes);

  // One value that compaction moves: its bytes from `from` to `to`.
  struct Move {
    ValueHandle handle;
    const char* from;
    char* to;
  };

  // Backing memory of chunk_bytes() bytes, aligned to at least 256 bytes.
  virtual absl::StatusOr<char*> map_chunk() = 0;
  virtual void unmap_chunk(char* base) = 0;
  // Copies the moved values' bytes (and, on a device, records their new
  // places for the kernels); returns once they are copied. Overlapping: a
  // destination may overlap the source of a later move (a chunk slid toward
  // its start, in address order), so copy as if one after another.
  virtual absl::Status move(absl::Span<const Move> moves, bool overlapping) = 0;
  // Bytes, beyond the chunks, that holding `ids` ids takes (the device's
  // table of places); counted in reserved_bytes().
  virtual uint64_t id_table_bytes(uint64_t ids) const {
    (void)ids;
    return 0;
  }
  // Makes that table hold ids [0, ids).
  virtual absl::Status reserve_ids(uint64_t ids) {
    (void)ids;
    return absl::OkStatus();
  }

  // Where a live value's bytes are (host or device memory).
  char* address(ValueHandle handle) const {
    const Record& r = records_[value_handle::id(handle)];
    return chunks_[r.addr >> kChunkShift].base + (r.addr & kOffsetMask) * kGranuleBytes;
  }
  // The chunk (one mapping) a live value lies in: values of two chunks are
  // never one run of memory, even where the mappings happen to be neighbours.
  uint64_t chunk_of(ValueHandle handle) const { return records_[value_handle::id(handle)].addr >> kChunkShift; }
  // For the subclass's destructor: unmaps every chunk.
  void unmap_all();

 private:
  // An extent's address: the chunk's index above kChunkShift, the granule
  // offset below. Chunks hold far fewer than 2^32 granules, so extents of
  // two chunks are never neighbours in FreeExtents.
  static constexpr int kChunkShift = 32;
  static constexpr uint64_t kOffsetMask = (uint64_t{1} << kChunkShift) - 1;
  static constexpr uint64_t kNoAddr = UINT64_MAX;

  struct Record {
    uint64_t addr = kNoAddr;  // kNoAddr: the id is free
    uint32_t length : 31;     // value_handle::kMaxLength needs 25 bits
    uint32_t accessed : 1;    // the host's access bit (mark_accessed)
    uint32_t member = 0;      // index in its chunk's members
    Record() : length(0), accessed(0) {}
  };
  struct Chunk {
    char* base = nullptr;  // null: not mapped (the index is spare)
    uint64_t live_granules = 0;
    std::vector<uint64_t> members;  // ids of the values inside
  };

  static uint64_t granules(uint32_t length) {
    return length == 0 ? 1 : (uint64_t{length} + kGranuleBytes - 1) / kGranuleBytes;
  }
  static uint64_t chunk_start(uint64_t c) { return c << kChunkShift; }

  // Takes an extent and an id for each length, mapping chunks while the
  // limit allows; all or nothing: RESOURCE_EXHAUSTED (or a backing error)
  // leaves everything as it was.
  absl::Status allocate(absl::Span<const uint32_t> lengths, std::vector<ValueHandle>* handles, bool packed);
  // packed: runs of consecutive values share one take() of their extents.
  absl::Status place(absl::Span<const uint32_t> lengths, uint64_t id_growth, std::vector<ValueHandle>* handles,
                     bool packed);
  // Takes an id for a value of `len` bytes at `addr` and appends its handle.
  void place_one(uint32_t len, uint64_t addr, std::vector<ValueHandle>* handles);
  // place_one for values back to back from `addr` (all in one chunk).
  void place_run(absl::Span<const uint32_t> lengths, uint64_t addr, std::vector<ValueHandle>* handles);
  // Compaction (extent_value_heap_compaction.cc). Makes whole free chunks
  // plus `allowed` granules (chunks the limit allows) reach `goal`: empties
  // sparse chunks, then slides chunks so that each ends in a free extent of
  // at least `want` granules (the largest value to place); true when the
  // goal was reached.
  absl::StatusOr<bool> compact(uint64_t goal, uint64_t allowed, uint64_t want);
  // Empties chunks, sparsest first and each wholly or not at all, into the
  // holes of fuller ones, until whole free chunks plus `allowed` reach
  // `goal`, no chunk's values fit the holes left, or `max_misses` chunks
  // could not be emptied (bounding the work of a put that cannot be served).
  // Returns the whole free granules then.
  absl::StatusOr<uint64_t> empty_sparse_chunks(uint64_t goal, uint64_t allowed, int max_misses);
  // Moves every value of chunk c into holes of other chunks, or none: true
  // when c is left empty (and out of the free index, for the caller).
  absl::StatusOr<bool> empty_chunk(uint64_t c);
  // Slides chunks with at least min_free free granules, the most free first,
  // while `have` stays under `goal` (none when their free granules cannot
  // reach it). Returns `have` plus the free extents made.
  absl::StatusOr<uint64_t> slide_chunks(uint64_t goal, uint64_t have, uint64_t min_free, uint64_t want);
  // Moves chunk c's values toward its start, so its holes become one free
  // extent at its end; then, while that is shorter than `want`, moves its
  // last values to holes elsewhere. Returns the free extent's granules.
  absl::StatusOr<uint64_t> slide(uint64_t c, uint64_t want);
  // Plans a move of value `id` to `to` (its old address saved for put_back).
  Move relocate(uint64_t id, uint64_t to, std::vector<uint64_t>* old_addrs);
  // Undoes relocate()s (bookkeeping only).
  void put_back(absl::Span<const Move> moves, absl::Span<const uint64_t> old_addrs);
  // A trim in steps (extent_value_heap_trim.cc): the pass it is in and the
  // chunks the pass visits, sparsest first as when the pass began.
  enum class TrimPass { kEmpty, kSlide, kEmptyAgain, kDone };
  struct TrimState {
    // A constructor, not member initializers: clang cannot use those of a
    // nested class before the enclosing one is complete (std::optional's
    // emplace would find it not constructible).
    TrimState() : pass(TrimPass::kEmpty), next(0) {}
    TrimPass pass;
    std::vector<uint64_t> order;
    size_t next;
  };
  // Orders the mapped, partly used chunks for `pass`.
  void plan_trim_pass(TrimPass pass);
  // One chunk of the pass: the values it moved (its member count), 0 when it
  // was skipped. Ends the pass (next = order.size()) when no later chunk can
  // be emptied.
  absl::StatusOr<uint64_t> trim_chunk(uint64_t c);
  // Unmaps every wholly free chunk.
  void release_free_chunks();

  // The free extents of chunk c: the gaps between its members.
  std::vector<std::pair<uint64_t, uint64_t>> gaps(uint64_t c) const;
  absl::StatusOr<uint64_t> add_chunk();
  void remove_chunk(uint64_t c);  // must be wholly free
  void attach(uint64_t id, uint64_t addr);
  void detach(uint64_t id);
  // Chunks the limit still allows beyond id_growth bytes of id table.
  uint64_t addable_chunks(uint64_t id_growth) const;
  absl::Status refusal(absl::Span<const uint32_t> lengths, uint64_t need) const;
  // INVALID_ARGUMENT naming the limit, for a value longer than max_value_bytes.
  absl::Status too_long(uint64_t length) const;

  uint32_t max_value_bytes_;
  uint64_t chunk_granules_;
  FreeExtents free_;
  std::vector<Chunk> chunks_;
  std::vector<uint64_t> spare_chunks_;
  uint64_t mapped_chunks_ = 0;
  std::vector<Record> records_;  // by id
  std::vector<uint64_t> free_ids_;
  std::vector<uint64_t> live_by_bin_;  // live values per extent-size bin (max_live_extent_bytes)
  uint64_t reserved_ = 0;
  uint64_t used_ = 0;
  uint64_t live_ = 0;
  uint64_t moved_granules_ = 0;
  double backing_seconds_ = 0;
  std::optional<TrimState> trim_;
  // Fills in records_' pages ahead of a bulk load (reserve_values). Declared
  // after records_, so it stops before the array goes.
  Prefault records_prefault_;
};

}  // namespace gphkv::server

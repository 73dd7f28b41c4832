// The GPH table interface: one algorithm, two backends (engine/cpu, engine/cuda).
//
// A table maps uint64 keys to uint64 values (the service stores value-heap
// handles there). Every uint64 is a valid key, kEmptyKey included. Every bulk
// operation takes host spans and is synchronous; a table on a GPU also offers
// device-pointer, stream-ordered variants (stream_ordered(),
// gphkv/engine/stream_ordered_table.h).
//
// A table is not safe for concurrent calls: one owner (the executor thread)
// issues operations in order. Within one batch, operations on distinct keys
// are unordered; for a key that occurs more than once in an insert batch the
// last occurrence wins, exactly as if the batch ran in order.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "gphkv/engine/gph_hash.h"
#include "gphkv/engine/table_options.h"

namespace gphkv::engine {

class StreamOrderedTable;

enum class Backend { kCpu, kCuda };
std::string_view backend_name(Backend b);

// What insert_or_assign did with one key.
enum class UpsertOutcome : uint8_t {
  kInserted = 0,  // the key was new and now has its value
  kAssigned = 1,  // the key existed; its value was replaced
  kNoRoom = 2,    // the key's cell cannot be fitted (Extended Move failed):
                  // nothing changed for it; grow or rebuild the table
};

struct KeyValue {
  uint64_t key;
  uint64_t value;
  friend bool operator==(const KeyValue& a, const KeyValue& b) { return a.key == b.key && a.value == b.value; }
};

// A full copy of a table's state, for tests and for rebuilds: the Cell Index,
// every bucket slot (kEmptyKey marks a vacant slot) and the out-of-band slot
// that holds the key equal to kEmptyKey.
struct TableImage {
  gph::Geometry geometry;
  std::vector<uint8_t> cells;    // L bytes
  std::vector<uint64_t> keys;    // N * M, bucket-major
  std::vector<uint64_t> values;  // N * M, same order as keys
  bool has_empty_key = false;
  uint64_t empty_key_value = 0;
};

class Table {
 public:
  virtual ~Table() = default;

  virtual Backend backend() const = 0;
  virtual const TableOptions& options() const = 0;
  virtual const gph::Geometry& geometry() const = 0;

  // For each keys[i]: found[i] = 1 and values[i] = its value, or found[i] = 0
  // (values[i] untouched). Probes exactly one bucket per key.
  virtual absl::Status find(absl::Span<const uint64_t> keys, absl::Span<uint64_t> values,
                            absl::Span<uint8_t> found) = 0;

  // Inserts or overwrites each pair; outcomes[i] says what happened to keys[i].
  // A kNoRoom outcome is not an error of the call: the call still returns OK.
  virtual absl::Status insert_or_assign(absl::Span<const uint64_t> keys, absl::Span<const uint64_t> values,
                                        absl::Span<UpsertOutcome> outcomes) = 0;

  // Removes each key; erased[i] = 1 if keys[i] was present. The slot is
  // cleared in place: GPH needs no tombstones (a key has only one bucket).
  virtual absl::Status erase(absl::Span<const uint64_t> keys, absl::Span<uint8_t> erased) = 0;

  // Removes every key and resets every cell to (Φ=0, Δ=0).
  virtual absl::Status clear() = 0;

  // Number of keys stored.
  virtual uint64_t size() const = 0;

  // Every stored pair, in no particular order.
  virtual absl::StatusOr<std::vector<KeyValue>> export_pairs() const = 0;

  // Every stored key, in no particular order, into *keys (cleared first; its
  // capacity is kept, so a caller that lists the keys again and again, a
  // snapshot each minute, reuses its pages). Half of export_pairs' bytes,
  // and the backends filter where the slots live (the CUDA table on the
  // device): a snapshot's key listing holds the executor for this long.
  virtual absl::Status export_keys(std::vector<uint64_t>* keys) const {
    auto pairs = export_pairs();
    if (!pairs.ok()) return pairs.status();
    keys->clear();
    keys->reserve(pairs->size());
    for (const KeyValue& kv : *pairs) keys->push_back(kv.key);
    return absl::OkStatus();
  }

  // The whole state: cells, buckets and the out-of-band slot.
  virtual absl::StatusOr<TableImage> image() const = 0;

  // Replaces the whole state with `image`, whose geometry must equal this
  // table's (same options). Used to install a table built in bulk.
  virtual absl::Status load_image(const TableImage& image) {
    (void)image;
    return absl::UnimplementedError(std::string(backend_name(backend())) + " table cannot load an image");
  }

  // Cells relocated by Extended Move since the table was created, as of its
  // last synchronous operation: how often inserts met a full bucket. 0 from
  // a backend that does not count them (the CPU's).
  virtual uint64_t relocations() const { return 0; }

  // The device-pointer, stream-ordered operations of a table whose slots
  // live on a GPU (the CUDA backend); null for a table in host memory.
  virtual StreamOrderedTable* stream_ordered() { return nullptr; }

  // size() over the N * M bucket slots.
  double load_factor() const {
    const uint64_t slots = geometry().num_slots();
    return slots == 0 ? 0.0 : static_cast<double>(size()) / static_cast<double>(slots);
  }
};

// The CPU backend: the reference implementation, always built.
absl::StatusOr<std::unique_ptr<Table>> make_cpu_table(const TableOptions& options);

}  // namespace gphkv::engine

namespace gphkv::engine {

// The CUDA backend on GPU `device`. In a build without nvcc it returns
// UNIMPLEMENTED; with no usable device, UNAVAILABLE with CUDA's error text.
absl::StatusOr<std::unique_ptr<Table>> make_cuda_table(const TableOptions& options, int device = 0);

// CUDA devices this process can use (0 in a build without nvcc).
int cuda_device_count();

// The name of CUDA device `device` ("NVIDIA H100 80GB HBM3"), or "" in a build
// without nvcc or when the device cannot be queried.
std::string cuda_device_name(int device);

// The table of the given backend (device is ignored by the CPU backend).
absl::StatusOr<std::unique_ptr<Table>> make_table(Backend backend, const TableOptions& options, int device = 0);

}  // namespace gphkv::engine

namespace gphkv::engine {

// One write of a burst: a put of (key, value), or an erase of key.
struct WriteOp {
  uint64_t key;
  uint64_t value;
  bool erase;
};

// What a bulk build did (for logs and metrics).
struct BuildStats {
  uint64_t input_pairs = 0;      // base pairs + burst writes seen
  uint64_t keys = 0;             // keys in the built table
  uint32_t parallel_rounds = 0;  // rounds of parallel (Φ, Δ) choice
  uint64_t cells_moved = 0;      // cells that left (Φ=0, Δ=0)
  uint64_t cells_serial = 0;     // cells settled by the final serial pass
  double seconds = 0;            // wall time of the build
};

// Builds a new table in bulk, HashGraph-style (count per bin and bucket,
// prefix sums, place), from `base` (pairs with distinct keys, e.g. a live
// table's export) and `burst` (writes applied after base, in order: for a
// key written more than once the last write wins; an erase removes it).
// The result satisfies every GPH invariant of the incremental path.
// RESOURCE_EXHAUSTED when some cell cannot be fitted at options.num_buckets:
// the caller grows and retries. See docs/gph.md, "Bulk build".
absl::StatusOr<std::unique_ptr<Table>> bulk_build(Backend backend, const TableOptions& options,
                                                  absl::Span<const KeyValue> base, absl::Span<const WriteOp> burst,
                                                  BuildStats* stats = nullptr, int device = 0);

}  // namespace gphkv::engine

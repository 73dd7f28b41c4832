// What the durability tests share: a model of the store (a sorted map) that
// is also a RecoverySink, batches drawn at random from a seed (so a parent
// process can rebuild what its killed child wrote), a PairSource over a
// model, scratch directories, and the file surgery the crash tests do.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "server/durability/data_dir.h"
#include "server/durability/pairs.h"
#include "server/durability/write_batch.h"

namespace gphkv::server::durability::testing {

using Model = std::map<uint64_t, std::string>;
// Byte keys' state (issue 26), beside a Model: the two kinds never alias.
using ByteModel = std::map<std::string, std::string>;

// A stream of batches: of uint64 keys only (the stream every test drew
// before byte keys), or with runs of byte keys too (about half of them).
enum class Keys { kUint64, kBoth };

// A store as recovery rebuilds it.
class ModelSink : public RecoverySink {
 public:
  absl::Status on_snapshot_begin(uint64_t pairs, uint64_t value_bytes) override;
  absl::Status on_puts(const Pairs& pairs) override;
  absl::Status on_deletes(absl::Span<const uint64_t> keys) override;
  absl::Status on_byte_deletes(absl::Span<const std::string_view> keys) override;
  // Kept as they came (the byte model has no versions to hide by).
  absl::Status on_flush(const FlushMark& mark) override;
  absl::Status on_snapshot_loaded(uint64_t sequence) override;
  absl::Status on_reset() override;

  Model state;
  ByteModel byte_state;
  std::vector<FlushMark> flushes;
  uint64_t snapshot_sequence = UINT64_MAX;  // UINT64_MAX until on_snapshot_loaded
  uint64_t resets = 0;
  // What the last on_snapshot_begin said, and the pairs delivered before it (0).
  uint64_t begun_pairs = UINT64_MAX, begun_value_bytes = UINT64_MAX, puts_before_begin = UINT64_MAX;
};

// Batch `sequence` of the stream drawn from `seed`: 1 to 3 runs of puts and
// deletes over a small key space (so keys are overwritten and deleted, and
// 0 and UINT64_MAX come up), values of 0 to 300 bytes and now and then up
// to 64 KiB. Applies it to *model as well, unless model is null. With
// Keys::kBoth, runs of byte keys too, over a small space of keys (binary ones
// with NUL bytes, and keys of the longest length, 4096 bytes, among them),
// applied to *byte_model unless it is null.
WriteBatch random_batch(uint64_t seed, uint64_t sequence, Model* model, Keys keys = Keys::kUint64,
                        ByteModel* byte_model = nullptr);
// The model after batches 1..last of the stream (and its byte keys' model).
Model model_after(uint64_t seed, uint64_t last, Keys keys = Keys::kUint64, ByteModel* byte_model = nullptr);

// Appends batches [from, to] of the seed's stream, checking their numbers
// (gtest assertions: call it under ASSERT_NO_FATAL_FAILURE where it matters).
void append_batches(DataDir& dir, uint64_t seed, uint64_t from, uint64_t to, Keys keys = Keys::kUint64);

// Yields a model's pairs in chunks of up to `chunk` pairs, reading the map
// as it is at each call (so a test may change it between calls: a fuzzy
// export), in key order from where the last chunk ended; then, given a byte
// model, its pairs the same way.
class ModelSource : public PairSource {
 public:
  ModelSource(const Model* model, size_t chunk, const ByteModel* byte_model = nullptr)
      : model_(model), byte_model_(byte_model), chunk_(chunk) {}
  absl::StatusOr<bool> next(Pairs* out) override;
  // Called before each chunk is taken (writes that race the export).
  std::function<void()> before_chunk;
  // Fail with this error at the chunk of this index (none when npos).
  size_t fail_at_chunk = SIZE_MAX;

 private:
  const Model* model_;
  const ByteModel* byte_model_;
  size_t chunk_;
  size_t chunks_ = 0;
  bool started_ = false;
  uint64_t next_key_ = 0;
  bool done_ = false;
  bool byte_started_ = false;
  std::string next_byte_key_;
  bool byte_done_ = false;
  std::vector<uint64_t> keys_;
  std::vector<std::string> bytes_;
  std::vector<std::string> byte_key_copies_;
  std::vector<std::string_view> values_, byte_keys_;
};

// A fresh directory under the test temp dir, removed (with what is in it)
// when the object goes.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// File surgery.
std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& bytes);
void copy_dir(const std::string& from, const std::string& to);  // plain files only
std::vector<std::string> list_names(const std::string& dir);    // sorted
// The last file of `dir` whose name starts with `prefix` (names sort by sequence).
std::string last_file(const std::string& dir, const std::string& prefix);

// The offset of every record of a log segment, in order.
std::vector<uint64_t> record_offsets(const std::string& bytes);

// A fresh seed per run, or GPHKV_TEST_SEED to replay one.
uint64_t test_seed();

}  // namespace gphkv::server::durability::testing

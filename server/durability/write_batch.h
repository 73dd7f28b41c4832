// One record of the log: the puts and deletes of one executor write batch,
// in the order they took effect, under one sequence number (1, 2, 3, ...
// with no gaps: recovery checks that). The payload:
//
//   [u64 sequence]
//   runs, back to back up to the end of the payload:
//     [u8 kind][u32 count]
//     1 puts:              count entries [u64 key][u32 value length][value bytes]  (pair_codec.h)
//     2 deletes:           count keys [u64 key]
//     3 puts of byte keys: count entries [u16 key length][key][u32 value length][value bytes]
//     4 deletes of byte keys: count entries [u16 key length][key]
//     5 puts of byte-key items: count entries as 3's, each with the item's
//                          flags, absolute expiry and CAS when they are not
//                          all 0 (pair_codec.h)
//     6 flush marks:       count entries [u64 below][u32 at] (pairs.h's FlushMark)
//
// Kinds 3 and 4 came with byte keys (issue 26), kind 5 with the item fields
// (issue 27), kind 6 with flush_all's log (issue 27): a batch without byte
// keys is byte for byte what earlier builds wrote, one without item fields or
// flushes what the builds before issue 27 wrote,
// so their logs load as they are, and an earlier build stops at a newer run
// naming its unknown kind.
//
// Consecutive additions of one kind extend one run. Replaying a batch onto
// any state gives the keys it wrote the values it wrote (it carries whole
// values, never increments), which is what lets a snapshot be fuzzy
// (snapshot_writer.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "server/durability/pairs.h"

namespace gphkv::server::durability {

class WriteBatch {
 public:
  WriteBatch() { clear(); }

  // The pairs of a PutRequest: lengths[i] bytes of `bytes` are keys[i]'s value.
  void add_puts(absl::Span<const uint64_t> keys, absl::Span<const uint32_t> lengths, std::string_view bytes);
  void add_puts(const Pairs& pairs);  // either kind of key
  void add_deletes(absl::Span<const uint64_t> keys);
  // Byte keys' puts (lengths[i] bytes of `bytes` are keys[i]'s value) and
  // deletes; metas[i] is keys[i]'s item fields (none: all 0).
  void add_byte_puts(absl::Span<const std::string_view> keys, absl::Span<const uint32_t> lengths,
                     std::string_view bytes, absl::Span<const byte_key::ItemMeta> metas = {});
  void add_byte_deletes(absl::Span<const std::string_view> keys);
  void add_flush(const FlushMark& mark);

  // Puts, deletes and flush marks added.
  uint64_t ops() const { return ops_; }
  bool empty() const { return ops_ == 0; }
  void clear();

  // The log writer stamps the batch's sequence number in before writing it.
  void set_sequence(uint64_t sequence);
  std::string_view payload() const { return payload_; }

 private:
  // Adds n ops to the last run if it is of `kind`, else starts a run.
  void extend_run(uint8_t kind, uint64_t n);

  std::string payload_;
  uint8_t run_kind_ = 0;     // kind of the last run, 0 before any
  size_t run_count_at_ = 0;  // payload offset of the last run's count
  uint64_t ops_ = 0;
};

// A batch read back: its runs, in order, as views into the payload.
struct DecodedBatch {
  struct Run {
    bool puts = true;  // else deletes (values empty)
    std::vector<uint64_t> keys;
    std::vector<std::string_view> values;
    std::vector<std::string_view> byte_keys;  // a run of byte keys (keys empty)
    std::vector<byte_key::ItemMeta> metas;    // a run of byte-key items: byte_keys[i]'s fields
    std::vector<FlushMark> flushes;           // a run of flush marks (puts false, no keys)
  };
  uint64_t sequence = 0;
  std::vector<Run> runs;
  uint64_t puts = 0;
  uint64_t deletes = 0;

  // Hands the runs to `sink` in order; the first sink error ends it.
  absl::Status replay(RecoverySink& sink) const;
};

// The sequence number of a batch payload (at least 8 bytes).
uint64_t batch_sequence(std::string_view payload);

// Decodes a whole payload before anything of it is applied. DATA_LOSS,
// naming the byte inside the payload, when it is malformed (a CRC-clean
// payload is malformed only through a bug or a CRC collision).
absl::Status decode_write_batch(std::string_view payload, DecodedBatch* out);

}  // namespace gphkv::server::durability

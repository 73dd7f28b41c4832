#include "server/durability/write_batch.h"

#include "absl/strings/str_cat.h"
#include "server/durability/byte_order.h"
#include "server/durability/pair_codec.h"

namespace gphkv::server::durability {
namespace {

constexpr uint8_t kPutRun = 1;
constexpr uint8_t kDeleteRun = 2;
constexpr uint8_t kBytePutRun = 3;
constexpr uint8_t kByteDeleteRun = 4;
constexpr uint8_t kByteItemPutRun = 5;
constexpr uint8_t kFlushRun = 6;
constexpr size_t kFlushEntryBytes = 12;  // below, at
constexpr size_t kSequenceBytes = 8;
constexpr size_t kRunHeaderBytes = 5;  // kind, count

}  // namespace

void WriteBatch::clear() {
  payload_.assign(kSequenceBytes, '\0');
  run_kind_ = 0;
  run_count_at_ = 0;
  ops_ = 0;
}

void WriteBatch::extend_run(uint8_t kind, uint64_t n) {
  if (n == 0) return;
  if (run_kind_ != kind) {
    run_kind_ = kind;
    payload_.push_back(static_cast<char>(kind));
    run_count_at_ = payload_.size();
    payload_.append(4, '\0');
  }
  const uint64_t count = load_le32(&payload_[run_count_at_]) + n;
  if (count > UINT32_MAX) {  // a run's count is 32 bits: start another run of the same kind
    run_kind_ = 0;
    extend_run(kind, n);
    return;
  }
  store_le32(&payload_[run_count_at_], static_cast<uint32_t>(count));
  ops_ += n;
}

void WriteBatch::add_puts(absl::Span<const uint64_t> keys, absl::Span<const uint32_t> lengths, std::string_view bytes) {
  extend_run(kPutRun, keys.size());
  append_pair_entries(&payload_, keys, lengths, bytes);
}

void WriteBatch::add_puts(const Pairs& pairs) {
  if (pairs.has_item_fields()) {
    extend_run(kByteItemPutRun, pairs.byte_keys.size());
    append_byte_item_entries(&payload_, pairs.byte_keys, pairs.metas, pairs.values);
    return;
  }
  if (pairs.has_byte_keys()) {
    extend_run(kBytePutRun, pairs.byte_keys.size());
    append_byte_pair_entries(&payload_, pairs.byte_keys, pairs.values);
    return;
  }
  extend_run(kPutRun, pairs.keys.size());
  append_pair_entries(&payload_, pairs.keys, pairs.values);
}

void WriteBatch::add_byte_puts(absl::Span<const std::string_view> keys, absl::Span<const uint32_t> lengths,
                               std::string_view bytes, absl::Span<const byte_key::ItemMeta> metas) {
  if (any_item_fields(metas)) {
    extend_run(kByteItemPutRun, keys.size());
    append_byte_item_entries(&payload_, keys, metas, lengths, bytes);
    return;
  }
  extend_run(kBytePutRun, keys.size());
  append_byte_pair_entries(&payload_, keys, lengths, bytes);
}

void WriteBatch::add_byte_deletes(absl::Span<const std::string_view> keys) {
  extend_run(kByteDeleteRun, keys.size());
  append_byte_key_entries(&payload_, keys);
}

void WriteBatch::add_deletes(absl::Span<const uint64_t> keys) {
  extend_run(kDeleteRun, keys.size());
  const size_t at = payload_.size();
  payload_.resize(at + 8 * keys.size());
  for (size_t i = 0; i < keys.size(); ++i) store_le64(&payload_[at + 8 * i], keys[i]);
}

void WriteBatch::add_flush(const FlushMark& mark) {
  extend_run(kFlushRun, 1);
  const size_t at = payload_.size();
  payload_.resize(at + kFlushEntryBytes);
  store_le64(&payload_[at], mark.below);
  store_le32(&payload_[at + 8], mark.at);
}

void WriteBatch::set_sequence(uint64_t sequence) { store_le64(payload_.data(), sequence); }

uint64_t batch_sequence(std::string_view payload) { return load_le64(payload.data()); }

absl::Status decode_write_batch(std::string_view payload, DecodedBatch* out) {
  if (payload.size() < kSequenceBytes) {
    return absl::DataLossError(absl::StrCat("a batch of ", payload.size(), " bytes has no sequence number"));
  }
  out->sequence = batch_sequence(payload);
  out->runs.clear();
  out->puts = out->deletes = 0;
  for (uint64_t at = kSequenceBytes; at < payload.size();) {
    const uint64_t run_at = at;
    if (payload.size() - at < kRunHeaderBytes) {
      return absl::DataLossError(absl::StrCat("batch ", out->sequence, ": run header cut short at byte ", run_at));
    }
    const uint8_t kind = static_cast<uint8_t>(payload[at]);
    const uint64_t n = load_le32(payload.data() + at + 1);
    at += kRunHeaderBytes;
    DecodedBatch::Run& run = out->runs.emplace_back();
    if (kind == kPutRun) {
      if (!decode_pair_entries(payload, &at, n, &run.keys, &run.values)) {
        return absl::DataLossError(absl::StrCat("batch ", out->sequence, ": the ", n, " puts of the run at byte ",
                                                run_at, " run past its end"));
      }
      out->puts += n;
    } else if (kind == kDeleteRun) {
      if ((payload.size() - at) / 8 < n) {
        return absl::DataLossError(absl::StrCat("batch ", out->sequence, ": the ", n, " deletes of the run at byte ",
                                                run_at, " run past its end"));
      }
      run.puts = false;
      run.keys.resize(n);
      for (uint64_t i = 0; i < n; ++i) run.keys[i] = load_le64(payload.data() + at + 8 * i);
      at += 8 * n;
      out->deletes += n;
    } else if (kind == kBytePutRun) {
      if (!decode_byte_pair_entries(payload, &at, n, &run.byte_keys, &run.values)) {
        return absl::DataLossError(absl::StrCat("batch ", out->sequence, ": the ", n,
                                                " puts of byte keys of the run at byte ", run_at,
                                                " run past its end or hold a key of a length out of range"));
      }
      out->puts += n;
    } else if (kind == kByteItemPutRun) {
      if (!decode_byte_item_entries(payload, &at, n, &run.byte_keys, &run.metas, &run.values)) {
        return absl::DataLossError(absl::StrCat("batch ", out->sequence, ": the ", n,
                                                " puts of byte-key items of the run at byte ", run_at,
                                                " run past its end or hold a key of a length out of range"));
      }
      out->puts += n;
    } else if (kind == kFlushRun) {
      if ((payload.size() - at) / kFlushEntryBytes < n) {
        return absl::DataLossError(absl::StrCat("batch ", out->sequence, ": the ", n,
                                                " flush marks of the run at byte ", run_at, " run past its end"));
      }
      run.puts = false;
      run.flushes.resize(n);
      for (uint64_t i = 0; i < n; ++i, at += kFlushEntryBytes) {
        run.flushes[i] = FlushMark{load_le64(payload.data() + at), load_le32(payload.data() + at + 8)};
      }
    } else if (kind == kByteDeleteRun) {
      run.puts = false;
      if (!decode_byte_key_entries(payload, &at, n, &run.byte_keys)) {
        return absl::DataLossError(absl::StrCat("batch ", out->sequence, ": the ", n,
                                                " deletes of byte keys of the run at byte ", run_at,
                                                " run past its end or hold a key of a length out of range"));
      }
      out->deletes += n;
    } else {
      return absl::DataLossError(
          absl::StrCat("batch ", out->sequence, ": unknown run kind ", static_cast<int>(kind), " at byte ", run_at));
    }
  }
  return absl::OkStatus();
}

absl::Status DecodedBatch::replay(RecoverySink& sink) const {
  for (const Run& run : runs) {
    absl::Status s;
    if (run.puts) {
      s = sink.on_puts(Pairs{run.keys, run.values, run.byte_keys, run.metas});
    } else if (!run.flushes.empty()) {
      for (const FlushMark& mark : run.flushes) {
        if (s = sink.on_flush(mark); !s.ok()) break;
      }
    } else {
      s = run.byte_keys.empty() ? sink.on_deletes(run.keys) : sink.on_byte_deletes(run.byte_keys);
    }
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace gphkv::server::durability

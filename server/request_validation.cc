#include "server/request_validation.h"

#include "absl/strings/str_cat.h"
#include "server/conditional_put.h"

namespace gphkv::server {
namespace {

absl::Status check_count(const char* what, size_t keys, const RequestLimits& limits) {
  if (keys == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " has no keys; send 1 to ", limits.max_call_keys, " (--max_call_keys)"));
  }
  if (static_cast<uint64_t>(keys) > limits.max_call_keys) {
    return absl::InvalidArgumentError(absl::StrCat(what, " has ", keys,
                                                   " keys; the limit per call (--max_call_keys) is ",
                                                   limits.max_call_keys, "; split the batch"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status validate_value_mode(const v1::GetRequest& req) {
  if (!v1::ValueMode_IsValid(req.value_mode())) {
    return absl::InvalidArgumentError(absl::StrCat("GetRequest.value_mode ", req.value_mode(),
                                                   " is not a ValueMode (0 UNSPECIFIED, 1 VALUES, 2 EXISTS)"));
  }
  return absl::OkStatus();
}

absl::Status validate_item_fields(const v1::PutRequest& req, bool uint64_keys) {
  if (req.cas() != 0 && req.mode() != v1::WRITE_MODE_CAS) {
    return absl::InvalidArgumentError(
        absl::StrCat("PutRequest.cas is ", req.cas(), " but mode is not WRITE_MODE_CAS; only a cas reads it"));
  }
  if (!uint64_keys) return absl::OkStatus();
  const char* field = req.flags() != 0                   ? "flags"
                      : req.exptime() != 0               ? "exptime"
                      : req.mode() == v1::WRITE_MODE_CAS ? "mode WRITE_MODE_CAS"
                                                         : nullptr;
  if (field == nullptr) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("PutRequest.", field,
                                                 ": only byte keys carry item fields (flags, expiry, CAS); "
                                                 "this request has uint64 keys"));
}

absl::Status validate_item_fields(const v1::GetRequest& req, bool uint64_keys, bool packed) {
  const char* field = req.with_items() ? "with_items" : req.touch() ? "touch" : nullptr;
  if (field == nullptr) {
    if (req.touch_exptime() != 0) {
      return absl::InvalidArgumentError("GetRequest.touch_exptime is set but touch is not; only a touch reads it");
    }
    return absl::OkStatus();
  }
  if (packed) {
    return absl::InvalidArgumentError(absl::StrCat(
        "BatchRequest.gets.", field, ": packed gets take no item fields; send such a get as an Operation"));
  }
  if (uint64_keys) {
    return absl::InvalidArgumentError(absl::StrCat("GetRequest.", field,
                                                   ": only byte keys carry item fields (flags, expiry, CAS); "
                                                   "this request has uint64 keys"));
  }
  if (req.touch() && req.value_mode() == v1::VALUE_MODE_EXISTS) {
    return absl::InvalidArgumentError(
        "GetRequest.touch reads the items' values to rewrite them; use VALUE_MODE_VALUES with it");
  }
  return absl::OkStatus();
}

namespace {

absl::Status validate_byte_keys(const char* what, const ByteKeys& keys, const RequestLimits& limits) {
  for (size_t i = 0; i < keys.lengths.size(); ++i) {
    const uint32_t len = keys.lengths[i];
    if (len == 0 || len > limits.max_key_bytes) {
      return absl::InvalidArgumentError(absl::StrCat(what, " byte key ", i, " is ", len, " bytes; a key has 1 to ",
                                                     limits.max_key_bytes, " bytes (--max_key_bytes)"));
    }
  }
  return absl::OkStatus();
}

// A conditional put is decided against one stored value: one key (a call
// of many would be split over partitions, and a split call is not atomic);
// incr/decr's delta is a number.
absl::Status validate_mode(const PutOp& put) {
  const auto mode = static_cast<uint8_t>(put.mode);
  // kFlush comes from the memcached port only (wire_calls.cc refuses what
  // WriteMode does not name; WRITE_MODE_CAS is kCompareAndSet).
  if (mode > static_cast<uint8_t>(PutMode::kFlush)) {
    return absl::InvalidArgumentError(absl::StrCat("PutRequest.mode ", mode,
                                                   " is not a WriteMode (0 SET, 1 ADD, 2 REPLACE, 3 APPEND, "
                                                   "4 PREPEND, 5 INCREMENT, 6 DECREMENT)"));
  }
  if (put.mode == PutMode::kSet) return absl::OkStatus();
  if (put.mode == PutMode::kFlush) {
    if (put.keys.empty() && put.values.empty()) return absl::OkStatus();
    return absl::InvalidArgumentError("PutRequest.mode flush_all takes no keys and no values");
  }
  if (put.keys.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat("PutRequest.mode ", put_mode_name(put.mode), " takes one key, not ",
                                                   put.keys.size(), "; send one call per key"));
  }
  if ((put.mode == PutMode::kIncrement || put.mode == PutMode::kDecrement) &&
      !parse_counter(put.values, /*trailing_spaces=*/false)) {
    return absl::InvalidArgumentError(absl::StrCat("PutRequest.mode ", put_mode_name(put.mode),
                                                   ": the value must be the delta, a decimal number of 1 to ",
                                                   kMaxCounterDigits, " digits below 2^64"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status validate(const Call& call, const RequestLimits& limits) {
  const char* what = "";
  switch (call.kind()) {
    case OpKind::kGet: what = "GetRequest"; break;
    case OpKind::kPut: what = "PutRequest"; break;
    case OpKind::kDelete: what = "DeleteRequest"; break;
    case OpKind::kShrink: return absl::OkStatus();
  }
  if (absl::Status s = validate_byte_keys(what, call.byte_keys(), limits); !s.ok()) return s;
  switch (call.kind()) {
    case OpKind::kGet: return call.get().packed ? absl::OkStatus() : check_count(what, call.num_keys(), limits);
    case OpKind::kDelete: return check_count(what, call.num_keys(), limits);
    case OpKind::kShrink: return absl::OkStatus();
    case OpKind::kPut: break;
  }
  const PutOp& put = call.put();
  if (put.mode == PutMode::kFlush) return validate_mode(put);  // no keys: every partition's items
  if (auto s = check_count("PutRequest", put.keys.size(), limits); !s.ok()) return s;
  if (put.value_lengths.size() != put.keys.size()) {
    return absl::InvalidArgumentError(absl::StrCat("PutRequest has ", put.keys.size(), " keys but ",
                                                   put.value_lengths.size(), " value_lengths; they must match"));
  }
  uint64_t total = 0;
  for (size_t i = 0; i < put.value_lengths.size(); ++i) {
    const uint32_t len = put.value_lengths[i];
    if (len > limits.max_value_bytes) {
      const std::string key = put.byte_keys.empty() ? absl::StrCat("key ", put.keys[i]) : "a byte key";
      return absl::InvalidArgumentError(absl::StrCat("PutRequest value ", i, " (", key, ") is ", len,
                                                     " bytes; the limit (--max_value_bytes) is ",
                                                     limits.max_value_bytes));
    }
    total += len;
  }
  if (total != put.values.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("PutRequest.values holds ", put.values.size(), " bytes but value_lengths sum to ", total));
  }
  return validate_mode(put);
}

absl::Status validate_packed_gets(const v1::BatchRequest& req, const RequestLimits& limits, uint64_t max_keys) {
  if (!v1::ValueMode_IsValid(req.gets().value_mode())) {
    return absl::InvalidArgumentError(absl::StrCat("BatchRequest.gets.value_mode ", req.gets().value_mode(),
                                                   " is not a ValueMode (0 UNSPECIFIED, 1 VALUES, 2 EXISTS)"));
  }
  uint64_t sum = 0;
  for (int i = 0; i < req.get_counts_size(); ++i) {
    const uint32_t n = req.get_counts(i);
    if (n == 0 || n > limits.max_call_keys) {
      return absl::InvalidArgumentError(absl::StrCat("get_counts[", i, "] is ", n, "; a packed get has 1 to ",
                                                     limits.max_call_keys, " keys (--max_call_keys)"));
    }
    sum += n;
  }
  if (req.get_counts_size() == 0 || sum != static_cast<uint64_t>(wire_key_count(req.gets()))) {
    return absl::InvalidArgumentError(
        absl::StrCat("get_counts add up to ", sum, " but gets carries ", wire_key_count(req.gets()), " keys"));
  }
  if (sum > max_keys) {
    return absl::InvalidArgumentError(absl::StrCat("the packed gets carry ", sum, " keys; the server queues at most ",
                                                   max_keys, " (--max_queue_keys); send fewer per message"));
  }
  return absl::OkStatus();
}

}  // namespace gphkv::server

// A model of byte-key items (issue 27) for the store tests of item fields
// and versions: memcached's rules for expiry and for each keyed write,
// written apart from the store's code (byte_key::absolute_exptime,
// conditional_put.cc), which the tests check against it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "server/call.h"

namespace gphkv::server {

struct ModelItem {
  std::string value;
  uint32_t flags = 0;
  uint32_t exptime = 0;  // absolute
  uint64_t cas = 0;
  bool flushed = false;
};

// memcached's exptime rule: 0 never; up to 30 days from `now`; beyond, an
// absolute time; negative, expired at once.
inline uint32_t model_exptime(int64_t raw, uint32_t now) {
  if (raw == 0) return 0;
  if (raw < 0) return now;
  if (raw <= 30 * 24 * 3600) return now + static_cast<uint32_t>(raw);
  return static_cast<uint32_t>(raw);
}

// memcached's rule for a stored counter, written apart from parse_counter:
// 1 to 20 digits below 2^64, then any spaces (memcached reads a stored
// number up to the first space, and pads a decremented one to its length).
inline std::optional<uint64_t> model_counter(std::string v) {
  while (!v.empty() && v.back() == ' ') v.pop_back();
  if (v.empty() || v.size() > 20 || v.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  if (v.size() == 20 && v > "18446744073709551615") return std::nullopt;
  return std::stoull(v);
}

// What a keyed write of `mode` answers, and the item it leaves (none: the
// key keeps what it held). `held` is the live item (null when absent or
// expired), `fresh` the item the write's own value, flags and expiry make,
// `unique` a cas's expected version.
struct ModelWrite {
  absl::StatusCode code = absl::StatusCode::kOk;
  std::optional<ModelItem> after;
};
inline ModelWrite model_write(PutMode mode, const ModelItem* held, const ModelItem& fresh, uint64_t unique,
                              size_t max_value) {
  ModelWrite w;
  const std::string& value = fresh.value;
  switch (mode) {
    case PutMode::kSet: w.after = fresh; break;
    case PutMode::kAdd:
      if (held) {
        w.code = absl::StatusCode::kAlreadyExists;
      } else {
        w.after = fresh;
      }
      break;
    case PutMode::kReplace:
      if (!held) {
        w.code = absl::StatusCode::kNotFound;
      } else {
        w.after = fresh;
      }
      break;
    case PutMode::kCompareAndSet:
      if (!held) {
        w.code = absl::StatusCode::kNotFound;
      } else if (held->cas != unique) {
        w.code = absl::StatusCode::kAborted;
      } else {
        w.after = fresh;
      }
      break;
    case PutMode::kAppend:
    case PutMode::kPrepend:
      if (!held) {
        w.code = absl::StatusCode::kNotFound;
        break;
      }
      w.after = *held;
      w.after->value = mode == PutMode::kAppend ? held->value + value : value + held->value;
      if (w.after->value.size() > max_value) {
        w.code = absl::StatusCode::kResourceExhausted;
        w.after.reset();
      }
      break;
    case PutMode::kIncrement:
    case PutMode::kDecrement: {
      if (!held) {
        w.code = absl::StatusCode::kNotFound;
        break;
      }
      const std::optional<uint64_t> now = model_counter(held->value);
      if (!now) {
        w.code = absl::StatusCode::kInvalidArgument;
        break;
      }
      const uint64_t n = *now, d = std::stoull(value);
      w.after = *held;
      w.after->value = std::to_string(mode == PutMode::kIncrement ? n + d : (n > d ? n - d : 0));
      break;
    }
    case PutMode::kFlush: w.code = absl::StatusCode::kInternal; break;  // not a keyed write
  }
  return w;
}

}  // namespace gphkv::server

#include "server/conditional_put.h"

#include "absl/strings/str_cat.h"

namespace gphkv::server {

std::optional<uint64_t> parse_counter(std::string_view text, bool trailing_spaces) {
  if (trailing_spaces) {
    while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  }
  if (text.empty() || text.size() > kMaxCounterDigits) return std::nullopt;
  uint64_t n = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (n > (UINT64_MAX - digit) / 10) return std::nullopt;  // past 2^64 - 1
    n = n * 10 + digit;
  }
  return n;
}

const char* put_mode_name(PutMode mode) {
  switch (mode) {
    case PutMode::kSet: return "set";
    case PutMode::kAdd: return "add";
    case PutMode::kReplace: return "replace";
    case PutMode::kAppend: return "append";
    case PutMode::kPrepend: return "prepend";
    case PutMode::kIncrement: return "incr";
    case PutMode::kDecrement: return "decr";
    case PutMode::kCompareAndSet: return "cas";
    case PutMode::kFlush: return "flush_all";
  }
  return "put";
}

absl::Status resolve_put(PutMode mode, std::optional<std::string_view> stored, std::string_view operand,
                         uint32_t max_value_bytes, ResolvedPut* out, uint64_t stored_cas, uint64_t expected_cas,
                         bool compare_cas) {
  if (mode == PutMode::kAdd) {
    if (stored) return absl::AlreadyExistsError("add: the key is stored already; nothing was changed");
    out->value.assign(operand);
    return absl::OkStatus();
  }
  if (!stored) {
    return absl::NotFoundError(absl::StrCat(put_mode_name(mode), ": the key is not stored; nothing was changed"));
  }
  // memcached's incr and decr refuse an empty value before they compare a
  // CAS, and compare it before they read the number.
  if (compare_cas && (mode == PutMode::kIncrement || mode == PutMode::kDecrement) && stored->empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(put_mode_name(mode), ": cannot increment or decrement non-numeric value"));
  }
  if (compare_cas && mode != PutMode::kCompareAndSet && stored_cas != expected_cas) {
    return absl::AbortedError(absl::StrCat(put_mode_name(mode), ": the item's CAS version is not ", expected_cas,
                                           " (it was written since); nothing was changed"));
  }
  switch (mode) {
    case PutMode::kReplace: out->value.assign(operand); break;
    case PutMode::kCompareAndSet:
      if (stored_cas != expected_cas) {
        return absl::AbortedError(absl::StrCat("cas: the item's CAS version is not ", expected_cas,
                                               " (it was written since); nothing was changed"));
      }
      out->value.assign(operand);
      break;
    case PutMode::kAppend:
    case PutMode::kPrepend: {
      const uint64_t size = uint64_t{stored->size()} + operand.size();
      if (size > max_value_bytes) {
        return absl::ResourceExhaustedError(absl::StrCat(put_mode_name(mode), " would make a value of ", size,
                                                         " bytes; the limit (--max_value_bytes) is ", max_value_bytes,
                                                         "; nothing was changed"));
      }
      out->value.clear();
      out->value.reserve(size);
      out->value.append(mode == PutMode::kAppend ? *stored : operand);
      out->value.append(mode == PutMode::kAppend ? operand : *stored);
      break;
    }
    case PutMode::kIncrement:
    case PutMode::kDecrement: {
      const std::optional<uint64_t> delta = parse_counter(operand, /*trailing_spaces=*/false);
      if (!delta) {
        return absl::InvalidArgumentError(
            absl::StrCat(put_mode_name(mode), ": the delta must be a decimal number below 2^64"));
      }
      const std::optional<uint64_t> now = parse_counter(*stored, /*trailing_spaces=*/true);
      if (!now) {
        return absl::InvalidArgumentError(
            absl::StrCat(put_mode_name(mode), ": cannot increment or decrement non-numeric value"));
      }
      // Unsigned arithmetic wraps at 2^64, as memcached's incr does;
      // memcached's decr stops at 0.
      out->counter = mode == PutMode::kIncrement ? *now + *delta : (*now > *delta ? *now - *delta : 0);
      out->value = absl::StrCat(out->counter);
      break;
    }
    case PutMode::kSet:
    case PutMode::kAdd: break;
    case PutMode::kFlush:  // holds no key: Store::apply_conditional applies it before any read
      return absl::InternalError("flush_all is not a conditional write of a key");
  }
  return absl::OkStatus();
}

}  // namespace gphkv::server

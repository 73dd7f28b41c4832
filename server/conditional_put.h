// The conditional and read-modify-write puts (issue 27; memcached's add,
// replace, append, prepend, incr and decr): what one of them stores, given
// what the key holds when the executor applies it. Pure: no store, no I/O,
// so every rule is tested on values alone (tests/server/conditional_put_test.cc).
//
// Status codes, the gRPC API's and the memcached port's (docs/service.md):
//   add on a present key                        ALREADY_EXISTS  (NOT_STORED)
//   replace, append, prepend, incr, decr absent NOT_FOUND       (NOT_STORED / NOT_FOUND)
//   incr/decr of a stored value not a number    INVALID_ARGUMENT (CLIENT_ERROR)
//   cas absent                                  NOT_FOUND       (NOT_FOUND)
//   cas where the item's CAS differs            ABORTED         (EXISTS)
//   compare_cas where the item's CAS differs    ABORTED         (EX)
//   a result longer than --max_value_bytes      RESOURCE_EXHAUSTED (SERVER_ERROR)
// A refused put changes nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "server/call.h"

namespace gphkv::server {

// The most digits of an incr/decr operand or of a stored number: 2^64 - 1
// has 20.
constexpr size_t kMaxCounterDigits = 20;

// `text` as a number of 1 to 20 decimal digits below 2^64; nullopt if it is
// not one. A stored counter may be followed by spaces (memcached pads a
// decremented number to its old length), an operand may not.
std::optional<uint64_t> parse_counter(std::string_view text, bool trailing_spaces);

struct ResolvedPut {
  std::string value;     // what the key holds once the put is applied
  uint64_t counter = 0;  // incr/decr: the new number
};

// What a put of `mode` and `operand` (its value: bytes, or the delta of
// incr/decr) stores where the key holds `stored` (nullopt: absent), or why
// it is refused. `mode` is not kSet. kCompareAndSet stores `operand` only
// where `stored_cas`, the stored item's CAS version, is `expected_cas`; so do
// kAppend, kPrepend, kIncrement and kDecrement with `compare_cas`
// (PutOp::compare_cas, memcached's meta C), their CAS compared before
// anything else of the stored value. kAdd ignores it, as memcached's does.
absl::Status resolve_put(PutMode mode, std::optional<std::string_view> stored, std::string_view operand,
                         uint32_t max_value_bytes, ResolvedPut* out, uint64_t stored_cas = 0, uint64_t expected_cas = 0,
                         bool compare_cas = false);

// The mode's name, for messages ("add", "incr").
const char* put_mode_name(PutMode mode);

}  // namespace gphkv::server

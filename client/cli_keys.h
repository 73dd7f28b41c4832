// The gphkv CLI's keys: how an argument becomes a uint64 key or a byte key
// (--key_format), and how a key is printed back. No I/O, no RPC: tested on
// strings alone (tests/client/cli_keys_test.cc).
//
//   auto   (default) an argument that reads as an unsigned 64-bit integer,
//          decimal digits or 0x and hex digits, is that uint64 key, as it
//          always was; anything else is a byte key of the argument's bytes
//   u64    every argument is a uint64 key (anything else is a usage error)
//   bytes  every argument is a byte key of its bytes: "42" is the 2-byte key
//   hex    every argument is a byte key written as hex digits, two a byte
//          ("00ff" is the 2-byte key NUL, 0xff): binary keys
//
// Printing: a uint64 key in decimal; a byte key as it is when every byte is
// printable ASCII, not a space, and it would not read back as a uint64 key
// under auto (and does not start with a double quote); otherwise
// double-quoted with C escapes ("42", "a b", "\x00k"). JSON gives a byte
// key's bytes in base64 always (key_base64), and as text (key) when printable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace gphkv::cli {

enum class KeyFormat { kAuto, kU64, kBytes, kHex };

// "auto", "u64", "bytes" or "hex".
absl::StatusOr<KeyFormat> ParseKeyFormat(std::string_view name);

struct CliKey {
  bool is_bytes = false;
  uint64_t u64 = 0;   // when !is_bytes
  std::string bytes;  // when is_bytes
};

// The key an argument names under `format`; INVALID_ARGUMENT with a message
// for the user otherwise (empty keys are refused: no key has 0 bytes).
absl::StatusOr<CliKey> ParseKey(std::string_view text, KeyFormat format);

// How text output shows the key.
std::string KeyText(const CliKey& key);
// The key's fields of a JSON object, without braces: "key":"42" for a uint64
// key (as before byte keys); "key_format":"bytes","key_base64":"...", then
// ,"key":"..." when printable, for a byte key.
std::string KeyJsonFields(const CliKey& key);

// A list of keys of both kinds as two calls' keys: each kind's keys in
// order, and where each came from in the list. A request carries one kind
// of key, so the CLI sends one call per kind present and prints the
// answers in the list's order.
struct KeysByKind {
  std::vector<uint64_t> u64;
  std::vector<size_t> u64_at;
  std::vector<std::string_view> bytes;  // views into the CliKeys
  std::vector<size_t> bytes_at;
};
KeysByKind GroupByKind(const std::vector<CliKey>& keys);

}  // namespace gphkv::cli

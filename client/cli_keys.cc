#include "client/cli_keys.h"

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace gphkv::cli {
namespace {

// Debian's Abseil has its own string_view, apart from std::string_view.
absl::string_view av(std::string_view s) { return absl::string_view(s.data(), s.size()); }

bool all_of(std::string_view s, bool (*pred)(unsigned char)) {
  for (unsigned char c : s) {
    if (!pred(c)) return false;
  }
  return true;
}

// The uint64 an argument spells under auto: decimal digits only, or 0x and
// hex digits only (no sign, no spaces: " 42" is a byte key), in range.
bool strict_u64(std::string_view text, uint64_t* out) {
  if (absl::StartsWithIgnoreCase(av(text), "0x")) {
    const std::string_view digits = text.substr(2);
    return !digits.empty() && all_of(digits, absl::ascii_isxdigit) && absl::SimpleHexAtoi(av(digits), out);
  }
  return !text.empty() && all_of(text, absl::ascii_isdigit) && absl::SimpleAtoi(av(text), out);
}

// The u64 format's reading, as the CLI always read keys (absl's parsers).
bool lenient_u64(std::string_view text, uint64_t* out) {
  if (absl::StartsWithIgnoreCase(av(text), "0x")) return absl::SimpleHexAtoi(av(text.substr(2)), out);
  return absl::SimpleAtoi(av(text), out);
}

bool printable(std::string_view s) {
  for (unsigned char c : s) {
    if (c <= 0x20 || c >= 0x7f) return false;
  }
  return true;
}

// A JSON string literal of printable ASCII.
std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

absl::StatusOr<KeyFormat> ParseKeyFormat(std::string_view name) {
  if (name == "auto") return KeyFormat::kAuto;
  if (name == "u64") return KeyFormat::kU64;
  if (name == "bytes") return KeyFormat::kBytes;
  if (name == "hex") return KeyFormat::kHex;
  return absl::InvalidArgumentError(absl::StrCat("--key_format=", av(name), " is not auto, u64, bytes or hex"));
}

absl::StatusOr<CliKey> ParseKey(std::string_view text, KeyFormat format) {
  CliKey key;
  switch (format) {
    case KeyFormat::kAuto:
      if (strict_u64(text, &key.u64)) return key;
      break;
    case KeyFormat::kU64:
      if (lenient_u64(text, &key.u64)) return key;
      return absl::InvalidArgumentError(absl::StrCat("'", av(text), "' is not a 64-bit key (--key_format=u64)"));
    case KeyFormat::kBytes: break;
    case KeyFormat::kHex:
      if (text.size() % 2 != 0 || !all_of(text, absl::ascii_isxdigit)) {
        return absl::InvalidArgumentError(
            absl::StrCat("'", av(text), "' is not a key in hex (--key_format=hex: two hex digits a byte)"));
      }
      key.is_bytes = true;
      key.bytes = absl::HexStringToBytes(av(text));
      if (key.bytes.empty()) return absl::InvalidArgumentError("an empty key: keys have 1 or more bytes");
      return key;
  }
  if (text.empty()) return absl::InvalidArgumentError("an empty key: keys have 1 or more bytes");
  key.is_bytes = true;
  key.bytes = std::string(text);
  return key;
}

std::string KeyText(const CliKey& key) {
  if (!key.is_bytes) return absl::StrCat(key.u64);
  uint64_t unused;
  if (printable(key.bytes) && key.bytes[0] != '"' && !strict_u64(key.bytes, &unused)) return key.bytes;
  return absl::StrCat("\"", absl::CHexEscape(key.bytes), "\"");
}

std::string KeyJsonFields(const CliKey& key) {
  if (!key.is_bytes) return absl::StrCat("\"key\":\"", key.u64, "\"");
  std::string out = absl::StrCat(R"("key_format":"bytes","key_base64":")", absl::Base64Escape(key.bytes), "\"");
  if (printable(key.bytes)) absl::StrAppend(&out, ",\"key\":", json_string(key.bytes));
  return out;
}

KeysByKind GroupByKind(const std::vector<CliKey>& keys) {
  KeysByKind g;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i].is_bytes) {
      g.bytes.push_back(keys[i].bytes);
      g.bytes_at.push_back(i);
    } else {
      g.u64.push_back(keys[i].u64);
      g.u64_at.push_back(i);
    }
  }
  return g;
}

}  // namespace gphkv::cli

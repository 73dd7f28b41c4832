#include "server/byte_size.h"

#include <cctype>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace gphkv::server {

bool parse_byte_size(absl::string_view text, uint64_t* out, std::string* error) {
  text = absl::StripAsciiWhitespace(text);
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  uint64_t number = 0;
  if (digits == 0 || !absl::SimpleAtoi(text.substr(0, digits), &number)) {
    *error = absl::StrCat("'", text, "' is not a byte size (e.g. 1073741824, 512MiB, 4GiB)");
    return false;
  }
  const std::string unit = absl::AsciiStrToLower(absl::StripAsciiWhitespace(text.substr(digits)));
  uint64_t mult = 0;
  if (unit.empty() || unit == "b")
    mult = 1;
  else if (unit == "k" || unit == "kib")
    mult = uint64_t{1} << 10;
  else if (unit == "m" || unit == "mib")
    mult = uint64_t{1} << 20;
  else if (unit == "g" || unit == "gib")
    mult = uint64_t{1} << 30;
  else if (unit == "t" || unit == "tib")
    mult = uint64_t{1} << 40;
  else if (unit == "kb")
    mult = 1000;
  else if (unit == "mb")
    mult = 1000 * 1000;
  else if (unit == "gb")
    mult = 1000 * 1000 * 1000;
  else if (unit == "tb")
    mult = uint64_t{1000} * 1000 * 1000 * 1000;
  if (mult == 0) {
    *error = absl::StrCat("unknown unit '", unit, "' in '", text, "'; use B, KiB, MiB, GiB, TiB, KB, MB, GB or TB");
    return false;
  }
  if (number > std::numeric_limits<uint64_t>::max() / mult) {
    *error = absl::StrCat("'", text, "' overflows 64 bits");
    return false;
  }
  *out = number * mult;
  return true;
}

std::string format_byte_size(uint64_t bytes) {
  const char* units[] = {"GiB", "MiB", "KiB"};
  const int shifts[] = {30, 20, 10};
  for (int i = 0; i < 3; ++i) {
    const uint64_t m = uint64_t{1} << shifts[i];
    if (bytes >= m && bytes % m == 0) return absl::StrCat(bytes / m, units[i]);
  }
  return absl::StrCat(bytes);
}

bool AbslParseFlag(absl::string_view text, ByteSize* size, std::string* error) {
  return parse_byte_size(text, &size->bytes, error);
}

std::string AbslUnparseFlag(ByteSize size) { return format_byte_size(size.bytes); }

}  // namespace gphkv::server

// A byte count for flags: "1073741824", "512MiB", "4GiB", "64KB" (KB/MB/GB
// are decimal, KiB/MiB/GiB binary).
#pragma once

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace gphkv::server {

struct ByteSize {
  uint64_t bytes = 0;
};

bool parse_byte_size(absl::string_view text, uint64_t* out, std::string* error);
std::string format_byte_size(uint64_t bytes);

// absl flag support.
bool AbslParseFlag(absl::string_view text, ByteSize* size, std::string* error);
std::string AbslUnparseFlag(ByteSize size);

}  // namespace gphkv::server

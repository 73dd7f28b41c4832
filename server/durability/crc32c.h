// CRC32C (Castagnoli; the checksum of iSCSI, RFC 3720, ext4 and LevelDB):
// what the durability files store beside every record. Debian 12's Abseil
// (20220623) has no absl/crc, so it is computed here: the SSE4.2 crc32
// instruction where the CPU has it (checked once at run time), else
// slicing-by-8 tables. Both give the standard check value 0xE3069283 for
// "123456789".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace gphkv::server::durability {

// The CRC32C of the bytes whose CRC32C is `crc` followed by `data`
// (crc = 0 for the first piece).
uint32_t crc32c_extend(uint32_t crc, const void* data, size_t n);

inline uint32_t crc32c(std::string_view bytes) { return crc32c_extend(0, bytes.data(), bytes.size()); }

// The table path alone, and whether crc32c_extend uses the instruction
// (tests compare the two).
uint32_t crc32c_extend_portable(uint32_t crc, const void* data, size_t n);
bool crc32c_uses_sse42();

}  // namespace gphkv::server::durability

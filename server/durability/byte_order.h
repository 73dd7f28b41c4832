// Little-endian loads and stores of the durability formats' fixed-width
// fields (memcpy: the fields sit at any alignment).
#pragma once

#include <cstdint>
#include <cstring>

namespace gphkv::server::durability {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the file formats are written in the host's byte order");

inline void store_le16(char* p, uint16_t v) { std::memcpy(p, &v, 2); }
inline void store_le32(char* p, uint32_t v) { std::memcpy(p, &v, 4); }
inline void store_le64(char* p, uint64_t v) { std::memcpy(p, &v, 8); }
inline uint16_t load_le16(const char* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
inline uint32_t load_le32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline uint64_t load_le64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

}  // namespace gphkv::server::durability

// What a byte key's item carries beside its key and value (issue 27): the
// client's flags, its absolute expiry and its CAS version. A plain value
// type with no dependencies: the value heaps' records (server/byte_key.h),
// the calls, and the data directory's log and snapshots
// (server/durability/pair_codec.h) all hold it.
#pragma once

#include <cstdint>

namespace gphkv::server::byte_key {

struct ItemMeta {
  uint32_t flags = 0;
  uint32_t exptime = 0;  // absolute unix seconds; 0: never expires
  uint64_t cas = 0;
  bool empty() const { return flags == 0 && exptime == 0 && cas == 0; }
  bool operator==(const ItemMeta& o) const { return flags == o.flags && exptime == o.exptime && cas == o.cas; }
};

}  // namespace gphkv::server::byte_key

#include "server/durability/snapshot_format.h"

#include "absl/strings/str_cat.h"
#include "server/durability/byte_order.h"

namespace gphkv::server::durability {
std::string encode_snapshot_header(const SnapshotHeader& h) {
  std::string p(kSnapshotHeaderPayloadBytes, '\0');
  store_le32(&p[0], h.version);
  store_le32(&p[4], 0);
  store_le64(&p[8], h.sequence);
  store_le64(&p[16], h.pairs);
  store_le64(&p[24], h.value_bytes);
  store_le64(&p[32], h.blocks);
  store_le64(&p[40], static_cast<uint64_t>(h.created_unix_ms));
  return p;
}

absl::StatusOr<SnapshotHeader> decode_snapshot_header(std::string_view p) {
  if (p.size() != kSnapshotHeaderPayloadBytes) {
    return absl::DataLossError(absl::StrCat("a header of ", p.size(), " bytes, not ", kSnapshotHeaderPayloadBytes));
  }
  SnapshotHeader h;
  h.version = load_le32(&p[0]);
  if (h.version < kSnapshotVersionUint64Only || h.version > kSnapshotVersion) {
    return absl::UnimplementedError(absl::StrCat("snapshot format version ", h.version, "; this build reads versions ",
                                                 kSnapshotVersionUint64Only, " to ", kSnapshotVersion));
  }
  h.sequence = load_le64(&p[8]);
  h.pairs = load_le64(&p[16]);
  h.value_bytes = load_le64(&p[24]);
  h.blocks = load_le64(&p[32]);
  h.created_unix_ms = static_cast<int64_t>(load_le64(&p[40]));
  return h;
}

}  // namespace gphkv::server::durability

// The table keys of a get batch's byte keys, made on the device (issue 26):
// the CUDA get path uploads each byte key's bytes for the record comparison
// anyway, so hashing them there spares the host the XXH3 of every key and
// the upload of the 8-byte keys (docs/byte-keys.md, "Measured").
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace gphkv::server::cuda {

// Key i's bytes are key_bytes[key_offsets[i], key_offsets[i + 1]) (as
// launch_match_records takes them); out[i] <- byte_key::table_key(those
// bytes, hash_bits). A key with no bytes (a uint64 key of a mixed batch)
// takes given[i]: `given` may be `out` itself (each thread reads its key
// before it writes it) or pinned host memory, and is read for such keys
// only (nullptr when there are none). One thread per key: a key of up to
// 250 bytes (memcached's) hashes in a few dozen instructions, less than a
// warp's shuffles would cost; --max_key_bytes' 4096 are rare and still
// right, only slower.
cudaError_t launch_table_keys(const uint32_t* key_offsets, const char* key_bytes, const uint64_t* given, uint64_t n,
                              int hash_bits, uint64_t* out, cudaStream_t stream);

}  // namespace gphkv::server::cuda

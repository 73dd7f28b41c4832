// XXH3-64 with a seed, as libxxhash's XXH3_64bits_withSeed computes it, in
// code that the host and the CUDA get path share (GPHKV_HOST_DEVICE): the
// device turns each byte key of a get batch into its table key
// (byte_key::table_key) itself, so the host neither hashes nor uploads the
// 8-byte keys (issue 26). Written from the XXH3 specification
// (github.com/Cyan4973/xxHash, doc/xxhash_spec.md: "XXH3 Algorithm
// Description"), for inputs of any length; tests/server/xxh3_test.cc checks
// it against libxxhash for every length 0..4096. The host's serving path
// keeps libxxhash (byte_key.cc), whose long-input loop is vectorized.
//
// Plain C++ when not compiled by nvcc. Inputs are read a byte at a time
// (key bytes are packed back to back, at any alignment); little-endian
// words as the specification reads them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "server/value_handle.h"  // GPHKV_HOST_DEVICE

namespace gphkv::server::xxh3 {
namespace detail {

constexpr uint64_t kPrime32_1 = 0x9E3779B1u;
constexpr uint64_t kPrime32_2 = 0x85EBCA77u;
constexpr uint64_t kPrime32_3 = 0xC2B2AE3Du;
constexpr uint64_t kPrime64_1 = 0x9E3779B185EBCA87ull;
constexpr uint64_t kPrime64_2 = 0xC2B2AE3D27D4EB4Full;
constexpr uint64_t kPrime64_3 = 0x165667B19E3779F9ull;
constexpr uint64_t kPrime64_4 = 0x85EBCA77C2B2AE63ull;
constexpr uint64_t kPrime64_5 = 0x27D4EB2F165667C5ull;
constexpr uint64_t kPrimeMx1 = 0x165667919E3779F9ull;
constexpr uint64_t kPrimeMx2 = 0x9FB21C651E98DF25ull;

// The specification's 192-byte default secret, as 24 little-endian words.
#define GPHKV_XXH3_DEFAULT_SECRET                                                                                      \
  {                                                                                                                    \
    0xbe4ba423396cfeb8ull, 0x1cad21f72c81017cull, 0xdb979083e96dd4deull, 0x1f67b3b7a4a44072ull, 0x78e5c0cc4ee679cbull, \
        0x2172ffcc7dd05a82ull, 0x8e2443f7744608b8ull, 0x4c263a81e69035e0ull, 0xcb00c391bb52283cull,                    \
        0xa32e531b8b65d088ull, 0x4ef90da297486471ull, 0xd8acdea946ef1938ull, 0x3f349ce33f76faa8ull,                    \
        0x1d4f0bc7c7bbdcf9ull, 0x3159b4cd4be0518aull, 0x647378d9c97e9fc8ull, 0xc3ebd33483acc5eaull,                    \
        0xeb6313faffa081c5ull, 0x49daf0b751dd0d17ull, 0x9e68d429265516d3ull, 0xfca1477d58be162bull,                    \
        0xce31d07ad1b8f88full, 0x280416958f3acb45ull, 0x7e404bbbcafbd7afull                                            \
  }
constexpr int kSecretWords = 24;
#if defined(__CUDACC__)
// Constant memory: the threads of a warp read the same words (keys of one
// length take the same path), which the constant cache broadcasts.
static __constant__ uint64_t kDeviceSecret[kSecretWords] = GPHKV_XXH3_DEFAULT_SECRET;
#endif
inline constexpr uint64_t kHostSecret[kSecretWords] = GPHKV_XXH3_DEFAULT_SECRET;
#undef GPHKV_XXH3_DEFAULT_SECRET

GPHKV_HOST_DEVICE inline uint64_t default_secret_word(int j) {
#if defined(__CUDA_ARCH__)
  return kDeviceSecret[j];
#else
  return kHostSecret[j];
#endif
}

// The secret an input reads: the default one for inputs up to 240 bytes
// (seed 0 here; their paths mix the seed in themselves), the one derived
// from the seed for longer inputs (the specification's deriveSecret: the
// seed added to the even words, taken from the odd ones), never stored:
// each word is made where it is read.
struct Secret {
  uint64_t seed = 0;

  GPHKV_HOST_DEVICE uint64_t word(int j) const {
    const uint64_t w = default_secret_word(j);
    return (j & 1) == 0 ? w + seed : w - seed;
  }
  // The little-endian word at byte `at` (any offset up to 184).
  GPHKV_HOST_DEVICE uint64_t read64(int at) const {
    const int j = at >> 3, shift = 8 * (at & 7);
    const uint64_t lo = word(j);
    return shift == 0 ? lo : (lo >> shift) | (word(j + 1) << (64 - shift));
  }
  GPHKV_HOST_DEVICE uint32_t read32(int at) const { return static_cast<uint32_t>(read64(at)); }
};

GPHKV_HOST_DEVICE inline uint64_t read64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}
GPHKV_HOST_DEVICE inline uint32_t read32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}

GPHKV_HOST_DEVICE inline uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

GPHKV_HOST_DEVICE inline uint32_t bswap32(uint32_t x) {
  return (x >> 24) | ((x >> 8) & 0xff00u) | ((x << 8) & 0xff0000u) | (x << 24);
}
GPHKV_HOST_DEVICE inline uint64_t bswap64(uint64_t x) {
  return (static_cast<uint64_t>(bswap32(static_cast<uint32_t>(x))) << 32) | bswap32(static_cast<uint32_t>(x >> 32));
}

// The 128-bit product of a and b, its halves xor-ed together.
GPHKV_HOST_DEVICE inline uint64_t mul128_fold64(uint64_t a, uint64_t b) {
#if defined(__CUDA_ARCH__)
  return (a * b) ^ __umul64hi(a, b);
#else
  const unsigned __int128 p = static_cast<unsigned __int128>(a) * b;
  return static_cast<uint64_t>(p) ^ static_cast<uint64_t>(p >> 64);
#endif
}

GPHKV_HOST_DEVICE inline uint64_t avalanche_xxh64(uint64_t x) {
  x ^= x >> 33;
  x *= kPrime64_2;
  x ^= x >> 29;
  x *= kPrime64_3;
  x ^= x >> 32;
  return x;
}

GPHKV_HOST_DEVICE inline uint64_t avalanche(uint64_t x) {
  x ^= x >> 37;
  x *= kPrimeMx1;
  x ^= x >> 32;
  return x;
}

// The specification's mixStep: 16 input bytes, 16 secret bytes, the seed.
GPHKV_HOST_DEVICE inline uint64_t mix16(const uint8_t* p, int secret_at, uint64_t seed) {
  const Secret s;
  return mul128_fold64(read64(p) ^ (s.read64(secret_at) + seed), read64(p + 8) ^ (s.read64(secret_at + 8) - seed));
}

GPHKV_HOST_DEVICE inline uint64_t hash_0to16(const uint8_t* p, size_t len, uint64_t seed) {
  const Secret s;
  if (len > 8) {
    const uint64_t low = ((s.read64(24) ^ s.read64(32)) + seed) ^ read64(p);
    const uint64_t high = ((s.read64(40) ^ s.read64(48)) - seed) ^ read64(p + len - 8);
    return avalanche(len + bswap64(low) + high + mul128_fold64(low, high));
  }
  if (len >= 4) {
    const uint64_t first = read32(p), last = read32(p + len - 4);
    const uint64_t modified_seed = seed ^ (static_cast<uint64_t>(bswap32(static_cast<uint32_t>(seed))) << 32);
    uint64_t v = ((s.read64(8) ^ s.read64(16)) - modified_seed) ^ (last | (first << 32));
    v ^= rotl64(v, 49) ^ rotl64(v, 24);
    v *= kPrimeMx2;
    v ^= (v >> 35) + len;
    v *= kPrimeMx2;
    return v ^ (v >> 28);
  }
  if (len > 0) {
    const uint32_t combined = static_cast<uint32_t>(p[len - 1]) | (static_cast<uint32_t>(len) << 8) |
                              (static_cast<uint32_t>(p[0]) << 16) | (static_cast<uint32_t>(p[len >> 1]) << 24);
    return avalanche_xxh64((static_cast<uint64_t>(s.read32(0) ^ s.read32(4)) + seed) ^ combined);
  }
  return avalanche_xxh64(seed ^ s.read64(56) ^ s.read64(64));
}

GPHKV_HOST_DEVICE inline uint64_t hash_17to128(const uint8_t* p, size_t len, uint64_t seed) {
  uint64_t acc = len * kPrime64_1;
  // Rounds of a 16-byte chunk from each end; the sum's order does not matter.
  const int rounds = static_cast<int>((len - 1) >> 5) + 1;
  for (int i = 0; i < rounds; ++i) {
    acc += mix16(p + 16 * i, 32 * i, seed);
    acc += mix16(p + len - 16 * i - 16, 32 * i + 16, seed);
  }
  return avalanche(acc);
}

GPHKV_HOST_DEVICE inline uint64_t hash_129to240(const uint8_t* p, size_t len, uint64_t seed) {
  uint64_t acc = len * kPrime64_1;
  for (int i = 0; i < 8; ++i) acc += mix16(p + 16 * i, 16 * i, seed);
  acc = avalanche(acc);
  const int chunks = static_cast<int>(len >> 4);
  for (int i = 8; i < chunks; ++i) acc += mix16(p + 16 * i, 16 * (i - 8) + 3, seed);
  acc += mix16(p + len - 16, 119, seed);
  return avalanche(acc);
}

// Large inputs: 8 accumulators over 64-byte stripes, blocks of 16 stripes
// (the 192-byte secret's), the accumulators scrambled after each full block.
constexpr int kSecretBytes = 8 * kSecretWords;
constexpr int kStripeBytes = 64;
constexpr int kStripesPerBlock = (kSecretBytes - kStripeBytes) / 8;
constexpr size_t kBlockBytes = size_t{kStripeBytes} * kStripesPerBlock;

GPHKV_HOST_DEVICE inline void accumulate(uint64_t (&acc)[8], const uint8_t* stripe, const Secret& s, int secret_at) {
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int i = 0; i < 8; ++i) {
    const uint64_t data = read64(stripe + 8 * i);
    const uint64_t keyed = data ^ s.read64(secret_at + 8 * i);
    acc[i ^ 1] += data;
    acc[i] += (keyed & 0xffffffffu) * (keyed >> 32);
  }
}

GPHKV_HOST_DEVICE inline uint64_t hash_large(const uint8_t* p, size_t len, uint64_t seed) {
  const Secret s{seed};
  uint64_t acc[8] = {kPrime32_3, kPrime64_1, kPrime64_2, kPrime64_3, kPrime64_4, kPrime32_2, kPrime64_5, kPrime32_1};
  // Every full block but the last byte's (which the last-block step takes).
  const size_t blocks = (len - 1) / kBlockBytes;
  for (size_t b = 0; b < blocks; ++b) {
    for (int n = 0; n < kStripesPerBlock; ++n) accumulate(acc, p + b * kBlockBytes + n * kStripeBytes, s, 8 * n);
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int i = 0; i < 8; ++i) {
      acc[i] ^= acc[i] >> 47;
      acc[i] ^= s.read64(kSecretBytes - kStripeBytes + 8 * i);
      acc[i] *= kPrime32_1;
    }
  }
  const uint8_t* last_block = p + blocks * kBlockBytes;
  const int full_stripes = static_cast<int>((len - blocks * kBlockBytes - 1) / kStripeBytes);
  for (int n = 0; n < full_stripes; ++n) accumulate(acc, last_block + n * kStripeBytes, s, 8 * n);
  accumulate(acc, p + len - kStripeBytes, s, kSecretBytes - kStripeBytes - 7);
  uint64_t result = len * kPrime64_1;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int i = 0; i < 4; ++i) {
    result += mul128_fold64(acc[2 * i] ^ s.read64(11 + 16 * i), acc[2 * i + 1] ^ s.read64(11 + 16 * i + 8));
  }
  return avalanche(result);
}

}  // namespace detail

// XXH3_64bits_withSeed(data, len, seed), bit for bit.
GPHKV_HOST_DEVICE inline uint64_t hash64(const void* data, size_t len, uint64_t seed) {
  const auto* p = static_cast<const uint8_t*>(data);
  if (len <= 16) return detail::hash_0to16(p, len, seed);
  if (len <= 128) return detail::hash_17to128(p, len, seed);
  if (len <= 240) return detail::hash_129to240(p, len, seed);
  return detail::hash_large(p, len, seed);
}

}  // namespace gphkv::server::xxh3

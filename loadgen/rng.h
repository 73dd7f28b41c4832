// Deterministic pseudo-random numbers for the request stream.
//
// The load generator promises that a seed reproduces the request stream, on
// every machine and for every target; std::mt19937 would do, but the standard
// distributions on top of it are implementation-defined. So the generator and
// every transform to [0,1) live here, spelled out.
#pragma once

#include <cstdint>

namespace gphkv::loadgen {

// SplitMix64's finalizer: a bijection on 64-bit words with full avalanche.
// Used to derive seeds and as a keyed hash (value sizes, scrambles).
constexpr uint64_t Mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// xoshiro256++ (Blackman & Vigna): fast, 256 bits of state, good enough
// statistically for sampling; seeded through SplitMix64 so any seed works.
class Rng {
 public:
  explicit Rng(uint64_t seed) {
    uint64_t x = seed;
    for (auto& w : s_) {
      x += 0x9e3779b97f4a7c15ULL;
      w = Mix64(x);
    }
  }
  uint64_t Next() {
    const uint64_t result = Rotl(s_[0] + s_[3], 23) + s_[0];
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, 1) with 53 bits of precision.
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

// A hash value turned into a uniform double in [0, 1).
inline double UnitFromHash(uint64_t h) { return static_cast<double>(h >> 11) * 0x1.0p-53; }

}  // namespace gphkv::loadgen

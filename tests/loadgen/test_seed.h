// A fresh seed per test binary run, or GPHKV_TEST_SEED to replay one (the
// engine tests' convention); tests print it with SCOPED_TRACE.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <random>

namespace gphkv::loadgen::testing {

inline uint64_t TestSeed() {
  static const uint64_t seed = [] {
    if (const char* env = std::getenv("GPHKV_TEST_SEED")) return static_cast<uint64_t>(std::strtoull(env, nullptr, 0));
    return static_cast<uint64_t>(std::random_device{}()) << 32 | std::random_device{}();
  }();
  return seed;
}

}  // namespace gphkv::loadgen::testing

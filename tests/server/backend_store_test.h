// The fixture of the store tests that run on both backends (conditional,
// item fields, item versions): a CUDA case skips without a device, saying
// so; the test seed seeds rng_; the store is a small one that grows (a first
// table of 64 keys, 64 MiB, 2 CPU threads) on the parameter's backend, with
// what the test adds in configure().
#pragma once

#include <cstdint>
#include <memory>
#include <random>

#include "gphkv/engine/table.h"
#include "gtest/gtest.h"
#include "server/store.h"
#include "tests/engine/table_checks.h"

namespace gphkv::server {

template <typename Param>
class BackendStoreTest : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    if (this->GetParam().backend == engine::Backend::kCuda && engine::cuda_device_count() == 0) {
      GTEST_SKIP() << "no CUDA device visible";
    }
    seed_ = engine::testing::test_seed();
    rng_.seed(seed_);
    StoreOptions o;
    o.backend = this->GetParam().backend;
    o.initial_capacity = 64;
    o.memory_limit_bytes = 64 << 20;
    o.table.cpu_threads = 2;
    configure(o);
    auto s = Store::create(o);
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = std::move(*s);
  }

  // The test's own options beyond the ones above.
  virtual void configure(StoreOptions& o) = 0;

  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
  std::unique_ptr<Store> store_;
};

}  // namespace gphkv::server

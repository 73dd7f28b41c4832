// Runs a test suite once per backend; the CUDA run skips, with the reason,
// where the build has no CUDA backend or the machine has no device.
#pragma once

#include <memory>
#include <string>

#include "gphkv/engine/table.h"
#include "gtest/gtest.h"

namespace gphkv::engine::testing {

class BackendTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (GetParam() == Backend::kCuda && cuda_device_count() == 0) {
      GTEST_SKIP() << "CUDA backend: no usable CUDA device here (or built without nvcc); "
                      "run the GPU tests on the device machine (docs/gpu.md)";
    }
  }

  std::unique_ptr<Table> make(const TableOptions& options) {
    auto table = make_table(GetParam(), options);
    EXPECT_TRUE(table.ok()) << table.status();
    return table.ok() ? std::move(*table) : nullptr;
  }
};

inline std::string backend_param_name(const ::testing::TestParamInfo<Backend>& info) {
  return std::string(backend_name(info.param));
}

#define GPHKV_INSTANTIATE_BACKENDS(suite)                                                                      \
  INSTANTIATE_TEST_SUITE_P(Backends, suite,                                                                    \
                           ::testing::Values(::gphkv::engine::Backend::kCpu, ::gphkv::engine::Backend::kCuda), \
                           ::gphkv::engine::testing::backend_param_name)

}  // namespace gphkv::engine::testing

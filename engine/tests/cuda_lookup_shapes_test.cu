// engine_bench --sweep's lookup shapes (engine/bench/lookup_shapes.cuh) on
// the layouts the sweep runs on: the engine's default (M = 16, two lines a
// bucket, 4 cells per bucket) and the one-line alternative (M = 8, 8 cells).
// Every shape of the sweep either is refused up front by lookup_shape_fits
// (and then launches nothing) or launches and answers exactly as the engine's
// own find does, also with the Cell Index's L2 window; the engine's shape is
// one the sweep measures and fits both layouts. This is the check that the
// sweep cannot again stop a device run with cudaErrorInvalidConfiguration
// when the default layout changes (issue 29: every shape was refused once M
// became 16). Skips, with the reason, where there is no device.
#include <cuda_runtime.h>

#include <cstdint>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/bench/lookup_shapes.cuh"
#include "engine/cuda/cuda_table.h"
#include "engine/cuda/lookup.h"
#include "gphkv/engine/table.h"
#include "gtest/gtest.h"

namespace gphkv::engine::testing {
namespace {

using bench::CellWindow;
using bench::LookupShape;
using bench::NamedShape;

// The engine's own launch shape (engine/cuda/lookup.h) is the sweep's
// default, so the sweep always measures it.
static_assert(LookupShape{}.group == cuda::kLookupGroup && LookupShape{}.block == cuda::kLookupBlock &&
                  LookupShape{}.keys_per_thread == 1 && LookupShape{}.streaming_loads,
              "engine_bench's default lookup shape must be the engine's");

#define ASSERT_CUDA(x) ASSERT_EQ((x), cudaSuccess) << cudaGetErrorString(x)

class CudaLookupShapesTest : public ::testing::TestWithParam<std::pair<uint32_t, double>> {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) {
      GTEST_SKIP() << "no usable CUDA device here; run the GPU tests on the device machine (docs/gpu.md)";
    }
  }
};

// Device copies of the queries and room for the answers.
struct DeviceQueries {
  uint64_t* keys = nullptr;
  uint64_t* values = nullptr;
  uint8_t* found = nullptr;
  ~DeviceQueries() {
    cudaFree(keys);
    cudaFree(values);
    cudaFree(found);
  }
};

TEST_P(CudaLookupShapesTest, EverySweepShapeIsRefusedOrAnswersLikeTheEngine) {
  const auto [m, cells_per_bucket] = GetParam();
  TableOptions o;
  o.slots_per_bucket = m;
  o.cells_per_bucket = cells_per_bucket;
  o.num_buckets = 32768 / m;  // 32768 slots
  auto created = cuda::CudaTable::create(o, 0);
  ASSERT_TRUE(created.ok()) << created.status();
  cuda::CudaTable& table = **created;

  // Fill to 0.75 load (Refinement and spills included), then query stored,
  // absent and the empty-slot key in one batch.
  std::mt19937_64 rng(29);
  std::unordered_map<uint64_t, uint64_t> model;
  std::vector<uint64_t> keys, values;
  while (keys.size() < 24576) {
    const uint64_t k = rng();
    if (model.emplace(k, rng()).second) {
      keys.push_back(k);
      values.push_back(model[k]);
    }
  }
  keys.push_back(gph::kEmptyKey);
  values.push_back(7);
  model[gph::kEmptyKey] = 7;
  std::vector<UpsertOutcome> outcomes(keys.size(), UpsertOutcome::kNoRoom);
  ASSERT_TRUE(table.insert_or_assign(keys, values, absl::MakeSpan(outcomes)).ok());
  std::vector<uint64_t> queries;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (outcomes[i] == UpsertOutcome::kNoRoom) model.erase(keys[i]);
    queries.push_back(keys[i]);
    queries.push_back(rng());  // absent, with overwhelming probability
  }
  const uint64_t nq = queries.size();

  // The engine's answers, checked against the model.
  std::vector<uint64_t> want_values(nq, 0);
  std::vector<uint8_t> want_found(nq, 0);
  ASSERT_TRUE(table.find(queries, absl::MakeSpan(want_values), absl::MakeSpan(want_found)).ok());
  for (uint64_t q = 0; q < nq; ++q) {
    const auto it = model.find(queries[q]);
    ASSERT_EQ(want_found[q] != 0, it != model.end()) << "query " << q;
    if (it != model.end()) ASSERT_EQ(want_values[q], it->second) << "query " << q;
  }

  DeviceQueries d;
  ASSERT_CUDA(cudaMalloc(&d.keys, nq * sizeof(uint64_t)));
  ASSERT_CUDA(cudaMalloc(&d.values, nq * sizeof(uint64_t)));
  ASSERT_CUDA(cudaMalloc(&d.found, nq));
  ASSERT_CUDA(cudaMemcpy(d.keys, queries.data(), nq * sizeof(uint64_t), cudaMemcpyHostToDevice));
  const cuda::DeviceTable view = table.view();
  std::vector<uint64_t> got_values(nq);
  std::vector<uint8_t> got_found(nq);
  auto run_and_compare = [&](const LookupShape& shape, const CellWindow* window, const std::string& name) {
    SCOPED_TRACE(name);
    ASSERT_CUDA(cudaMemset(d.values, 0, nq * sizeof(uint64_t)));
    ASSERT_CUDA(cudaMemset(d.found, 0xff, nq));
    ASSERT_CUDA(bench::launch_lookup_shape(view, d.keys, nq, d.values, d.found, shape, window, nullptr));
    ASSERT_CUDA(cudaDeviceSynchronize());
    ASSERT_CUDA(cudaMemcpy(got_values.data(), d.values, nq * sizeof(uint64_t), cudaMemcpyDeviceToHost));
    ASSERT_CUDA(cudaMemcpy(got_found.data(), d.found, nq, cudaMemcpyDeviceToHost));
    for (uint64_t q = 0; q < nq; ++q) {
      ASSERT_EQ(got_found[q], want_found[q]) << "query " << q;
      if (want_found[q]) ASSERT_EQ(got_values[q], want_values[q]) << "query " << q;
    }
  };

  const std::vector<NamedShape> shapes = bench::lookup_sweep_shapes();
  int measured = 0;
  bool engine_shape_listed = false;
  for (const NamedShape& s : shapes) {
    const LookupShape def;
    engine_shape_listed |= s.shape.group == def.group && s.shape.block == def.block &&
                           s.shape.keys_per_thread == def.keys_per_thread &&
                           s.shape.streaming_loads == def.streaming_loads;
    if (!bench::lookup_shape_fits(view, s.shape)) {
      // Refused before any launch: no error is left behind for the next call.
      EXPECT_EQ(bench::launch_lookup_shape(view, d.keys, nq, d.values, d.found, s.shape, nullptr, nullptr),
                cudaErrorInvalidConfiguration)
          << s.name;
      EXPECT_EQ(cudaGetLastError(), cudaSuccess) << s.name;
      continue;
    }
    ++measured;
    run_and_compare(s.shape, nullptr, s.name);
    if (HasFatalFailure()) return;
  }
  EXPECT_TRUE(engine_shape_listed) << "the sweep no longer measures the engine's own shape";
  EXPECT_TRUE(bench::lookup_shape_fits(view, LookupShape{})) << "M = " << m;
  // Every shape at K = 1 fits either layout; K = 2 only the one-line one.
  EXPECT_GE(measured, m == 16 ? 6 : 9) << "M = " << m;

  // The sweep's last part: the engine's shape with the Cell Index kept in L2.
  const CellWindow window = bench::keep_cells_in_l2(view, table.device());
  run_and_compare(LookupShape{}, &window, "L2-persistent Cell Index");
  bench::stop_keeping_cells_in_l2(nullptr);
}

INSTANTIATE_TEST_SUITE_P(Layouts, CudaLookupShapesTest,
                         ::testing::Values(std::make_pair(16u, 4.0), std::make_pair(8u, 8.0)),
                         [](const ::testing::TestParamInfo<std::pair<uint32_t, double>>& info) {
                           return "M" + std::to_string(info.param.first);
                         });

}  // namespace
}  // namespace gphkv::engine::testing

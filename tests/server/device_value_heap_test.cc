// DeviceValueHeap against a model (the bytes each handle must hold), with the
// checks the host heap runs (value_heap_checks.h): random batches and
// releases under a limit, adversarial lengths, fill / delete half / refill
// with another size (compaction moves values on the device), trim; plus the
// length in the handle and the device's table of value places. Needs a CUDA
// device; skips without.
#include "server/cuda/device_value_heap.h"

#include <random>
#include <string>
#include <vector>

#include "gphkv/engine/table.h"
#include "gtest/gtest.h"
#include "tests/engine/table_checks.h"
#include "tests/server/value_heap_checks.h"

namespace gphkv::server {
namespace {

using testing::HeapModel;
using testing::random_bytes;

std::unique_ptr<DeviceValueHeap> make_heap(uint32_t max_value) {
  auto h = DeviceValueHeap::create(max_value, 0);
  EXPECT_TRUE(h.ok()) << h.status();
  return h.ok() ? std::move(*h) : nullptr;
}

#define SKIP_WITHOUT_DEVICE() \
  if (engine::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible: the device value heap needs one"

#define SEEDED_RNG(rng)                                             \
  const uint64_t seed = engine::testing::test_seed();               \
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed); \
  std::mt19937_64 rng(seed)

TEST(DeviceValueHeap, RandomBatchesAndReleasesMatchAModel) {
  SKIP_WITHOUT_DEVICE();
  SEEDED_RNG(rng);
  auto heap = make_heap(64 * 1024);
  ASSERT_NE(heap, nullptr);
  // 8 chunks of 2 MiB plus the table of places: batches meet the limit often.
  testing::run_random_ops(*heap, 64 * 1024, 8 * heap->chunk_bytes() + (1 << 20), rng);
}

TEST(DeviceValueHeap, AdversarialLengthsAreRefusedAndChangeNothing) {
  SKIP_WITHOUT_DEVICE();
  SEEDED_RNG(rng);
  auto heap = make_heap(1 << 20);
  ASSERT_NE(heap, nullptr);
  testing::check_adversarial_lengths(*heap, 1 << 20, rng);
  EXPECT_EQ(DeviceValueHeap::create(value_handle::kMaxLength + 1, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// The numbers (as the host heap's test): 60 KB values fill the
// limit, half are released, 12 KB values take the freed bytes back; and the
// other way round, which needs compaction's moves on the device.
TEST(DeviceValueHeap, FreedMemoryServesValuesOfAnotherSize) {
  SKIP_WITHOUT_DEVICE();
  SEEDED_RNG(rng);
  testing::expect_refills([] { return make_heap(1 << 20); },
                          {{72 << 20, 60000, 12000, 16}, {72 << 20, 12000, 60000, 1}, {32 << 20, 100, 5000, 64}}, rng);
}

TEST(DeviceValueHeap, TrimMovesValuesAndGivesChunksBack) {
  SKIP_WITHOUT_DEVICE();
  SEEDED_RNG(rng);
  auto heap = make_heap(64 * 1024);
  ASSERT_NE(heap, nullptr);
  testing::check_trim(*heap, rng);
}

TEST(DeviceValueHeap, TrimInBoundedStepsWhileValuesComeAndGo) {
  SKIP_WITHOUT_DEVICE();
  SEEDED_RNG(rng);
  auto heap = make_heap(64 * 1024);
  ASSERT_NE(heap, nullptr);
  testing::check_trim_in_steps(*heap, rng);
}

TEST(DeviceValueHeap, LengthsTravelInTheHandleAndTheLargestLiveExtentBoundsThem) {
  SKIP_WITHOUT_DEVICE();
  SEEDED_RNG(rng);
  auto heap = make_heap(1 << 20);
  ASSERT_NE(heap, nullptr);
  HeapModel model;
  // Lengths around the granule and the extent-size bins, and the largest.
  std::vector<uint32_t> sizes = {0, 1, 7, 8, 9, 15, 16, 17, 4095, 4096, 4097, (1 << 20) - 1, 1 << 20};
  for (uint32_t s : sizes) {
    const std::string bytes = random_bytes(rng, s);
    auto h = heap->allocate(bytes);
    ASSERT_TRUE(h.ok()) << h.status();
    EXPECT_EQ(value_handle::length(*h), s);
    EXPECT_EQ(heap->length(*h), s);
    std::string got;
    ASSERT_TRUE(heap->gather({&*h, 1}, &got).ok());
    EXPECT_TRUE(got == bytes) << "a value of " << s << " bytes came back different";
    heap->release(*h);
  }
  ASSERT_TRUE(testing::put_values(*heap, model, {random_bytes(rng, 5000), random_bytes(rng, 100)}).ok());
  EXPECT_GE(heap->max_live_extent_bytes(), 5000u);
  EXPECT_LE(heap->max_live_extent_bytes(), 5000u * 9 / 8 + 8);
  testing::expect_heap_matches(*heap, model, rng);
}

// Past 2^16 values the table of places takes a second page (and the heap
// counts it): values on both pages gather right.
// The bulk write (server/cuda/device_bulk_write.h): its staging ring goes
// round several times, and values of the largest length a handle carries
// (over a staging slot) go straight from the caller's memory.
TEST(DeviceValueHeap, BulkWritesOfPackedSlotsMatchAModel) {
  SKIP_WITHOUT_DEVICE();
  SEEDED_RNG(rng);
  auto heap = make_heap(value_handle::kMaxLength);
  ASSERT_NE(heap, nullptr);
  testing::check_bulk_writes(*heap, value_handle::kMaxLength, rng);
}

TEST(DeviceValueHeap, TheTableOfPlacesGrowsByPages) {
  SKIP_WITHOUT_DEVICE();
  SEEDED_RNG(rng);
  auto heap = make_heap(4096);
  ASSERT_NE(heap, nullptr);
  HeapModel model;
  for (int i = 0; i < 3; ++i) {
    std::vector<std::string> values(DeviceLocations::kPageIds / 2 + 7);
    for (auto& v : values) v = random_bytes(rng, static_cast<uint32_t>(rng() % 64));
    ASSERT_TRUE(testing::put_values(*heap, model, values).ok());
  }
  EXPECT_EQ(heap->reserved_bytes(),
            heap->mapped_chunks() * heap->chunk_bytes() + 2 * DeviceLocations::kPageBytes + 64 * sizeof(char**));
  testing::expect_heap_matches(*heap, model, rng);
}

}  // namespace
}  // namespace gphkv::server

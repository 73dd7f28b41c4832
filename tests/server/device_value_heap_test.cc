// DeviceValueHeap against a model (the bytes each handle must hold): random
// sizes including 0, 1, every class boundary and max_value_bytes, reuse of
// released slots, and the --memory cap. Needs a CUDA device; skips without.
#include "server/cuda/device_value_heap.h"

#include <random>
#include <string>
#include <vector>

#include "gphkv/engine/table.h"
#include "gtest/gtest.h"

namespace gphkv::server {
namespace {

constexpr uint32_t kMaxValue = 1 << 20;

std::unique_ptr<DeviceValueHeap> make_heap(uint32_t max_value = kMaxValue) {
  auto h = DeviceValueHeap::create(max_value, 0);
  EXPECT_TRUE(h.ok()) << h.status();
  return h.ok() ? std::move(*h) : nullptr;
}

#define SKIP_WITHOUT_DEVICE() \
  if (engine::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible: the device value heap needs one"

std::string random_bytes(std::mt19937_64& rng, uint32_t len) {
  std::string s(len, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

// Sizes that stress the classes: 0, 1, each boundary and its neighbours, the max.
std::vector<uint32_t> edge_sizes(const DeviceValueHeap& heap) {
  std::vector<uint32_t> sizes = {0, 1, 7, 8, 9, kMaxValue - 1, kMaxValue};
  for (uint32_t c = 0; c < heap.num_classes(); ++c) {
    const uint32_t b = heap.class_bytes(c);
    for (uint32_t s : {b - 1, b, b + 1}) {
      if (s <= kMaxValue) sizes.push_back(s);
    }
  }
  return sizes;
}

// Checks every live handle's bytes with one gather, in a shuffled order.
void expect_matches(const DeviceValueHeap& heap, const std::vector<ValueHandle>& handles,
                    const std::vector<std::string>& model, std::mt19937_64& rng) {
  std::vector<size_t> order(handles.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<ValueHandle> hs;
  std::string expected;
  for (size_t i : order) {
    hs.push_back(handles[i]);
    expected += model[i];
    ASSERT_EQ(heap.length(handles[i]), model[i].size());
  }
  std::string got = "prefix";  // gather appends
  ASSERT_TRUE(heap.gather(hs, &got).ok());
  ASSERT_EQ(got.size(), 6 + expected.size());
  EXPECT_TRUE(got.compare(6, std::string::npos, expected) == 0) << "gathered bytes differ from the model";
}

TEST(DeviceValueHeap, AllocateWriteGatherReleaseMatchAModel) {
  SKIP_WITHOUT_DEVICE();
  auto heap = make_heap();
  ASSERT_NE(heap, nullptr);
  std::mt19937_64 rng(std::random_device{}());
  std::vector<ValueHandle> handles;
  std::vector<std::string> model;
  auto add = [&](const std::vector<uint32_t>& sizes) {
    std::vector<std::string> values;
    for (uint32_t s : sizes) values.push_back(random_bytes(rng, s));
    std::vector<ValueHandle> hs;
    ASSERT_TRUE(heap->allocate_slots(sizes, &hs).ok());
    ASSERT_EQ(hs.size(), sizes.size());
    std::vector<std::string_view> views(values.begin(), values.end());
    ASSERT_TRUE(heap->write(hs, views).ok());
    handles.insert(handles.end(), hs.begin(), hs.end());
    model.insert(model.end(), values.begin(), values.end());
  };
  add(edge_sizes(*heap));
  for (int round = 0; round < 4; ++round) {
    std::vector<uint32_t> sizes;
    for (int i = 0; i < 3000; ++i) {
      // Mostly small values, some up to 64 KiB.
      sizes.push_back(rng() % 4 == 0 ? static_cast<uint32_t>(rng() % 65536) : static_cast<uint32_t>(rng() % 300));
    }
    add(sizes);
    expect_matches(*heap, handles, model, rng);
    // Release a random half; the next round reuses their slots.
    for (size_t i = 0; i < handles.size();) {
      if (rng() % 2 == 0) {
        heap->release(handles[i]);
        handles[i] = handles.back();
        model[i] = std::move(model.back());
        handles.pop_back();
        model.pop_back();
      } else {
        ++i;
      }
    }
    expect_matches(*heap, handles, model, rng);
    EXPECT_EQ(heap->live_values(), handles.size());
  }
  // Distinct live handles name distinct slots.
  std::vector<uint64_t> ids;
  for (ValueHandle h : handles) ids.push_back(h & device_handle::kSlotIdMask);
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(std::adjacent_find(ids.begin(), ids.end()), ids.end());
}

TEST(DeviceValueHeap, AllocateOneAtATimeAndLengthsTravelInTheHandle) {
  SKIP_WITHOUT_DEVICE();
  auto heap = make_heap();
  ASSERT_NE(heap, nullptr);
  std::mt19937_64 rng(std::random_device{}());
  std::vector<ValueHandle> handles;
  std::vector<std::string> model;
  for (uint32_t s : edge_sizes(*heap)) {
    model.push_back(random_bytes(rng, s));
    auto h = heap->allocate(model.back());
    ASSERT_TRUE(h.ok()) << h.status();
    EXPECT_EQ(device_handle::length(*h), s);
    handles.push_back(*h);
  }
  expect_matches(*heap, handles, model, rng);
  EXPECT_GE(heap->max_live_slot_bytes(), kMaxValue);
  EXPECT_FALSE(heap->allocate(std::string(kMaxValue + 1, 'x')).ok());
}

TEST(DeviceValueHeap, RefusesAMaxValueTheHandleCannotCarry) {
  SKIP_WITHOUT_DEVICE();
  EXPECT_EQ(DeviceValueHeap::create(device_handle::kMaxLength + 1, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(DeviceValueHeap, ARefusalAtTheMemoryCapChangesNothing) {
  SKIP_WITHOUT_DEVICE();
  auto heap = make_heap();
  ASSERT_NE(heap, nullptr);
  std::mt19937_64 rng(std::random_device{}());
  heap->set_limit(3 * DeviceValueHeap::kMinSlabBytes);
  std::vector<ValueHandle> handles;
  std::vector<std::string> model;
  // Fill until a batch is refused.
  absl::Status refused;
  for (int i = 0; i < 100 && refused.ok(); ++i) {
    std::vector<uint32_t> sizes;
    std::vector<std::string> values;
    for (int j = 0; j < 500; ++j) {
      sizes.push_back(static_cast<uint32_t>(rng() % 2000));
      values.push_back(random_bytes(rng, sizes.back()));
    }
    const uint64_t reserved = heap->reserved_bytes(), used = heap->used_bytes(), live = heap->live_values();
    const uint64_t slabs = heap->slabs();
    std::vector<ValueHandle> hs;
    refused = heap->allocate_slots(sizes, &hs);
    if (!refused.ok()) {
      EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
      EXPECT_TRUE(hs.empty());
      EXPECT_EQ(heap->reserved_bytes(), reserved);
      EXPECT_EQ(heap->used_bytes(), used);
      EXPECT_EQ(heap->live_values(), live);
      EXPECT_EQ(heap->slabs(), slabs);
      break;
    }
    std::vector<std::string_view> views(values.begin(), values.end());
    ASSERT_TRUE(heap->write(hs, views).ok());
    handles.insert(handles.end(), hs.begin(), hs.end());
    model.insert(model.end(), values.begin(), values.end());
    EXPECT_LE(heap->reserved_bytes(), heap->limit());
  }
  ASSERT_FALSE(refused.ok()) << "the cap was never reached";
  expect_matches(*heap, handles, model, rng);
  // Freed slots are reused under the same cap.
  for (ValueHandle h : handles) heap->release(h);
  std::vector<ValueHandle> again;
  EXPECT_TRUE(heap->allocate_slots(std::vector<uint32_t>(100, 100), &again).ok());
}

}  // namespace
}  // namespace gphkv::server

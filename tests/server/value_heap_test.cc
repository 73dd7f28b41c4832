#include "server/value_heap.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace gphkv::server {
namespace {

TEST(HostValueHeap, StoresAndGathersValuesOfEverySize) {
  HostValueHeap heap(1 << 20);
  std::vector<std::string> values;
  for (uint32_t len : {0u, 1u, 15u, 16u, 17u, 24u, 25u, 1000u, 65536u, (1u << 20)}) {
    values.push_back(std::string(len, static_cast<char>('a' + len % 26)));
  }
  std::vector<ValueHandle> handles;
  for (const auto& v : values) {
    auto h = heap.allocate(v);
    ASSERT_TRUE(h.ok()) << h.status();
    handles.push_back(*h);
  }
  std::string all, expected;
  ASSERT_TRUE(heap.gather(handles, &all).ok());
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(heap.length(handles[i]), values[i].size());
    expected += values[i];
  }
  EXPECT_EQ(all, expected);
  EXPECT_EQ(heap.live_values(), values.size());
}

TEST(HostValueHeap, SizeClassesWasteAtMostAThird) {
  HostValueHeap heap(1 << 20);
  for (uint32_t len = 1; len <= (1u << 20); len = len * 3 / 2 + 1) {
    const uint32_t slot = heap.class_bytes(heap.class_of(len));
    EXPECT_GE(slot, len);
    if (len > HostValueHeap::kMinClassBytes) EXPECT_LE(slot, len + len / 2) << len;
  }
}

TEST(HostValueHeap, ReleasedSlotsAreReusedWithoutNewMemory) {
  HostValueHeap heap(4096);
  auto a = heap.allocate(std::string(100, 'x'));
  ASSERT_TRUE(a.ok());
  const uint64_t reserved = heap.reserved_bytes();
  heap.release(*a);
  EXPECT_EQ(heap.live_values(), 0u);
  for (int i = 0; i < 1000; ++i) {
    auto b = heap.allocate(std::string(100, 'y'));
    ASSERT_TRUE(b.ok());
    heap.release(*b);
  }
  EXPECT_EQ(heap.reserved_bytes(), reserved);
}

TEST(HostValueHeap, RefusesPastTheLimitAndStaysUsable) {
  HostValueHeap heap(1 << 20);
  heap.set_limit(2 * HostValueHeap::kMinSlabBytes);
  std::vector<ValueHandle> held;
  absl::Status last;
  for (int i = 0; i < 100; ++i) {
    auto h = heap.allocate(std::string(64 * 1024, 'z'));
    if (!h.ok()) {
      last = h.status();
      break;
    }
    held.push_back(*h);
  }
  EXPECT_EQ(last.code(), absl::StatusCode::kResourceExhausted) << last;
  EXPECT_LE(heap.reserved_bytes(), heap.limit());
  EXPECT_NE(std::string(last.message()).find("bytes"), std::string::npos);
  heap.release(held.back());
  EXPECT_TRUE(heap.allocate(std::string(64 * 1024, 'w')).ok());
}

TEST(HostValueHeap, RefusesOversizeValues) {
  HostValueHeap heap(100);
  auto h = heap.allocate(std::string(101, 'x'));
  EXPECT_EQ(h.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gphkv::server

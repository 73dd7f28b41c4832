#include "tests/server/value_heap_checks.h"

#include <algorithm>
#include <cstring>

#include "gtest/gtest.h"

namespace gphkv::server::testing {

std::string random_bytes(std::mt19937_64& rng, uint32_t len) {
  std::string s(len, '\0');
  for (uint32_t i = 0; i < len; i += 8) {
    const uint64_t r = rng();
    std::memcpy(s.data() + i, &r, std::min<uint32_t>(8, len - i));
  }
  return s;
}

absl::Status put_values(ValueHeap& heap, HeapModel& model, const std::vector<std::string>& values, bool packed) {
  std::vector<uint32_t> lengths;
  for (const auto& v : values) lengths.push_back(static_cast<uint32_t>(v.size()));
  std::vector<ValueHandle> handles;
  absl::Status taken = packed ? heap.allocate_packed_slots(lengths, &handles) : heap.allocate_slots(lengths, &handles);
  if (absl::Status s = taken; !s.ok()) {
    EXPECT_TRUE(handles.empty()) << "a refused batch returned handles";
    return s;
  }
  EXPECT_EQ(handles.size(), values.size());
  std::vector<std::string_view> views(values.begin(), values.end());
  if (absl::Status s = heap.write(handles, views); !s.ok()) return s;
  for (size_t i = 0; i < handles.size(); ++i) {
    EXPECT_TRUE(model.emplace(handles[i], values[i]).second) << "handle " << handles[i] << " handed out twice";
  }
  return absl::OkStatus();
}

void expect_heap_matches(const ValueHeap& heap, const HeapModel& model, std::mt19937_64& rng) {
  std::vector<ValueHandle> handles;
  for (const auto& [h, v] : model) handles.push_back(h);
  std::shuffle(handles.begin(), handles.end(), rng);
  std::string expected;
  for (ValueHandle h : handles) {
    ASSERT_EQ(heap.length(h), model.at(h).size()) << "handle " << h;
    expected += model.at(h);
  }
  std::string got = "prefix";  // gather appends
  ASSERT_TRUE(heap.gather(handles, &got).ok());
  ASSERT_EQ(got.size(), 6 + expected.size());
  EXPECT_EQ(got.compare(0, 6, "prefix"), 0);
  EXPECT_TRUE(got.compare(6, std::string::npos, expected) == 0) << "gathered bytes differ from the model";
  EXPECT_EQ(heap.live_values(), model.size());
  EXPECT_LE(heap.reserved_bytes(), heap.limit());
  EXPECT_LE(heap.used_bytes(), heap.reserved_bytes());
}

namespace {

struct Counters {
  uint64_t reserved, used, live;
  bool operator==(const Counters& o) const { return reserved == o.reserved && used == o.used && live == o.live; }
};
Counters counters(const ValueHeap& h) { return {h.reserved_bytes(), h.used_bytes(), h.live_values()}; }

uint32_t random_length(std::mt19937_64& rng, uint32_t max_value) {
  switch (rng() % 8) {
    case 0: return static_cast<uint32_t>(rng() % (max_value + 1));
    case 1: return std::vector<uint32_t>{0, 1, 15, 16, 17, max_value - 1, max_value}[rng() % 7];
    case 2: return static_cast<uint32_t>(rng() % std::min<uint32_t>(max_value + 1, 8192));
    default: return static_cast<uint32_t>(rng() % std::min<uint32_t>(max_value + 1, 300));
  }
}

}  // namespace

uint64_t release_share(ValueHeap& heap, HeapModel& model, std::mt19937_64& rng, double share) {
  uint64_t bytes = 0;
  for (auto it = model.begin(); it != model.end();) {
    if (std::uniform_real_distribution<double>(0, 1)(rng) < share) {
      bytes += it->second.size();
      heap.release(it->first);
      it = model.erase(it);
    } else {
      ++it;
    }
  }
  return bytes;
}

void check_bulk_writes(ValueHeap& heap, uint32_t max_value, std::mt19937_64& rng) {
  HeapModel model;
  heap.reserve_values(1000);  // a hint below what comes: the heap must still grow
  for (int round = 0; round < 3; ++round) {
    for (int batch = 0; batch < 100; ++batch) {
      std::vector<std::string> values(batch % 10 == 0 ? 1 : 1 + rng() % 4096);
      for (auto& v : values) {
        const uint64_t r = rng() % 100;
        v = random_bytes(rng, static_cast<uint32_t>(r < 10 ? 0 : r < 12 ? 24 : rng() % 25));
      }
      if (rng() % 25 == 0) values[rng() % values.size()] = random_bytes(rng, max_value);
      if (rng() % 25 == 0) values[rng() % values.size()] = random_bytes(rng, static_cast<uint32_t>(rng() % max_value));
      std::vector<uint32_t> lengths;
      for (const auto& v : values) lengths.push_back(static_cast<uint32_t>(v.size()));
      std::vector<ValueHandle> handles;
      ASSERT_TRUE(heap.allocate_packed_slots(lengths, &handles).ok());
      ASSERT_EQ(handles.size(), values.size());
      std::vector<std::string_view> views(values.begin(), values.end());
      ASSERT_TRUE(heap.write_bulk(handles, views).ok());
      for (size_t i = 0; i < handles.size(); ++i) {
        ASSERT_TRUE(model.emplace(handles[i], values[i]).second) << "handle " << handles[i] << " handed out twice";
        // The caller may reuse its buffers once write_bulk returns.
        std::fill(values[i].begin(), values[i].end(), '\x5a');
      }
      if (rng() % 4 == 0) release_share(heap, model, rng, 0.2);
      if (rng() % 4 == 0) {
        std::vector<std::string> puts(1 + rng() % 16);
        for (auto& v : puts) v = random_bytes(rng, static_cast<uint32_t>(rng() % 25));
        ASSERT_TRUE(put_values(heap, model, puts).ok());
      }
    }
    ASSERT_TRUE(heap.flush_writes().ok());
    expect_heap_matches(heap, model, rng);
    if (::testing::Test::HasFatalFailure()) return;
    if (const auto* e = dynamic_cast<const ExtentValueHeap*>(&heap)) {
      uint64_t longest = 0;
      for (const auto& [h, v] : model) longest = std::max<uint64_t>(longest, v.size());
      EXPECT_GE(e->max_live_extent_bytes(), ExtentValueHeap::extent_bytes(static_cast<uint32_t>(longest)));
    }
  }
  ASSERT_TRUE(heap.trim().ok());
  expect_heap_matches(heap, model, rng);
  // An empty flush, and a release of everything, leave an empty heap.
  ASSERT_TRUE(heap.flush_writes().ok());
  release_share(heap, model, rng, 1.0);
  EXPECT_EQ(heap.live_values(), 0u);
  EXPECT_EQ(heap.used_bytes(), 0u);
}

void run_random_ops(ValueHeap& heap, uint32_t max_value, uint64_t limit, std::mt19937_64& rng) {
  HeapModel model;
  heap.set_limit(limit);
  int refused = 0;
  // Random rounds, then batches until one is refused: the limit is met.
  for (int round = 0; round < 1000 && (round < 200 || refused == 0); ++round) {
    if (round < 200 && rng() % 5 == 0) {
      release_share(heap, model, rng, std::uniform_real_distribution<double>(0, 0.5)(rng));
    } else {
      std::vector<std::string> values(1 + rng() % 64);
      for (auto& v : values) v = random_bytes(rng, random_length(rng, max_value));
      const Counters before = counters(heap);
      absl::Status s = put_values(heap, model, values);
      if (!s.ok()) {
        ASSERT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
        EXPECT_TRUE(counters(heap) == before) << "a refused batch changed the heap's counters";
        ++refused;
      }
    }
    if (round % 20 == 19) {
      expect_heap_matches(heap, model, rng);
      if (::testing::Test::HasFatalFailure()) return;
    }
    if (round == 120) {
      // Trim in the middle: values move, handles stay valid.
      auto released = heap.trim();
      ASSERT_TRUE(released.ok()) << released.status();
      expect_heap_matches(heap, model, rng);
    }
  }
  EXPECT_GT(refused, 0) << "the limit was never met: the refusal path went untested";
  expect_heap_matches(heap, model, rng);
  release_share(heap, model, rng, 1.0);
  EXPECT_EQ(heap.used_bytes(), 0u);
  auto released = heap.trim();
  ASSERT_TRUE(released.ok()) << released.status();
  EXPECT_GT(*released, 0u);
}

void check_adversarial_lengths(ValueHeap& heap, uint32_t max_value, std::mt19937_64& rng) {
  HeapModel model;
  ASSERT_TRUE(put_values(heap, model, {"", random_bytes(rng, 1), random_bytes(rng, max_value)}).ok());
  const Counters before = counters(heap);
  std::vector<ValueHandle> handles;
  const std::vector<uint32_t> bad = {1, 0, max_value + 1, max_value};
  absl::Status s = heap.allocate_slots(bad, &handles);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(std::string(s.message()).find(std::to_string(max_value)), std::string::npos) << s;
  EXPECT_TRUE(handles.empty());
  EXPECT_TRUE(counters(heap) == before);
  EXPECT_EQ(heap.allocate(std::string(max_value + 1, 'x')).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(counters(heap) == before);
  // A write whose bytes differ in length from the slot is refused whole.
  ASSERT_TRUE(heap.allocate_slots({{3, 5}}, &handles).ok());
  const std::string three = "abc", four = "abcd";
  EXPECT_EQ(heap.write(handles, {three, four}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(heap.write(handles, {three}).code(), absl::StatusCode::kInvalidArgument);
  for (ValueHandle h : handles) heap.release(h);
  expect_heap_matches(heap, model, rng);
}

namespace {

// check_trim's heap: 20000 values of 0 .. 2 KB, three in four released.
void fill_then_release_most(ExtentValueHeap& heap, HeapModel& model, std::mt19937_64& rng) {
  for (int i = 0; i < 100; ++i) {
    std::vector<std::string> values(200);
    for (auto& v : values) v = random_bytes(rng, static_cast<uint32_t>(rng() % 2000));
    ASSERT_TRUE(put_values(heap, model, values).ok());
  }
  release_share(heap, model, rng, 0.75);
}

}  // namespace

void check_trim(ExtentValueHeap& heap, std::mt19937_64& rng) {
  HeapModel model;
  fill_then_release_most(heap, model, rng);
  if (::testing::Test::HasFatalFailure()) return;
  const uint64_t before = heap.reserved_bytes();
  auto released = heap.trim();
  ASSERT_TRUE(released.ok()) << released.status();
  EXPECT_GT(*released, 0u);
  EXPECT_EQ(heap.reserved_bytes(), before - *released);
  EXPECT_GT(heap.moved_bytes(), 0u);
  // About a quarter stays live: the chunks left hold little more than that.
  EXPECT_LE(heap.reserved_bytes(), heap.used_bytes() * 5 / 4 + heap.chunk_bytes()) << "used " << heap.used_bytes();
  expect_heap_matches(heap, model, rng);
  const uint64_t moved = heap.moved_bytes();
  released = heap.trim();
  ASSERT_TRUE(released.ok());
  EXPECT_EQ(*released, 0u);
  EXPECT_EQ(heap.moved_bytes(), moved);
}

void check_trim_in_steps(ExtentValueHeap& heap, std::mt19937_64& rng) {
  HeapModel model;
  fill_then_release_most(heap, model, rng);
  if (::testing::Test::HasFatalFailure()) return;
  const uint64_t before = heap.reserved_bytes();
  heap.begin_trim();
  ASSERT_TRUE(heap.trimming());
  int steps = 0;
  uint64_t released = 0;
  for (bool done = false; !done; ++steps) {
    ASSERT_LT(steps, 100000) << "the trim never ended";
    auto step = heap.trim_step(256);
    ASSERT_TRUE(step.ok()) << step.status();
    released += step->released_bytes;
    done = step->done;
    EXPECT_EQ(heap.trimming(), !done);
    // What a server does between steps: small puts and some releases.
    std::vector<std::string> values(1 + rng() % 8);
    for (auto& v : values) v = random_bytes(rng, static_cast<uint32_t>(rng() % 2000));
    ASSERT_TRUE(put_values(heap, model, values).ok());
    if (rng() % 4 == 0) release_share(heap, model, rng, 0.01);
    if (steps % 16 == 0) {
      expect_heap_matches(heap, model, rng);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  EXPECT_GT(steps, 4) << "a bounded step did the whole trim";
  EXPECT_GT(released, 0u);
  EXPECT_GT(heap.moved_bytes(), 0u);
  EXPECT_LT(heap.reserved_bytes(), before);
  EXPECT_LE(heap.reserved_bytes(), heap.used_bytes() * 5 / 4 + 2 * heap.chunk_bytes()) << "used " << heap.used_bytes();
  expect_heap_matches(heap, model, rng);
  // A step with no trim begun does nothing.
  auto idle = heap.trim_step(256);
  ASSERT_TRUE(idle.ok());
  EXPECT_TRUE(idle->done);
  EXPECT_EQ(idle->released_bytes, 0u);
}

namespace {

// The bytes of second_size values stored as a share of the bytes released.
double refill_share(ValueHeap& heap, uint64_t limit, uint32_t first_size, uint32_t second_size, int batch,
                    std::mt19937_64& rng) {
  heap.set_limit(limit);
  HeapModel model;
  absl::Status s;
  while (s.ok()) s = put_values(heap, model, {random_bytes(rng, first_size)});
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  const uint64_t freed = release_share(heap, model, rng, 0.5);
  uint64_t refilled = 0;
  for (s = absl::OkStatus(); s.ok();) {
    std::vector<std::string> values(batch);
    for (auto& v : values) v = random_bytes(rng, second_size);
    s = put_values(heap, model, values);
    if (s.ok()) refilled += uint64_t{second_size} * batch;
  }
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  expect_heap_matches(heap, model, rng);
  return freed == 0 ? 0.0 : static_cast<double>(refilled) / static_cast<double>(freed);
}

}  // namespace

void expect_refills(const std::function<std::unique_ptr<ExtentValueHeap>()>& make_heap,
                    std::initializer_list<RefillCase> cases, std::mt19937_64& rng) {
  for (const RefillCase& c : cases) {
    SCOPED_TRACE(::testing::Message() << c.first << " B -> " << c.second << " B under " << c.limit);
    std::unique_ptr<ExtentValueHeap> heap = make_heap();
    ASSERT_NE(heap, nullptr);
    const double share = refill_share(*heap, c.limit, c.first, c.second, c.batch, rng);
    EXPECT_GE(share, 0.90) << "moved " << heap->moved_bytes() << " bytes";
    EXPECT_LE(heap->reserved_bytes(), c.limit);
  }
}

}  // namespace gphkv::server::testing

// GetAnswers' buffers go back once every range of the batch was filled, not
// when the last reference is dropped: the calls' answers (a split call's
// merge, a message's serialization and send) must not hold the device
// pipeline's slot (issue 30).
#include "server/get_answers.h"

#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace gphkv::server {
namespace {

// Answers of `n` calls whose fill marks its calls filled, and whose
// release_buffers checks that every call was filled by then.
class CountingAnswers final : public GetAnswers {
 public:
  explicit CountingAnswers(size_t n) : filled_(n) {
    calls_.assign(n, nullptr);
    statuses_.assign(n, absl::OkStatus());
    key_offsets_.assign(n + 1, 0);
  }
  void fill(size_t begin, size_t end) override {
    EXPECT_EQ(releases_.load(), 0) << "filled after the buffers went back";
    for (size_t i = begin; i < end; ++i) filled_[i].fetch_add(1);
  }
  int releases() const { return releases_.load(); }
  size_t unfilled_at_release() const { return unfilled_at_release_; }

 protected:
  void release_buffers() override {
    for (const auto& f : filled_) unfilled_at_release_ += f.load() == 0;
    releases_.fetch_add(1);
  }

 private:
  std::vector<std::atomic<int>> filled_;
  std::atomic<int> releases_{0};
  size_t unfilled_at_release_ = 0;
};

TEST(GetAnswers, BuffersGoBackOnceTheLastRangeIsFilled) {
  CountingAnswers a(10);
  a.expect_ranges(3);
  a.fill(0, 4);
  a.range_filled();
  a.fill(7, 10);
  a.range_filled();
  EXPECT_EQ(a.releases(), 0) << "given back with a range still to fill";
  a.fill(4, 7);
  a.range_filled();
  EXPECT_EQ(a.releases(), 1);
  EXPECT_EQ(a.unfilled_at_release(), 0u);
}

TEST(GetAnswers, OneRangeGivesTheBuffersBackAtOnce) {
  CountingAnswers a(5);
  a.expect_ranges(1);
  a.fill(0, 5);
  a.range_filled();
  EXPECT_EQ(a.releases(), 1);
}

// Ranges filled on many threads at once, in a random order: exactly one
// release, after every call was filled.
TEST(GetAnswers, RangesFilledOnManyThreadsReleaseOnceAfterAll) {
  std::mt19937 rng(std::random_device{}());
  for (int round = 0; round < 50; ++round) {
    const size_t ranges = 1 + rng() % 16;
    const size_t per_range = 1 + rng() % 8;
    CountingAnswers a(ranges * per_range);
    a.expect_ranges(ranges);
    std::vector<std::thread> threads;
    for (size_t r = 0; r < ranges; ++r) {
      threads.emplace_back([&a, r, per_range] {
        a.fill(r * per_range, (r + 1) * per_range);
        a.range_filled();
      });
    }
    for (auto& t : threads) t.join();
    ASSERT_EQ(a.releases(), 1) << "round " << round;
    ASSERT_EQ(a.unfilled_at_release(), 0u) << "round " << round;
  }
}

}  // namespace
}  // namespace gphkv::server

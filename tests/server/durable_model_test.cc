// The check the kill tests rely on (tests/server/durable_model.h) must fail
// when the state it is given lost an acknowledged write, shows a write never
// made, or has a hole; and pass for every state a prefix of the log gives.
#include "tests/server/durable_model.h"

#include <random>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/loadgen/test_seed.h"

namespace gphkv::testing {
namespace {

TEST(DurableModel, EveryAcknowledgedWriteMustShowWithoutALossWindow) {
  WriteHistory h;
  h.record(1, "a", 1.0, 1.1, true);
  h.record(1, "b", 2.0, 2.1, true);
  h.record(2, "x", 1.5, 1.6, true);
  h.record(2, std::nullopt, 2.5, 2.6, true);
  EXPECT_TRUE(check_recovered(h, {{1, "b"}, {2, std::nullopt}}, 3.0, 0).ok);
  const CheckResult lost = check_recovered(h, {{1, "a"}, {2, std::nullopt}}, 3.0, 0);
  EXPECT_FALSE(lost.ok);
  const CheckResult undeleted = check_recovered(h, {{1, "b"}, {2, "x"}}, 3.0, 0);
  EXPECT_FALSE(undeleted.ok);
  const CheckResult invented = check_recovered(h, {{1, "c"}, {2, std::nullopt}}, 3.0, 0);
  EXPECT_FALSE(invented.ok);
  EXPECT_FALSE(check_recovered(h, {{1, "b"}}, 3.0, 0).ok) << "a key not read back";
}

TEST(DurableModel, TheUnknownLastWriteMayOrMayNotShow) {
  WriteHistory h;
  h.set_initial(7, "old");
  h.record(7, "acked", 1.0, 1.1, true);
  h.record(7, "cut short", 2.0, 0, false);
  EXPECT_TRUE(check_recovered(h, {{7, "acked"}}, 2.5, 0).ok);
  EXPECT_TRUE(check_recovered(h, {{7, "cut short"}}, 2.5, 0).ok);
  EXPECT_FALSE(check_recovered(h, {{7, "old"}}, 2.5, 0).ok);
  EXPECT_TRUE(check_recovered(h, {{7, "old"}}, 2.5, 2.0).ok) << "lost within the window";
}

TEST(DurableModel, AWriteOutsideTheLossWindowMustShow) {
  WriteHistory h;
  h.record(1, "a", 1.0, 1.1, true);
  h.record(1, "b", 5.0, 5.1, true);
  EXPECT_TRUE(check_recovered(h, {{1, "a"}}, 6.0, 1.0).ok);
  const CheckResult r = check_recovered(h, {{1, std::nullopt}}, 6.0, 1.0);
  EXPECT_FALSE(r.ok) << "'a' was acknowledged 4.9 s before the kill";
}

TEST(DurableModel, AHoleIsCaughtWhereASuffixPasses) {
  WriteHistory h;
  h.record(1, "a", 1.0, 1.1, true);  // lost ...
  h.record(2, "b", 2.0, 2.1, true);  // ... but this later one kept: a hole
  EXPECT_FALSE(check_recovered(h, {{1, std::nullopt}, {2, "b"}}, 3.0, 10).ok);
  EXPECT_TRUE(check_recovered(h, {{1, std::nullopt}, {2, std::nullopt}}, 3.0, 10).ok);
  EXPECT_TRUE(check_recovered(h, {{1, "a"}, {2, std::nullopt}}, 3.0, 10).ok);
}

// Batch b writes one key at time b (sent b - 0.4, acknowledged b + 0.4).
// Any prefix of the batches passes; a prefix with one batch missing passes
// exactly when its state is some prefix's state (the batch's write was
// overwritten, or repeated a value), and fails otherwise.
TEST(DurableModel, RandomLogsCutWithAndWithoutHoles) {
  const uint64_t seed = loadgen::testing::TestSeed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  std::mt19937_64 rng(seed);
  int holes_caught = 0;
  for (int round = 0; round < 300; ++round) {
    const int batches = 2 + static_cast<int>(rng() % 30);
    std::vector<std::pair<uint64_t, Value>> writes(batches + 1);
    WriteHistory h;
    for (uint64_t k = 0; k < 6; ++k) h.set_initial(k, std::nullopt);
    for (int b = 1; b <= batches; ++b) {
      const uint64_t key = rng() % 6;
      writes[b] = {key, rng() % 4 == 0 ? Value() : Value(absl::StrCat("v", b))};
      h.record(key, writes[b].second, b - 0.4, b + 0.4, true);
    }
    auto state_of = [&](int through, int skip) {
      std::map<uint64_t, Value> s;
      for (uint64_t k = 0; k < 6; ++k) s[k] = std::nullopt;
      for (int b = 1; b <= through; ++b) {
        if (b != skip) s[writes[b].first] = writes[b].second;
      }
      return s;
    };
    const double kill = batches + 0.5;
    const int cut = static_cast<int>(rng() % (batches + 1));
    EXPECT_TRUE(check_recovered(h, state_of(cut, -1), kill, kill).ok) << "a prefix through batch " << cut;
    if (cut < 2) continue;
    const int hole = 1 + static_cast<int>(rng() % (cut - 1));
    const std::map<uint64_t, Value> holed = state_of(cut, hole);
    bool a_prefix = false;
    for (int j = 0; j <= batches && !a_prefix; ++j) a_prefix = holed == state_of(j, -1);
    const CheckResult r = check_recovered(h, holed, kill, kill);
    EXPECT_EQ(r.ok, a_prefix) << "batches 1.." << cut << " without " << hole << ": "
                              << (r.failures.empty() ? std::string("passed") : r.failures[0]);
    holes_caught += !a_prefix;
  }
  EXPECT_GT(holes_caught, 50);
}

}  // namespace
}  // namespace gphkv::testing

// The cache models behind bench/lru_hit_ratio (loadgen/cache_model.h) on
// hand-worked streams and against brute-force models on random streams with
// the test seed, and the trace reader (loadgen/trace.h) on good and bad files.
#include "loadgen/cache_model.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "loadgen/rng.h"
#include "loadgen/trace.h"
#include "tests/loadgen/test_seed.h"

namespace gphkv::loadgen {
namespace {

using testing::TestSeed;

TEST(LruModel, HandWorkedStream) {
  LruModel m(3);
  m.Get({1, 2, 3});  // 3 misses, filled: [3 2 1] (most recent first)
  EXPECT_EQ(m.stats().hits, 0u);
  EXPECT_EQ(m.stats().fills, 3u);
  m.Get({1});  // hit: [1 3 2]
  m.Get({4});  // miss, 2 evicted: [4 1 3]
  EXPECT_FALSE(m.Contains(2));
  m.Put({3});  // [3 4 1]
  m.Get({5});  // miss, 1 evicted: [5 3 4]
  EXPECT_FALSE(m.Contains(1));
  EXPECT_TRUE(m.Contains(3) && m.Contains(4) && m.Contains(5));
  m.Delete({4, 9});  // [5 3]
  m.Get({4, 4, 3});  // 4 missed twice, 3 hits; 4 filled once: [4 3 5]
  EXPECT_EQ(m.stats().get_keys, 9u);
  EXPECT_EQ(m.stats().hits, 2u);
  EXPECT_EQ(m.stats().fills, 6u);
  EXPECT_EQ(m.stats().evictions, 2u);
  EXPECT_EQ(m.size(), 3u);
  m.Get({6});  // evicts 5, the least recent
  EXPECT_FALSE(m.Contains(5));
  EXPECT_DOUBLE_EQ(m.stats().hit_ratio(), 2.0 / 10.0);
}

// A get looks every key up before its fill: a miss filled in this get does
// not make a later key of the same get hit, and the fill may evict a key the
// same get hit.
TEST(LruModel, AGetsFillFollowsAllItsLookups) {
  LruModel m(2);
  m.Put({1, 2});     // [2 1]
  m.Get({3, 1, 3});  // 1 hits ([1 2]), 3 missed twice, filled once: 2 goes
  EXPECT_EQ(m.stats().hits, 1u);
  EXPECT_EQ(m.stats().fills, 1u);
  EXPECT_TRUE(m.Contains(1) && m.Contains(3));
  LruModel small(1);
  small.Get({7, 8});  // both miss; 7 filled then pushed out by 8
  EXPECT_TRUE(small.Contains(8));
  EXPECT_EQ(small.stats().evictions, 1u);
}

TEST(ClockModel, HandWorkedStream) {
  ClockModel m(3);
  m.Get({1, 2, 3});  // slots 0 1 2 = 1 2 3, all referenced, hand at 0
  m.Get({4});        // the sweep clears 1, 2, 3 and comes back: 1 goes; 4 in slot 0, hand at 1
  EXPECT_FALSE(m.Contains(1));
  m.Get({2});  // hit: 2 referenced again
  m.Get({5});  // hand at 1: 2 referenced (cleared), 3 not: 3 goes; 5 in slot 2, hand at 0
  EXPECT_FALSE(m.Contains(3));
  EXPECT_TRUE(m.Contains(2) && m.Contains(4) && m.Contains(5));
  m.Get({6});  // hand at 0: 4 referenced (cleared), 2 cleared above: 2 goes; 6 in slot 1, hand at 2
  EXPECT_FALSE(m.Contains(2));
  m.Delete({5});  // slot 2 free
  m.Get({7});     // takes the free slot: nothing evicted
  EXPECT_TRUE(m.Contains(4) && m.Contains(6) && m.Contains(7));
  EXPECT_EQ(m.stats().evictions, 3u);
  EXPECT_EQ(m.stats().hits, 1u);
  EXPECT_EQ(m.stats().get_keys, 8u);
}

// LRU by its definition: every item carries the time of its last use; the
// oldest goes. Quadratic and obviously right.
class BruteLru {
 public:
  explicit BruteLru(size_t capacity) : capacity_(capacity) {}
  uint64_t hits = 0, evictions = 0;
  void Get(const std::vector<uint64_t>& keys) {
    std::vector<uint64_t> missed;
    for (uint64_t k : keys) {
      if (used_.count(k)) {
        used_[k] = ++now_;
        ++hits;
      } else if (std::find(missed.begin(), missed.end(), k) == missed.end()) {
        missed.push_back(k);
      }
    }
    for (uint64_t k : missed) Insert(k);
  }
  void Insert(uint64_t k) {
    if (!used_.count(k) && used_.size() == capacity_) {
      auto oldest = std::min_element(used_.begin(), used_.end(),
                                     [](const auto& a, const auto& b) { return a.second < b.second; });
      used_.erase(oldest);
      ++evictions;
    }
    used_[k] = ++now_;
  }
  void Delete(uint64_t k) { used_.erase(k); }
  bool Contains(uint64_t k) const { return used_.count(k) > 0; }
  size_t size() const { return used_.size(); }

 private:
  size_t capacity_;
  uint64_t now_ = 0;
  std::map<uint64_t, uint64_t> used_;
};

// CLOCK written the slow way: a linear search of the ring for every key.
class BruteClock {
 public:
  explicit BruteClock(size_t capacity) : keys_(capacity), used_(capacity), ref_(capacity) {}
  uint64_t hits = 0, evictions = 0;
  void Get(const std::vector<uint64_t>& keys) {
    std::vector<uint64_t> missed;
    for (uint64_t k : keys) {
      if (const int i = Find(k); i >= 0) {
        ref_[i] = true;
        ++hits;
      } else if (std::find(missed.begin(), missed.end(), k) == missed.end()) {
        missed.push_back(k);
      }
    }
    for (uint64_t k : missed) Insert(k);
  }
  void Insert(uint64_t k) {
    if (const int i = Find(k); i >= 0) {
      ref_[i] = true;
      return;
    }
    size_t at;
    if (!freed_.empty()) {
      at = freed_.back();
      freed_.pop_back();
    } else if (next_unused_ < keys_.size()) {
      at = next_unused_++;
    } else {
      while (ref_[hand_]) ref_[hand_] = false, hand_ = (hand_ + 1) % keys_.size();
      at = hand_;
      hand_ = (hand_ + 1) % keys_.size();
      ++evictions;
    }
    keys_[at] = k;
    used_[at] = true;
    ref_[at] = true;
  }
  void Delete(uint64_t k) {
    if (const int i = Find(k); i >= 0) {
      used_[i] = ref_[i] = false;
      freed_.push_back(i);
    }
  }
  bool Contains(uint64_t k) const { return Find(k) >= 0; }

 private:
  int Find(uint64_t k) const {
    for (size_t i = 0; i < keys_.size(); ++i) {
      if (used_[i] && keys_[i] == k) return static_cast<int>(i);
    }
    return -1;
  }
  std::vector<uint64_t> keys_;
  std::vector<bool> used_, ref_;
  std::vector<size_t> freed_;
  size_t next_unused_ = 0, hand_ = 0;
};

// A random stream over a few dozen keys, skewed so that some stay hot.
struct RandomCall {
  int type;  // 0 get, 1 put, 2 delete
  std::vector<uint64_t> keys;
};
std::vector<RandomCall> RandomStream(Rng& rng, size_t calls, uint64_t keys) {
  std::vector<RandomCall> out(calls);
  for (RandomCall& c : out) {
    const uint64_t r = rng.Next() % 10;
    c.type = r < 7 ? 0 : r < 9 ? 1 : 2;
    const size_t n = 1 + rng.Next() % 6;
    for (size_t i = 0; i < n; ++i) {
      // Half the draws from the first eighth of the keys: a hot set.
      c.keys.push_back(rng.Next() % 2 ? rng.Next() % (keys / 8 + 1) : rng.Next() % keys);
    }
  }
  return out;
}

template <typename Model, typename Brute>
void ExpectSameAsBrute(const char* name) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(::testing::Message() << name << ", GPHKV_TEST_SEED=" << seed);
  Rng rng(seed);
  for (int round = 0; round < 40; ++round) {
    const size_t capacity = 1 + rng.Next() % 24;
    const uint64_t keys = 2 + rng.Next() % 60;
    Model m(capacity);
    Brute b(capacity);
    for (const RandomCall& c : RandomStream(rng, 400, keys)) {
      if (c.type == 0) {
        m.Get(c.keys);
        b.Get(c.keys);
      } else if (c.type == 1) {
        m.Put(c.keys);
        for (uint64_t k : c.keys) b.Insert(k);
      } else {
        m.Delete(c.keys);
        for (uint64_t k : c.keys) b.Delete(k);
      }
      ASSERT_EQ(m.stats().hits, b.hits) << "round " << round << ", capacity " << capacity;
      ASSERT_EQ(m.stats().evictions, b.evictions) << "round " << round;
      for (uint64_t k = 0; k < keys; ++k) ASSERT_EQ(m.Contains(k), b.Contains(k)) << "key " << k;
      ASSERT_LE(m.size(), capacity);
    }
  }
}

TEST(LruModel, SameAsBruteForceOnRandomStreams) { ExpectSameAsBrute<LruModel, BruteLru>("lru"); }
TEST(ClockModel, SameAsBruteForceOnRandomStreams) { ExpectSameAsBrute<ClockModel, BruteClock>("clock"); }

// A cache as big as the key space misses each key only until its first fill
// or put (gets and puts only), and no smaller cache hits more.
TEST(LruModel, AFullSizeCacheMissesOnlyNewKeysAndNoSmallerOneHitsMore) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE(::testing::Message() << "GPHKV_TEST_SEED=" << seed);
  Rng rng(seed ^ 0x1);
  std::vector<RandomCall> stream = RandomStream(rng, 2000, 200);
  for (RandomCall& c : stream) c.type = c.type == 2 ? 0 : c.type;
  uint64_t new_keys = 0;  // get keys asked before any fill or put of them
  std::set<uint64_t> seen;
  for (const RandomCall& c : stream) {
    if (c.type == 1) {
      seen.insert(c.keys.begin(), c.keys.end());
      continue;
    }
    std::vector<uint64_t> missed;
    for (uint64_t k : c.keys) {
      if (!seen.count(k)) missed.push_back(k), ++new_keys;
    }
    seen.insert(missed.begin(), missed.end());
  }
  auto hits_with = [&](uint64_t capacity) {
    LruModel m(capacity);
    for (const RandomCall& c : stream) c.type == 0 ? m.Get(c.keys) : m.Put(c.keys);
    return m.stats();
  };
  const CacheModelStats full = hits_with(200);
  EXPECT_EQ(full.get_keys - full.hits, new_keys);
  EXPECT_EQ(full.evictions, 0u);
  for (uint64_t capacity = 1; capacity < 200; capacity += 7) {
    EXPECT_LE(hits_with(capacity).hits, full.hits) << "capacity " << capacity;
  }
}

TEST(CacheModel, PoliciesByName) {
  EXPECT_TRUE(MakeCacheModel("lru", 4).ok());
  EXPECT_TRUE(MakeCacheModel("clock", 4).ok());
  EXPECT_FALSE(MakeCacheModel("fifo", 4).ok());
  EXPECT_FALSE(MakeCacheModel("", 4).ok());
}

TEST(Trace, ReadsTheLoadgensLinesAndPlaysTheThreadsInTurn) {
  std::istringstream in(
      "0 get 1 2\n"
      "0 put 3\n"
      "0 get 1 3\n"
      "1 get 2\n"
      "1 delete 2\n"
      "\n"
      "1 get 2\n");
  auto trace = ReadTrace(in);
  ASSERT_TRUE(trace.ok()) << trace.status();
  ASSERT_EQ(trace->size(), 2u);
  EXPECT_EQ((*trace)[0].size(), 3u);
  EXPECT_EQ((*trace)[1][1].type, OpType::kDelete);
  EXPECT_EQ((*trace)[0][2].keys, (std::vector<uint64_t>{1, 3}));
  // In turn: 0 get 1 2 (miss, miss); 1 get 2 (hit); 0 put 3; 1 delete 2;
  // 0 get 1 3 (hit, hit); 1 get 2 (miss). In file order 1's first get would
  // come after the delete and miss.
  LruModel m(10);
  EXPECT_EQ(ReplayTrace(*trace, &m), 6u);
  EXPECT_EQ(m.stats().get_keys, 6u);
  EXPECT_EQ(m.stats().hits, 3u);
}

TEST(Trace, ABadLineIsAnErrorNamingIt) {
  for (const char* bad : {"0 get 1\nx get 1\n", "0 get 1\n0 scan 1\n", "0 get 1\n0 get 1 -2\n", "0 get 1\n0\n",
                          "0 get 1\n0 get 18446744073709551616\n", "0 get 1\n99999999 get 1\n"}) {
    std::istringstream in(bad);
    auto trace = ReadTrace(in);
    ASSERT_FALSE(trace.ok()) << bad;
    EXPECT_NE(trace.status().message().find("line 2"), std::string::npos) << trace.status();
  }
}

}  // namespace
}  // namespace gphkv::loadgen

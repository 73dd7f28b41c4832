// flush_all's marks through recovery (issue 27, docs/durability.md run 6):
// StoreRecovery applies each mark where the log has it, and a delayed flush
// still pending when the replay passes its time does not come due in the
// middle of the replay, so every item logged before it (the ones after the
// pending mark included) is hidden once recovery is done. On both backends.
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/store.h"
#include "server/store_recovery.h"
#include "tests/server/byte_key_calls.h"
#include "tests/server/item_store_test.h"

namespace gphkv::server {
namespace {

class FlushRecoveryStore : public ItemStoreTest {
 protected:
  void configure(StoreOptions& o) override {
    ItemStoreTest::configure(o);
    o.logged_writes = true;
  }

  // Recovery's put of one logged item with its version.
  static absl::Status replay_put(StoreRecovery& sink, const std::string& key, uint64_t cas) {
    const std::vector<std::string_view> keys{key}, values{"v"};
    byte_key::ItemMeta meta;
    meta.cas = cas;
    const std::vector<byte_key::ItemMeta> metas{meta};
    return sink.on_puts(durability::Pairs{{}, values, keys, metas});
  }

  bool found(const std::string& key) {
    auto c = make_byte_get({key}, GetParam().hash_bits);
    std::vector<absl::Status> st;
    store_->apply_gets({&c->call}, &st);
    EXPECT_TRUE(st[0].ok()) << st[0];
    return c->get_out.found(0);
  }

  absl::Status put(const std::string& key) {
    auto c = make_byte_put({key}, {"new"}, GetParam().hash_bits);
    std::vector<absl::Status> st;
    store_->apply_puts({&c->call}, &st);
    return st[0];
  }
};

TEST_P(FlushRecoveryStore, AMarkHidesWhatCameBeforeItAndNotWhatCameAfter) {
  {
    StoreRecovery sink(*store_);
    ASSERT_TRUE(replay_put(sink, "before", 3).ok());
    ASSERT_TRUE(sink.on_flush(durability::FlushMark{10, 0}).ok());
    ASSERT_TRUE(replay_put(sink, "after", 10).ok());
  }
  EXPECT_FALSE(found("before"));
  EXPECT_TRUE(found("after"));
  EXPECT_EQ(store_->flush_state().below, 10u);
  EXPECT_EQ(store_->flush_state().at, 0u);
}

// Nothing newer than the mark came back (the flush was the last write):
// writes after recovery still take versions past it.
TEST_P(FlushRecoveryStore, WritesAfterRecoveryAreNotHiddenByTheLastMark) {
  {
    StoreRecovery sink(*store_);
    ASSERT_TRUE(replay_put(sink, "before", 3).ok());
    ASSERT_TRUE(sink.on_flush(durability::FlushMark{10, 0}).ok());
  }
  ASSERT_TRUE(put("fresh").ok());
  EXPECT_TRUE(found("fresh"));
  EXPECT_FALSE(found("before"));
}

TEST_P(FlushRecoveryStore, APendingFlushWhoseTimePassedHidesEverythingLoggedBeforeItsTime) {
  const uint32_t due = kStart + 100;
  now_ = due + 50;  // the server restarts after the delayed flush's time
  {
    StoreRecovery sink(*store_);
    ASSERT_TRUE(replay_put(sink, "a", 1).ok());
    ASSERT_TRUE(sink.on_flush(durability::FlushMark{0, due}).ok());
    // Written after the flush_all was asked for, before its time: the server
    // died before its time came, so no mark of its coming was logged.
    ASSERT_TRUE(replay_put(sink, "b", 2).ok());
    ASSERT_TRUE(replay_put(sink, "c", 3).ok());
    EXPECT_EQ(store_->flush_state().at, due) << "still pending while recovery runs";
  }
  EXPECT_FALSE(found("a"));
  EXPECT_FALSE(found("b"));
  EXPECT_FALSE(found("c"));
  // Its coming is a mark for the log, as in a running store.
  const std::vector<durability::FlushMark> marks = store_->take_flush_marks();
  ASSERT_EQ(marks.size(), 1u);
  EXPECT_GE(marks[0].below, 4u);
  EXPECT_EQ(marks[0].at, 0u);
  ASSERT_TRUE(put("d").ok());
  EXPECT_TRUE(found("d"));
}

TEST_P(FlushRecoveryStore, APendingFlushNotYetDueStaysPending) {
  const uint32_t due = kStart + 100;
  {
    StoreRecovery sink(*store_);
    ASSERT_TRUE(replay_put(sink, "a", 1).ok());
    ASSERT_TRUE(sink.on_flush(durability::FlushMark{0, due}).ok());
  }
  EXPECT_TRUE(found("a"));
  ASSERT_TRUE(put("b").ok());
  now_ = due;
  EXPECT_FALSE(found("a"));
  EXPECT_FALSE(found("b")) << "written after the restart, before the flush's time";
}

INSTANTIATE_TEST_SUITE_P(Backends, FlushRecoveryStore,
                         ::testing::Values(ByteKeyBackend{engine::Backend::kCpu, 64},
                                           ByteKeyBackend{engine::Backend::kCuda, 64}),
                         byte_key_backend_name);

}  // namespace
}  // namespace gphkv::server

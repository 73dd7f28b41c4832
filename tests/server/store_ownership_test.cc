// The store's ownership rules are checked, not only written down
// (server/thread_owner.h): the thread that first applies a run owns the
// store, another thread calling it aborts, and so does a write applied while
// pipelined gets are in flight (CUDA; skips without a device). The checks are
// on in every build type, so these run in the CI build (RelWithDebInfo).
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "server/store.h"
#include "server/wire_calls.h"

namespace gphkv::server {
namespace {

struct OneGet {
  OneGet() {
    request.add_keys(7);
    call.op = get_op(request, &response).value();
  }
  v1::GetRequest request;
  v1::GetResponse response;
  Call call;
  Call* run[1] = {&call};
};

struct OnePut {
  OnePut() {
    request.add_keys(7);
    request.add_value_lengths(5);
    request.mutable_values()->append("value");
    call.op = put_op(request, &response).value();
  }
  v1::PutRequest request;
  v1::PutResponse response;
  Call call;
  Call* run[1] = {&call};
};

std::unique_ptr<Store> make_store(engine::Backend backend) {
  StoreOptions o;
  o.backend = backend;
  o.initial_capacity = 1024;
  o.memory_limit_bytes = 64 << 20;
  o.table.cpu_threads = 2;
  auto s = Store::create(o);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(*s) : nullptr;
}

// The server makes the store on its main thread and hands it to the
// executor: reading it before, and owning it from the first run on, is fine.
TEST(StoreOwnership, TheFirstThreadThatAppliesARunOwnsTheStore) {
  auto store = make_store(engine::Backend::kCpu);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->keys(), 0u);
  OnePut put;
  std::vector<absl::Status> statuses;
  std::thread executor([&] { store->apply_puts(put.run, &statuses); });
  executor.join();
  ASSERT_EQ(statuses.size(), 1u);
  EXPECT_TRUE(statuses[0].ok()) << statuses[0];
  EXPECT_EQ(store->keys(), 1u);  // the read-only accessors stay readable
}

TEST(StoreOwnershipDeathTest, ASecondThreadCallingTheStoreAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto store = make_store(engine::Backend::kCpu);
  ASSERT_NE(store, nullptr);
  OneGet get;
  std::vector<absl::Status> statuses;
  store->apply_gets(get.run, &statuses);  // this thread owns the store now
  ASSERT_TRUE(statuses[0].ok()) << statuses[0];
  EXPECT_DEATH(
      {
        std::thread intruder([&] { store->apply_gets(get.run, &statuses); });
        intruder.join();
      },
      "Store::apply_gets: called from a second thread");
}

TEST(StoreOwnershipDeathTest, AWriteWhileGetsAreInFlightAborts) {
  if (engine::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible: the get pipeline needs one";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto store = make_store(engine::Backend::kCuda);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->can_pipeline_gets());
  OnePut put;
  std::vector<absl::Status> statuses;
  store->apply_puts(put.run, &statuses);
  ASSERT_TRUE(statuses[0].ok()) << statuses[0];
  OneGet get;
  ASSERT_TRUE(store->submit_gets(get.run).ok());
  EXPECT_DEATH(store->apply_puts(put.run, &statuses), "Store::apply_puts: pipelined gets are in flight");
  GetStageTimes times;
  auto answers = store->finish_gets(&times);
  ASSERT_NE(answers, nullptr);
  answers->fill(0, 1);
  EXPECT_TRUE(answers->statuses()[0].ok()) << answers->statuses()[0];
  EXPECT_TRUE(get.response.found(0));
}

}  // namespace
}  // namespace gphkv::server

// Conditional writes over the wire (issue 27; PutRequest.mode): through
// gphkv::Client with and without coalescing, on one partition and split over
// three, with uint64 and byte keys; the refusals' codes; bad modes and
// multi-key conditional calls refused whole; and a thread's async put
// followed by its own incr of the key, which must see it.
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "gtest/gtest.h"
#include "tests/server/test_server.h"

namespace gphkv {
namespace {

using testing::connect;
using testing::start_server;
using testing::test_options;

struct Shape {
  uint32_t partitions;
  bool coalesce;
};

class ConditionalService : public ::testing::TestWithParam<Shape> {
 protected:
  void SetUp() override {
    auto o = test_options();
    o.cpu_partitions = GetParam().partitions;
    server_ = start_server(o);
    ASSERT_NE(server_, nullptr);
    ClientOptions co;
    co.coalesce.enabled = GetParam().coalesce;
    client_ = connect(*server_, co);
  }
  std::unique_ptr<server::Server> server_;
  std::unique_ptr<Client> client_;
};

INSTANTIATE_TEST_SUITE_P(Shapes, ConditionalService,
                         ::testing::Values(Shape{1, true}, Shape{1, false}, Shape{3, true}, Shape{3, false}));

TEST_P(ConditionalService, EveryModeAnswersAsDocumented) {
  for (int kind = 0; kind < 2; ++kind) {
    SCOPED_TRACE(kind == 0 ? "uint64 keys" : "byte keys");
    const uint64_t n = 1000;
    const std::string b = "counter:1";
    auto write = [&](std::string_view value, v1::WriteMode mode) {
      return kind == 0 ? client_->Write(n, value, mode) : client_->Write(std::string_view(b), value, mode);
    };
    auto value = [&]() -> std::string {
      auto r = kind == 0 ? client_->Get(std::vector<uint64_t>{n}) : client_->Get(std::vector<std::string_view>{b});
      EXPECT_TRUE(r.ok()) << r.status();
      if (!r.ok() || !r->found(0)) return "<missing>";
      return std::string(r->value(0));
    };
    EXPECT_EQ(write("1", v1::WRITE_MODE_INCREMENT).status().code(), absl::StatusCode::kNotFound);
    EXPECT_EQ(write("x", v1::WRITE_MODE_REPLACE).status().code(), absl::StatusCode::kNotFound);
    EXPECT_EQ(write("x", v1::WRITE_MODE_APPEND).status().code(), absl::StatusCode::kNotFound);
    EXPECT_EQ(value(), "<missing>");
    auto added = write("40", v1::WRITE_MODE_ADD);
    ASSERT_TRUE(added.ok()) << added.status();
    EXPECT_TRUE(added->created(0));
    EXPECT_EQ(write("41", v1::WRITE_MODE_ADD).status().code(), absl::StatusCode::kAlreadyExists);
    auto incr = write("2", v1::WRITE_MODE_INCREMENT);
    ASSERT_TRUE(incr.ok()) << incr.status();
    EXPECT_EQ(incr->counter(), 42u);
    EXPECT_FALSE(incr->created(0));
    auto decr = write("50", v1::WRITE_MODE_DECREMENT);
    ASSERT_TRUE(decr.ok()) << decr.status();
    EXPECT_EQ(decr->counter(), 0u);
    ASSERT_TRUE(write("9", v1::WRITE_MODE_REPLACE).ok());
    ASSERT_TRUE(write("0", v1::WRITE_MODE_APPEND).ok());
    ASSERT_TRUE(write("1", v1::WRITE_MODE_PREPEND).ok());
    EXPECT_EQ(value(), "190");
    // A delta that is no number is refused before it is queued.
    EXPECT_EQ(write("-1", v1::WRITE_MODE_INCREMENT).status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(write("", v1::WRITE_MODE_DECREMENT).status().code(), absl::StatusCode::kInvalidArgument);
    ASSERT_TRUE(write("abc", v1::WRITE_MODE_APPEND).ok());
    auto refused = write("1", v1::WRITE_MODE_INCREMENT);
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << refused.status();
    EXPECT_NE(refused.status().message().find("non-numeric"), std::string::npos) << refused.status();
    EXPECT_EQ(value(), "190abc");
  }
}

TEST_P(ConditionalService, AThreadsIncrementSeesItsOwnEarlierPuts) {
  // Each thread puts its counter asynchronously, then increments it at once:
  // the increment must find the put (NOT_FOUND would mean it overtook it).
  std::vector<std::thread> threads;
  // Shared with the puts' callbacks, which may run after the test's body.
  auto bad = std::make_shared<std::atomic<int>>(0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([this, bad, t] {
      for (int i = 0; i < 50; ++i) {
        const uint64_t key = 5000 + static_cast<uint64_t>(t) * 100 + static_cast<uint64_t>(i);
        const std::string start = std::to_string(i);
        client_->PutAsync(std::vector<uint64_t>{key}, std::vector<std::string_view>{start},
                          [bad](absl::StatusOr<std::vector<bool>> r) {
                            if (!r.ok()) ++*bad;
                          });
        auto r = client_->Write(key, "1", v1::WRITE_MODE_INCREMENT);
        if (!r.ok() || r->counter() != static_cast<uint64_t>(i) + 1) ++*bad;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad->load(), 0) << "increments that did not see their thread's put";
}

TEST(ConditionalServiceLimits, BadModesAndManyKeysAreRefusedWhole) {
  auto server = start_server();
  ASSERT_NE(server, nullptr);
  auto client = connect(*server);
  auto ctx = [] {
    auto c = std::make_unique<grpc::ClientContext>();
    c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return c;
  };
  v1::PutRequest two;
  two.add_keys(1);
  two.add_keys(2);
  two.add_value_lengths(1);
  two.add_value_lengths(1);
  two.set_values("ab");
  two.set_mode(v1::WRITE_MODE_ADD);
  v1::PutResponse resp;
  grpc::Status s = client->stub()->Put(ctx().get(), two, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("takes one key"), std::string::npos) << s.error_message();
  v1::PutRequest bad_mode;
  bad_mode.add_keys(1);
  bad_mode.add_value_lengths(1);
  bad_mode.set_values("a");
  bad_mode.set_mode(static_cast<v1::WriteMode>(257));  // would be ADD if cut to a byte
  s = client->stub()->Put(ctx().get(), bad_mode, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("not a WriteMode"), std::string::npos) << s.error_message();
  // Neither stored anything.
  auto got = client->Get(std::vector<uint64_t>{1, 2});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_FALSE(got->found(0));
  EXPECT_FALSE(got->found(1));
}

}  // namespace
}  // namespace gphkv

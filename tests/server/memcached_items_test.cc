// The memcached port's client flags and exptime (issue 27), byte for byte on
// a raw socket, with the server's clock the test's (StoreOptions::unix_clock)
// so items expire at their boundary second without sleeping: set, add and
// replace store flags and exptime by memcached's rules (0 never; up to 30
// days relative; beyond, an absolute unix time; negative, expired at once),
// get and gets return the flags, append, prepend, incr and decr keep the
// item's flags and exptime, an expired item is a miss everywhere (add stores
// over it, replace and append refuse, delete answers NOT_FOUND). With three
// partitions, so a multi-get's keys are split and their flags merged.
#include <atomic>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "tests/server/memcache_socket.h"
#include "tests/server/test_server.h"

namespace gphkv {
namespace {

using testing::MemcacheSocket;

constexpr uint32_t kStart = 1'800'000'000;

class MemcachedItemsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server::ServerOptions o = testing::memcached_test_options(/*max_value_bytes=*/4096);
    o.cpu_partitions = 3;
    o.store.unix_clock = [this] { return now_.load(); };
    server_ = testing::start_server(o);
    ASSERT_NE(server_, nullptr);
    socket_ = std::make_unique<MemcacheSocket>(server_->memcached_port());
    ASSERT_TRUE(socket_->connected());
  }

  void expect(const std::string& request, const std::string& reply) {
    EXPECT_EQ(socket_->round_trip(request, reply), reply) << "request: " << request << " at " << now_;
    EXPECT_EQ(socket_->read_available(std::chrono::milliseconds(30)), "") << "request: " << request;
  }

  std::atomic<uint32_t> now_{kStart};
  std::unique_ptr<server::Server> server_;
  std::unique_ptr<MemcacheSocket> socket_;
};

TEST_F(MemcachedItemsTest, FlagsAreStoredAndReturned) {
  expect("set a 42 0 1\r\nx\r\n", "STORED\r\n");
  expect("set b 4294967295 0 2\r\nyz\r\n", "STORED\r\n");
  expect("set c 0 0 1\r\nw\r\n", "STORED\r\n");
  expect("get a b c nope\r\n", "VALUE a 42 1\r\nx\r\nVALUE b 4294967295 2\r\nyz\r\nVALUE c 0 1\r\nw\r\nEND\r\n");
  // gets adds the item's CAS version, never 0 (memcached_versions_test.cc checks them).
  EXPECT_TRUE(socket_->send("gets b\r\n"));
  const std::string head = "VALUE b 4294967295 2 ";
  EXPECT_EQ(socket_->read(head.size()), head);
  const std::string rest = socket_->read_available(std::chrono::milliseconds(200));
  EXPECT_TRUE(rest.size() > 2 && rest[0] >= '1' && rest[0] <= '9' &&
              rest.find("\r\nyz\r\nEND\r\n") != std::string::npos)
      << rest;
  // A set replaces the flags; add and replace store theirs.
  expect("set a 7 0 1\r\nx\r\n", "STORED\r\n");
  expect("replace a 8 0 1\r\ny\r\n", "STORED\r\n");
  expect("add d 9 0 1\r\nz\r\n", "STORED\r\n");
  expect("add d 10 0 1\r\nq\r\n", "NOT_STORED\r\n");
  expect("get a d\r\n", "VALUE a 8 1\r\ny\r\nVALUE d 9 1\r\nz\r\nEND\r\n");
  // append, prepend, incr and decr keep the item's flags (their own are ignored).
  expect("append a 1 0 1\r\n2\r\n", "STORED\r\n");
  expect("prepend a 1 0 1\r\n1\r\n", "STORED\r\n");
  expect("get a\r\n", "VALUE a 8 3\r\n1y2\r\nEND\r\n");
  expect("set n 5 0 2\r\n10\r\n", "STORED\r\n");
  expect("incr n 5\r\n", "15\r\n");
  expect("decr n 20\r\n", "0\r\n");
  expect("get n\r\n", "VALUE n 5 1\r\n0\r\nEND\r\n");
  // Bad flags: memcached's reply, nothing stored.
  expect("set a 4294967296 0 1\r\nx\r\n", "CLIENT_ERROR bad command line format\r\n");
  expect("get a\r\n", "VALUE a 8 3\r\n1y2\r\nEND\r\n");
}

TEST_F(MemcachedItemsTest, RelativeExptimeEndsAtItsSecond) {
  expect("set t 3 10 1\r\nv\r\n", "STORED\r\n");
  now_ += 9;
  expect("get t\r\n", "VALUE t 3 1\r\nv\r\nEND\r\n");
  expect("add t 0 0 1\r\nw\r\n", "NOT_STORED\r\n");
  // append keeps the expiry: still the same second.
  expect("append t 0 0 1\r\n!\r\n", "STORED\r\n");
  now_ += 1;
  expect("get t\r\n", "END\r\n");
  expect("gets t\r\n", "END\r\n");
  expect("replace t 0 0 1\r\nw\r\n", "NOT_STORED\r\n");
  expect("append t 0 0 1\r\nw\r\n", "NOT_STORED\r\n");
  expect("prepend t 0 0 1\r\nw\r\n", "NOT_STORED\r\n");
  expect("incr t 1\r\n", "NOT_FOUND\r\n");
  expect("delete t\r\n", "NOT_FOUND\r\n");
  // add stores over the expired item; its flags and no expiry are the new ones.
  expect("set u 0 5 1\r\nv\r\n", "STORED\r\n");
  now_ += 5;
  expect("add u 6 0 2\r\nnw\r\n", "STORED\r\n");
  now_ += 1000;
  expect("get u\r\n", "VALUE u 6 2\r\nnw\r\nEND\r\n");
}

TEST_F(MemcachedItemsTest, ExptimeFollowsMemcachedsRules) {
  const uint32_t t = now_;
  // 30 days is still relative; a day more is an absolute time, long past.
  expect("set month 0 2592000 1\r\nm\r\n", "STORED\r\n");
  expect("set past 0 2592001 1\r\np\r\n", "STORED\r\n");
  expect("get month past\r\n", "VALUE month 0 1\r\nm\r\nEND\r\n");
  // An absolute time ahead: there until that second.
  expect("set abs 1 " + std::to_string(t + 100) + " 1\r\na\r\n", "STORED\r\n");
  // Negative: expired at once, as memcached's; the item is a miss, not an error.
  expect("set neg 0 -1 1\r\nn\r\n", "STORED\r\n");
  expect("get neg abs\r\n", "VALUE abs 1 1\r\na\r\nEND\r\n");
  now_ = t + 99;
  expect("get abs month\r\n", "VALUE abs 1 1\r\na\r\nVALUE month 0 1\r\nm\r\nEND\r\n");
  now_ = t + 100;
  expect("get abs month\r\n", "VALUE month 0 1\r\nm\r\nEND\r\n");
  now_ = t + 2592000;
  expect("get month\r\n", "END\r\n");
  // incr keeps the expiry.
  expect("set c 0 10 1\r\n1\r\n", "STORED\r\n");
  now_ += 9;
  expect("incr c 1\r\n", "2\r\n");
  now_ += 1;
  expect("get c\r\n", "END\r\n");
}

}  // namespace
}  // namespace gphkv

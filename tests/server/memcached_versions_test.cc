// The memcached port's cas, touch, gat, gats and flush_all (issue 27), byte
// for byte on a raw socket, with the server's clock the test's
// (StoreOptions::unix_clock) and three partitions (a multi-key gat and a
// flush_all reach all of them). CAS versions are the store's, so a test
// reads them from gets and writes the replies that follow from them.
#include <atomic>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "tests/engine/table_checks.h"
#include "tests/server/memcache_socket.h"
#include "tests/server/test_server.h"

namespace gphkv {
namespace {

using testing::MemcacheSocket;

constexpr uint32_t kStart = 1'800'000'000;

// The cas unique of the one VALUE line of a gets/gats reply ("VALUE k f n
// cas\r\n..."); 0 when the reply has none.
uint64_t cas_of(const std::string& reply) {
  if (reply.rfind("VALUE ", 0) != 0) return 0;
  const size_t eol = reply.find("\r\n");
  const size_t sp = reply.rfind(' ', eol);
  return std::strtoull(reply.substr(sp + 1, eol - sp - 1).c_str(), nullptr, 10);
}

class MemcachedVersionsTest : public ::testing::Test {
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

  // gets of one stored key whose value is `value` and flags `flags`: its CAS,
  // after checking the rest of the reply byte for byte.
  uint64_t gets(MemcacheSocket& s, const std::string& key, const std::string& value, uint32_t flags = 0) {
    EXPECT_TRUE(s.send("gets " + key + "\r\n"));
    const std::string head = "VALUE " + key + " " + std::to_string(flags) + " " + std::to_string(value.size()) + " ";
    std::string got = s.read(head.size());
    EXPECT_EQ(got, head);
    // The CAS's digits, then the line's end.
    while (got.size() < 2 || got.substr(got.size() - 2) != "\r\n") {
      const std::string c = s.read(1);
      if (c.empty()) break;
      got += c;
    }
    const uint64_t cas = cas_of(got);
    const std::string rest = value + "\r\nEND\r\n";
    EXPECT_EQ(s.read(rest.size()), rest) << key;
    EXPECT_NE(cas, 0u) << key;
    return cas;
  }
  uint64_t gets(const std::string& key, const std::string& value, uint32_t flags = 0) {
    return gets(*socket_, key, value, flags);
  }

  std::atomic<uint32_t> now_{kStart};
  std::unique_ptr<server::Server> server_;
  std::unique_ptr<MemcacheSocket> socket_;
};

TEST_F(MemcachedVersionsTest, EveryWriteGivesANewCasAndCasStoresOnlyOnItsOwn) {
  expect("set a 1 0 1\r\nx\r\n", "STORED\r\n");
  const uint64_t c1 = gets("a", "x", 1);
  EXPECT_EQ(gets("a", "x", 1), c1) << "a read keeps the CAS";
  // Every kind of write gives a new, larger one.
  expect("append a 0 0 1\r\ny\r\n", "STORED\r\n");
  const uint64_t c2 = gets("a", "xy", 1);
  EXPECT_GT(c2, c1);
  expect("set n 0 0 1\r\n5\r\n", "STORED\r\n");
  const uint64_t n1 = gets("n", "5");
  expect("incr n 2\r\n", "7\r\n");
  const uint64_t n2 = gets("n", "7");
  EXPECT_GT(n2, n1);
  // A refused write keeps it.
  expect("add a 0 0 1\r\nz\r\n", "NOT_STORED\r\n");
  EXPECT_EQ(gets("a", "xy", 1), c2);
  // cas: a stale unique is EXISTS and changes nothing; the item's own stores.
  expect("cas a 2 0 1 " + std::to_string(c1) + "\r\nq\r\n", "EXISTS\r\n");
  EXPECT_EQ(gets("a", "xy", 1), c2);
  expect("cas a 2 0 1 " + std::to_string(c2) + "\r\nq\r\n", "STORED\r\n");
  const uint64_t c3 = gets("a", "q", 2);
  EXPECT_GT(c3, c2);
  expect("cas a 2 0 1 " + std::to_string(c2) + "\r\nr\r\n", "EXISTS\r\n");
  // Absent or expired: NOT_FOUND, and nothing is stored.
  expect("cas nope 0 0 1 1\r\nq\r\n", "NOT_FOUND\r\n");
  expect("get nope\r\n", "END\r\n");
  expect("set e 0 5 1\r\nv\r\n", "STORED\r\n");
  const uint64_t e = gets("e", "v");
  now_ += 5;
  expect("cas e 0 0 1 " + std::to_string(e) + "\r\nw\r\n", "NOT_FOUND\r\n");
  expect("get e\r\n", "END\r\n");
  // noreply: silent either way; the effect shows.
  expect("cas a 0 0 1 " + std::to_string(c3) + " noreply\r\ns\r\n", "");
  expect("get a\r\n", "VALUE a 0 1\r\ns\r\nEND\r\n");
  expect("cas a 0 0 1 " + std::to_string(c3) + " noreply\r\nt\r\n", "");
  expect("get a\r\n", "VALUE a 0 1\r\ns\r\nEND\r\n");
  // Bad lines change nothing.
  expect("cas a 0 0 1\r\nu\r\n", "CLIENT_ERROR bad command line format\r\n");
  expect("cas a 0 0 1 x\r\nu\r\n", "CLIENT_ERROR bad command line format\r\n");
  expect("get a\r\n", "VALUE a 0 1\r\ns\r\nEND\r\n");
}

TEST_F(MemcachedVersionsTest, TouchSetsTheExpiryAndKeepsTheCas) {
  expect("set t 3 0 2\r\nhi\r\n", "STORED\r\n");
  const uint64_t c = gets("t", "hi", 3);
  expect("touch t 10\r\n", "TOUCHED\r\n");
  EXPECT_EQ(gets("t", "hi", 3), c) << "touch keeps the CAS (memcached's does)";
  expect("touch nope 10\r\n", "NOT_FOUND\r\n");
  expect("get nope\r\n", "END\r\n");
  now_ += 9;
  expect("get t\r\n", "VALUE t 3 2\r\nhi\r\nEND\r\n");
  // Touch again: 0 is never.
  expect("touch t 0\r\n", "TOUCHED\r\n");
  now_ += 100;
  expect("get t\r\n", "VALUE t 3 2\r\nhi\r\nEND\r\n");
  expect("touch t 1 noreply\r\n", "");
  now_ += 1;
  expect("get t\r\n", "END\r\n");
  expect("touch t 100\r\n", "NOT_FOUND\r\n");
  // A bad exptime changes nothing.
  expect("set u 0 0 1\r\nv\r\n", "STORED\r\n");
  expect("touch u -x\r\n", "CLIENT_ERROR invalid exptime argument\r\n");
  expect("touch u\r\n", "CLIENT_ERROR bad command line format\r\n");
  now_ += 1000;
  expect("get u\r\n", "VALUE u 0 1\r\nv\r\nEND\r\n");
}

TEST_F(MemcachedVersionsTest, GatAndGatsReturnAndTouch) {
  expect("set a 1 0 1\r\nx\r\n", "STORED\r\n");
  expect("set b 2 0 2\r\nyz\r\n", "STORED\r\n");
  const uint64_t ca = gets("a", "x", 1);
  const uint64_t cb = gets("b", "yz", 2);
  // Keys over the three partitions, a miss and a repeat, in request order.
  expect("gat 10 a nope b a\r\n", "VALUE a 1 1\r\nx\r\nVALUE b 2 2\r\nyz\r\nVALUE a 1 1\r\nx\r\nEND\r\n");
  expect("gats 10 b a\r\n",
         "VALUE b 2 2 " + std::to_string(cb) + "\r\nyz\r\nVALUE a 1 1 " + std::to_string(ca) + "\r\nx\r\nEND\r\n");
  now_ += 9;
  expect("get a b\r\n", "VALUE a 1 1\r\nx\r\nVALUE b 2 2\r\nyz\r\nEND\r\n");
  now_ += 1;
  expect("get a b\r\n", "END\r\n");
  expect("gat 10 a b\r\n", "END\r\n");
  // A gat that expires the item returns it once.
  expect("set c 0 0 1\r\nw\r\n", "STORED\r\n");
  expect("gat -1 c\r\n", "VALUE c 0 1\r\nw\r\nEND\r\n");
  expect("get c\r\n", "END\r\n");
  expect("gat x c\r\n", "CLIENT_ERROR invalid exptime argument\r\n");
  expect("gat 10\r\n", "CLIENT_ERROR bad command line format\r\n");
}

TEST_F(MemcachedVersionsTest, FlushAllNowAndDelayed) {
  expect("set a 0 0 1\r\nx\r\n", "STORED\r\n");
  expect("set b 0 0 1\r\ny\r\n", "STORED\r\n");
  expect("flush_all\r\n", "OK\r\n");
  expect("get a b\r\n", "END\r\n");
  expect("add a 0 0 1\r\nz\r\n", "STORED\r\n");
  expect("get a b\r\n", "VALUE a 0 1\r\nz\r\nEND\r\n");
  // In one write: a set, a flush, a set: the first is gone, the second stays.
  ASSERT_TRUE(socket_->send("set c 0 0 1 noreply\r\n1\r\nflush_all noreply\r\nset d 0 0 1 noreply\r\n2\r\n"));
  expect("get a c d\r\n", "VALUE d 0 1\r\n2\r\nEND\r\n");
  // Delayed: items written before its time go at its time.
  expect("flush_all 5\r\n", "OK\r\n");
  now_ += 3;
  expect("set e 0 0 1\r\n3\r\n", "STORED\r\n");
  expect("get d e\r\n", "VALUE d 0 1\r\n2\r\nVALUE e 0 1\r\n3\r\nEND\r\n");
  now_ += 2;
  expect("get d e\r\n", "END\r\n");
  expect("set f 0 0 1\r\n4\r\n", "STORED\r\n");
  expect("get f\r\n", "VALUE f 0 1\r\n4\r\nEND\r\n");
  // A bad delay changes nothing.
  expect("flush_all x\r\n", "CLIENT_ERROR invalid exptime argument\r\n");
  expect("flush_all 1 2\r\n", "CLIENT_ERROR bad command line format\r\n");
  expect("get f\r\n", "VALUE f 0 1\r\n4\r\nEND\r\n");
}

// Two connections race cas with the same unique, many times: exactly one
// stores, the other answers EXISTS, and the value is the winner's.
TEST_F(MemcachedVersionsTest, CasRaceHasExactlyOneWinner) {
  MemcacheSocket other(server_->memcached_port());
  ASSERT_TRUE(other.connected());
  std::mt19937_64 rng(engine::testing::test_seed());
  for (int round = 0; round < 60; ++round) {
    const std::string key = "race:" + std::to_string(rng() % 5);
    const std::string start = std::to_string(round);
    expect("set " + key + " 0 0 " + std::to_string(start.size()) + "\r\n" + start + "\r\n", "STORED\r\n");
    const uint64_t unique = gets(key, start);
    const std::string line = "cas " + key + " 0 0 1 " + std::to_string(unique) + "\r\n";
    std::string a_reply, b_reply;
    std::thread a([&] { a_reply = socket_->round_trip(line + "A\r\n", "STORED\r\n"); });
    std::thread b([&] { b_reply = other.round_trip(line + "B\r\n", "EXISTS\r\n"); });
    a.join();
    b.join();
    // Each read as many bytes as its guess; "STORED\r\n" and "EXISTS\r\n" are both 8.
    ASSERT_TRUE((a_reply == "STORED\r\n" && b_reply == "EXISTS\r\n") ||
                (a_reply == "EXISTS\r\n" && b_reply == "STORED\r\n"))
        << "round " << round << ": " << a_reply << " / " << b_reply;
    const std::string winner = a_reply == "STORED\r\n" ? "A" : "B";
    expect("get " + key + "\r\n", "VALUE " + key + " 0 1\r\n" + winner + "\r\nEND\r\n");
  }
}

}  // namespace
}  // namespace gphkv

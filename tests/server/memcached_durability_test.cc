// The memcached port on a server with --data_dir (issue 26 made byte keys
// durable): sets, deletes and conditional writes (as what they stored) are
// logged like gRPC's byte-key writes, with their items' flags and expiry
// (issue 27), and so are the items touch, gat and gats rewrite, so a
// restarted server answers what was acknowledged, and the gRPC side sees
// the same keys.
#include <atomic>
#include <filesystem>
#include <string>

#include "gtest/gtest.h"
#include "tests/server/memcache_socket.h"
#include "tests/server/test_server.h"

namespace gphkv {
namespace {

using testing::MemcacheSocket;

TEST(MemcachedDurability, SetsAndDeletesSurviveARestart) {
  server::ServerOptions o = testing::memcached_test_options(/*max_value_bytes=*/4096);
  o.cpu_partitions = 2;
  o.data_dir.dir = ::testing::TempDir() + "/memcached_data_dir";
  std::filesystem::remove_all(o.data_dir.dir);
  const std::string big(4000, 'v');
  std::string lasting_cas;
  {
    auto server = testing::start_server(o);
    ASSERT_NE(server, nullptr);
    MemcacheSocket s(server->memcached_port());
    ASSERT_TRUE(s.connected());
    const std::string stored = "STORED\r\n";
    EXPECT_EQ(s.round_trip("set user:1 0 0 5\r\nalice\r\n", stored), stored);
    EXPECT_EQ(s.round_trip("set user:2 0 0 3\r\nbob\r\n", stored), stored);
    EXPECT_EQ(s.round_trip("set big 0 0 4000\r\n" + big + "\r\n", stored), stored);
    EXPECT_EQ(s.round_trip("set gone 0 0 1\r\nx\r\n", stored), stored);
    EXPECT_EQ(s.round_trip("delete gone\r\n", "DELETED\r\n"), "DELETED\r\n");
    // noreply writes are logged too: the get after them waits for them in order.
    ASSERT_TRUE(s.send("set quiet 0 0 2 noreply\r\nhi\r\nset user:2 0 0 5 noreply\r\nbobby\r\n"));
    const std::string seen = "VALUE user:2 0 5\r\nbobby\r\nEND\r\n";
    EXPECT_EQ(s.round_trip("get user:2\r\n", seen), seen);
    // Conditional writes are logged as what they stored.
    EXPECT_EQ(s.round_trip("add hits 0 0 2\r\n40\r\n", stored), stored);
    EXPECT_EQ(s.round_trip("incr hits 2\r\n", "42\r\n"), "42\r\n");
    EXPECT_EQ(s.round_trip("append user:1 0 0 1\r\n!\r\n", stored), stored);
    EXPECT_EQ(s.round_trip("add user:1 0 0 1\r\nz\r\n", "NOT_STORED\r\n"), "NOT_STORED\r\n");
    // Items keep their flags and expiry through the log (issue 27); an
    // append keeps the item's. One expired at once is a miss, also after a
    // restart: its put replaced what the key held, and recovery drops it.
    EXPECT_EQ(s.round_trip("set flagged 7 0 1\r\nF\r\n", stored), stored);
    EXPECT_EQ(s.round_trip("append flagged 0 0 1\r\n!\r\n", stored), stored);
    EXPECT_EQ(s.round_trip("set lasting 3 100000 2\r\nok\r\n", stored), stored);
    EXPECT_EQ(s.round_trip("set doomed 0 0 1\r\nd\r\n", stored), stored);
    EXPECT_EQ(s.round_trip("set doomed 9 -1 1\r\nD\r\n", stored), stored);
    EXPECT_EQ(s.round_trip("get doomed\r\n", "END\r\n"), "END\r\n");
    // cas works: the versions are logged and come back (checked below).
    ASSERT_TRUE(s.send("gets lasting\r\n"));
    const std::string lasting = s.read_available();
    ASSERT_EQ(lasting.rfind("VALUE lasting 3 2 ", 0), 0u) << lasting;
    lasting_cas = lasting.substr(18, lasting.find('\r') - 18);
    EXPECT_EQ(s.round_trip("cas user:2 0 0 1 1\r\nX\r\n", "EXISTS\r\n"), "EXISTS\r\n");
    // touch, gat and gats are logged as the items they rewrote: a restart
    // keeps their expiry (checked below), and a gats' version is the item's.
    EXPECT_EQ(s.round_trip("set expiring 0 0 1\r\ne\r\n", stored), stored);
    EXPECT_EQ(s.round_trip("touch expiring -1\r\n", "TOUCHED\r\n"), "TOUCHED\r\n");
    EXPECT_EQ(s.round_trip("get expiring\r\n", "END\r\n"), "END\r\n");
    EXPECT_EQ(s.round_trip("set touched 4 0 1\r\nt\r\n", stored), stored);
    const std::string gat = "VALUE touched 4 1\r\nt\r\nEND\r\n";
    EXPECT_EQ(s.round_trip("gat 100000 touched\r\n", gat), gat);
    ASSERT_TRUE(s.send("gats 100000 lasting\r\n"));
    const std::string gats = s.read_available();
    EXPECT_EQ(gats, "VALUE lasting 3 2 " + lasting_cas + "\r\nok\r\nEND\r\n") << "a touch keeps the version";
    EXPECT_EQ(s.round_trip("get user:2\r\n", seen), seen);
  }
  auto server = testing::start_server(o);
  ASSERT_NE(server, nullptr);
  MemcacheSocket s(server->memcached_port());
  ASSERT_TRUE(s.connected());
  const std::string want = "VALUE user:1 0 6\r\nalice!\r\nVALUE user:2 0 5\r\nbobby\r\nVALUE big 0 4000\r\n" + big +
                           "\r\nVALUE quiet 0 2\r\nhi\r\nVALUE hits 0 2\r\n42\r\nVALUE flagged 7 2\r\nF!\r\n"
                           "VALUE lasting 3 2\r\nok\r\nEND\r\n";
  EXPECT_EQ(s.round_trip("get user:1 user:2 big gone quiet hits flagged lasting doomed expiring\r\n", want), want);
  // The touched item came back with the expiry its touch gave it.
  ASSERT_TRUE(s.send("mg touched t f v\r\n"));
  const std::string touched = s.read_available();
  ASSERT_EQ(touched.rfind("VA 1 t", 0), 0u) << touched;
  const long long ttl = std::stoll(touched.substr(6));
  EXPECT_GT(ttl, 99000) << touched;
  EXPECT_LE(ttl, 100000) << touched;
  EXPECT_NE(touched.find(" f4\r\nt\r\n"), std::string::npos) << touched;
  // The item came back with its version: a cas with it still matches.
  const std::string lasting = "VALUE lasting 3 2 " + lasting_cas + "\r\nok\r\nEND\r\n";
  EXPECT_EQ(s.round_trip("gets lasting\r\n", lasting), lasting);
  EXPECT_EQ(s.round_trip("cas lasting 3 0 3 " + lasting_cas + "\r\nnew\r\n", "STORED\r\n"), "STORED\r\n");
  ASSERT_TRUE(s.send("gets lasting\r\n"));
  const std::string after = s.read_available();
  ASSERT_EQ(after.rfind("VALUE lasting 3 3 ", 0), 0u) << after;
  EXPECT_GT(std::stoull(after.substr(18)), std::stoull(lasting_cas)) << "versions go on increasing after a restart";
  server.reset();
  std::filesystem::remove_all(o.data_dir.dir);
}

// flush_all with --data_dir (issue 27): logged as a mark after the writes
// before it, and restated after every snapshot, so across restarts (a clean
// one writes a final snapshot) what it hid stays hidden, what came after it
// stays, and a delayed flush still pending comes due after the restart and
// hides what was written before its time, the restart's writes included.
// The store's clock is the test's.
TEST(MemcachedDurability, FlushAllOutlivesRestartsAtOnceAndDelayed) {
  std::atomic<uint32_t> now{1'800'000'000};
  server::ServerOptions o = testing::memcached_test_options(/*max_value_bytes=*/4096);
  o.cpu_partitions = 2;
  o.store.unix_clock = [&now] { return now.load(); };
  o.data_dir.dir = ::testing::TempDir() + "/memcached_flush_data_dir";
  std::filesystem::remove_all(o.data_dir.dir);
  const std::string stored = "STORED\r\n", ok = "OK\r\n";
  auto restarted = [&]() {
    auto server = testing::start_server(o);
    EXPECT_NE(server, nullptr);
    return server;
  };
  auto get = [](MemcacheSocket& s, const std::string& keys) {
    EXPECT_TRUE(s.send("get " + keys + "\r\n"));
    return s.read_available(std::chrono::milliseconds(300));
  };
  {
    auto server = restarted();
    ASSERT_NE(server, nullptr);
    MemcacheSocket s(server->memcached_port());
    EXPECT_EQ(s.round_trip("set old:1 0 0 1\r\na\r\n", stored), stored);
    EXPECT_EQ(s.round_trip("set old:2 0 0 1\r\nb\r\n", stored), stored);
    EXPECT_EQ(s.round_trip("flush_all\r\n", ok), ok);
    EXPECT_EQ(s.round_trip("set new:1 0 0 1\r\nc\r\n", stored), stored);
    EXPECT_EQ(get(s, "old:1 old:2 new:1"), "VALUE new:1 0 1\r\nc\r\nEND\r\n");
    // Delayed: due in 100 s by the store's clock.
    EXPECT_EQ(s.round_trip("flush_all 100\r\n", ok), ok);
    EXPECT_EQ(s.round_trip("set new:2 0 0 1\r\nd\r\n", stored), stored);
  }
  {
    auto server = restarted();
    ASSERT_NE(server, nullptr);
    MemcacheSocket s(server->memcached_port());
    EXPECT_EQ(get(s, "old:1 old:2 new:1 new:2"), "VALUE new:1 0 1\r\nc\r\nVALUE new:2 0 1\r\nd\r\nEND\r\n");
    EXPECT_EQ(s.round_trip("set new:3 0 0 1\r\ne\r\n", stored), stored);
    now += 100;  // the delayed flush comes due: everything written before it goes
    EXPECT_EQ(get(s, "new:1 new:2 new:3"), "END\r\n");
    EXPECT_EQ(s.round_trip("set late 0 0 1\r\nf\r\n", stored), stored);
  }
  auto server = restarted();
  ASSERT_NE(server, nullptr);
  MemcacheSocket s(server->memcached_port());
  EXPECT_EQ(get(s, "old:1 old:2 new:1 new:2 new:3 late"), "VALUE late 0 1\r\nf\r\nEND\r\n");
  EXPECT_EQ(s.round_trip("set after 0 0 1\r\ng\r\n", stored), stored);
  EXPECT_EQ(get(s, "late after"), "VALUE late 0 1\r\nf\r\nVALUE after 0 1\r\ng\r\nEND\r\n");
  server.reset();
  std::filesystem::remove_all(o.data_dir.dir);
}

}  // namespace
}  // namespace gphkv

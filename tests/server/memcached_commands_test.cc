// The memcached port over loopback, byte for byte on a raw socket: every
// command it serves, every command it refuses (and that a refusal changes
// nothing), bad input (the reply memcached sends, the connection kept or
// closed as memcached's would be), and byte keys that never alias uint64
// keys of the gRPC port.
#include <cstdlib>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/server/memcache_socket.h"
#include "tests/server/test_server.h"

namespace gphkv {
namespace {

using testing::MemcacheSocket;

server::ServerOptions memcached_options() { return testing::memcached_test_options(/*max_value_bytes=*/4096); }

class MemcachedCommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = testing::start_server(memcached_options());
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(server_->memcached_port(), 0);
    socket_ = std::make_unique<MemcacheSocket>(server_->memcached_port());
    ASSERT_TRUE(socket_->connected());
  }

  // Sends `request`, expects exactly `reply` and nothing after it.
  void expect(const std::string& request, const std::string& reply) {
    EXPECT_EQ(socket_->round_trip(request, reply), reply) << "request: " << request;
    EXPECT_EQ(socket_->read_available(std::chrono::milliseconds(50)), "") << "request: " << request;
  }

  std::unique_ptr<server::Server> server_;
  std::unique_ptr<MemcacheSocket> socket_;
};

TEST_F(MemcachedCommandsTest, SetGetDelete) {
  expect("get a\r\n", "END\r\n");
  expect("set a 0 0 5\r\nhello\r\n", "STORED\r\n");
  expect("get a\r\n", "VALUE a 0 5\r\nhello\r\nEND\r\n");
  expect("set a 0 0 3\r\nbye\r\n", "STORED\r\n");
  expect("get a\r\n", "VALUE a 0 3\r\nbye\r\nEND\r\n");
  expect("delete a\r\n", "DELETED\r\n");
  expect("delete a\r\n", "NOT_FOUND\r\n");
  expect("get a\r\n", "END\r\n");
  // The hold time old clients send.
  expect("set a 0 0 1\r\nx\r\n", "STORED\r\n");
  expect("delete a 0\r\n", "DELETED\r\n");
}

TEST_F(MemcachedCommandsTest, MultiGetInRequestOrderWithDuplicatesAndMisses) {
  expect("set k1 0 0 2\r\nv1\r\nset k2 0 0 2\r\nv2\r\n", "STORED\r\nSTORED\r\n");
  expect("get k2 nope k1 k2\r\n", "VALUE k2 0 2\r\nv2\r\nVALUE k1 0 2\r\nv1\r\nVALUE k2 0 2\r\nv2\r\nEND\r\n");
  // gets: each item's CAS version, never 0 (memcached_versions_test.cc holds them to their rules).
  ASSERT_TRUE(socket_->send("gets k1 k2\r\n"));
  const std::string got = socket_->read_available(std::chrono::milliseconds(300));
  EXPECT_EQ(got.rfind("VALUE k1 0 2 ", 0), 0u) << got;
  EXPECT_EQ(got.find(" 0\r\n"), std::string::npos) << got;
  EXPECT_NE(got.find("\r\nv1\r\nVALUE k2 0 2 "), std::string::npos) << got;
  EXPECT_EQ(got.substr(got.size() - 11), "\r\nv2\r\nEND\r\n") << got;
}

TEST_F(MemcachedCommandsTest, ValuesAreBytes) {
  const std::string value("a\r\nb\0c\r\n", 8);
  expect("set bin 0 0 8\r\n" + value + "\r\n", "STORED\r\n");
  expect("get bin\r\n", "VALUE bin 0 8\r\n" + value + "\r\nEND\r\n");
  expect("set empty 0 0 0\r\n\r\n", "STORED\r\n");
  expect("get empty\r\n", "VALUE empty 0 0\r\n\r\nEND\r\n");
  // The largest value the server takes (--max_value_bytes, 4096 here).
  const std::string big(4096, 'z');
  expect("set big 0 0 4096\r\n" + big + "\r\n", "STORED\r\n");
  expect("get big\r\n", "VALUE big 0 4096\r\n" + big + "\r\nEND\r\n");
}

TEST_F(MemcachedCommandsTest, NoreplySendsNothing) {
  expect("set q 0 0 1 noreply\r\nx\r\ndelete nothere noreply\r\nget q\r\n", "VALUE q 0 1\r\nx\r\nEND\r\n");
  expect("delete q noreply\r\nget q\r\n", "END\r\n");
  // Refusals and errors are silent too, and change nothing.
  expect("add q 0 0 1 noreply\r\ny\r\nadd q 0 0 1 noreply\r\nz\r\nincr q 1 noreply\r\nget q\r\n",
         "VALUE q 0 1\r\ny\r\nEND\r\n");
  expect("replace nothere 0 0 1 noreply\r\nz\r\nincr nothere 1 noreply\r\nget nothere\r\n", "END\r\n");
}

TEST_F(MemcachedCommandsTest, LocalCommands) {
  expect("version\r\n", "VERSION 1.6.0 gphkv-" GPHKV_TEST_VERSION "\r\n");
  expect("verbosity 1\r\n", "OK\r\n");
  expect("verbosity 1 noreply\r\nmn\r\n", "MN\r\n");
  socket_->send("stats\r\n");
  const std::string stats = socket_->read(4096, std::chrono::milliseconds(500));
  EXPECT_NE(stats.find("STAT curr_connections 1\r\n"), std::string::npos) << stats;
  EXPECT_NE(stats.find("STAT version "), std::string::npos) << stats;
  EXPECT_TRUE(stats.size() >= 5 && stats.compare(stats.size() - 5, 5, "END\r\n") == 0) << stats;
}

TEST_F(MemcachedCommandsTest, QuitClosesAfterEarlierReplies) {
  socket_->send("set a 0 0 1\r\nx\r\nget a\r\nquit\r\nget a\r\n");
  const std::string replies = "STORED\r\nVALUE a 0 1\r\nx\r\nEND\r\n";
  EXPECT_EQ(socket_->read(replies.size()), replies);
  EXPECT_TRUE(socket_->closed_by_peer());
}

TEST_F(MemcachedCommandsTest, RefusedCommandsChangeNothing) {
  expect("set have 0 0 3\r\nold\r\n", "STORED\r\n");
  // No item's CAS version is 0.
  expect("cas have 0 0 3 0\r\nnew\r\n", "EXISTS\r\n");
  // Refused by what is stored, or by a bad number: nothing changes.
  expect("add have 0 0 3\r\nnew\r\n", "NOT_STORED\r\n");
  expect("incr have 1\r\n", "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
  expect("decr have 1\r\n", "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
  expect("incr have -1\r\n", "CLIENT_ERROR invalid numeric delta argument\r\n");
  expect("incr have 18446744073709551616\r\n", "CLIENT_ERROR invalid numeric delta argument\r\n");
  expect("touch have x\r\n", "CLIENT_ERROR invalid exptime argument\r\n");
  expect("gat x have\r\n", "CLIENT_ERROR invalid exptime argument\r\n");
  expect("flush_all x\r\n", "CLIENT_ERROR invalid exptime argument\r\n");
  // The meta flags the store cannot serve (memcached_meta_test.cc has the rest).
  expect("mg have v N30\r\n", "SERVER_ERROR not supported yet (mg flags N R h l)\r\n");
  expect("ms have 3 c\r\nnew\r\n", "SERVER_ERROR not supported yet (ms flags c, I with C)\r\n");
  expect("md have I\r\n", "SERVER_ERROR not supported yet (md flag I)\r\n");
  expect("me have\r\n", "SERVER_ERROR not supported (me: memcached's debug command)\r\n");
  expect("stats items\r\n", "SERVER_ERROR not supported yet (stats with arguments)\r\n");
  // The store is as it was.
  expect("get have missing\r\n", "VALUE have 0 3\r\nold\r\nEND\r\n");
}

TEST_F(MemcachedCommandsTest, ConditionalWritesFollowMemcachedsRules) {
  expect("add k 0 0 1\r\na\r\n", "STORED\r\n");
  expect("add k 0 0 1\r\nb\r\n", "NOT_STORED\r\n");
  expect("replace none 0 0 1\r\nb\r\n", "NOT_STORED\r\n");
  expect("append none 0 0 1\r\nb\r\n", "NOT_STORED\r\n");
  expect("prepend none 0 0 1\r\nb\r\n", "NOT_STORED\r\n");
  expect("get k none\r\n", "VALUE k 0 1\r\na\r\nEND\r\n");
  expect("replace k 0 0 2\r\nbc\r\n", "STORED\r\n");
  expect("append k 0 0 1\r\nd\r\n", "STORED\r\n");
  expect("prepend k 0 0 1\r\nz\r\n", "STORED\r\n");
  // append and prepend ignore their flags and exptime, as memcached's do.
  expect("append k 7 100 2\r\n\r\n\r\n", "STORED\r\n");
  expect("get k\r\n", "VALUE k 0 6\r\nzbcd\r\n\r\nEND\r\n");
  expect("add none 0 0 0 noreply\r\n\r\nget none\r\n", "VALUE none 0 0\r\n\r\nEND\r\n");

  expect("incr counter 1\r\n", "NOT_FOUND\r\n");
  expect("decr counter 1\r\n", "NOT_FOUND\r\n");
  expect("set counter 0 0 2\r\n10\r\n", "STORED\r\n");
  expect("incr counter 5\r\n", "15\r\n");
  expect("decr counter 100\r\n", "0\r\n");  // decr stops at 0
  expect("set counter 0 0 20\r\n18446744073709551615\r\n", "STORED\r\n");
  expect("incr counter 2\r\n", "1\r\n");  // incr wraps at 2^64
  expect("incr counter 1 noreply\r\nget counter\r\n", "VALUE counter 0 1\r\n2\r\nEND\r\n");
  // memcached pads a shrunk number with spaces; such a value still counts.
  expect("set counter 0 0 4\r\n99  \r\n", "STORED\r\n");
  expect("incr counter 1\r\n", "100\r\n");
  // Past 2^64 - 1, or not digits alone: not a number.
  expect("set counter 0 0 20\r\n18446744073709551616\r\n", "STORED\r\n");
  expect("incr counter 1\r\n", "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
  expect("set counter 0 0 3\r\n+12\r\n", "STORED\r\n");
  expect("decr counter 1\r\n", "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
  expect("get counter\r\n", "VALUE counter 0 3\r\n+12\r\nEND\r\n");
}

TEST_F(MemcachedCommandsTest, GarbageKeepsTheConnection) {
  expect("set keep 0 0 1\r\nk\r\n", "STORED\r\n");
  expect("bogus command\r\n", "ERROR\r\n");
  expect("\r\n", "ERROR\r\n");
  expect("GET keep\r\n", "ERROR\r\n");
  expect("set keep 0 0 notanumber\r\n", "CLIENT_ERROR bad command line format\r\n");
  expect("set keep 0 0\r\n", "CLIENT_ERROR bad command line format\r\n");
  expect("get\r\n", "CLIENT_ERROR bad command line format\r\n");
  expect("delete keep 5\r\n", "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n");
  expect("incr keep x\r\n", "CLIENT_ERROR invalid numeric delta argument\r\n");
  // A data block longer than its <bytes>: <bytes> + 2 bytes are dropped and
  // what follows is read as commands, as memcached does (here an empty line).
  expect("set keep 0 0 1\r\nxyz\r\n", "CLIENT_ERROR bad data chunk\r\nERROR\r\n");
  // A key over 250 bytes.
  expect("get " + std::string(251, 'k') + "\r\n", "CLIENT_ERROR bad command line format\r\n");
  expect("set " + std::string(251, 'k') + " 0 0 1\r\nx\r\n", "CLIENT_ERROR bad command line format\r\n");
  // A value over --max_value_bytes: refused, its data block skipped.
  expect("set keep 0 0 4097\r\n" + std::string(4097, 'v') + "\r\n", "SERVER_ERROR object too large for cache\r\n");
  // After all that, the connection works and the value is the first one.
  expect("get keep\r\n", "VALUE keep 0 1\r\nk\r\nEND\r\n");
  // A 250-byte key is fine.
  const std::string longest(250, 'k');
  expect("set " + longest + " 0 0 1\r\nx\r\n", "STORED\r\n");
  expect("get " + longest + "\r\n", "VALUE " + longest + " 0 1\r\nx\r\nEND\r\n");
}

TEST_F(MemcachedCommandsTest, LineTooLongCloses) {
  socket_->send("set " + std::string(3000, 'x'));
  const std::string refusal = "CLIENT_ERROR line too long\r\n";
  EXPECT_EQ(socket_->read(refusal.size()), refusal);
  EXPECT_TRUE(socket_->closed_by_peer());
  // The server goes on serving others.
  MemcacheSocket other(server_->memcached_port());
  EXPECT_EQ(other.round_trip("version\r\n", "VERSION 1.6.0 gphkv-" GPHKV_TEST_VERSION "\r\n"),
            "VERSION 1.6.0 gphkv-" GPHKV_TEST_VERSION "\r\n");
}

TEST_F(MemcachedCommandsTest, ByteKeysNeverAliasUint64Keys) {
  auto client = testing::connect(*server_);
  // A memcached key "42" and the uint64 key 42 are two keys.
  expect("set 42 0 0 5\r\nbytes\r\n", "STORED\r\n");
  const uint64_t key = 42;
  auto got = client->Get(absl::MakeConstSpan(&key, 1));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_FALSE(got->found(0));
  const std::string_view value = "u64";
  ASSERT_TRUE(client->Put(absl::MakeConstSpan(&key, 1), absl::MakeConstSpan(&value, 1)).ok());
  expect("get 42\r\n", "VALUE 42 0 5\r\nbytes\r\nEND\r\n");
  // A byte key written over gRPC is the memcached key of the same bytes.
  const std::string_view byte_key = "user:7";
  const std::string_view byte_value = "from grpc";
  ASSERT_TRUE(client->Put(absl::MakeConstSpan(&byte_key, 1), absl::MakeConstSpan(&byte_value, 1)).ok());
  expect("get user:7\r\n", "VALUE user:7 0 9\r\nfrom grpc\r\nEND\r\n");
  expect("delete user:7\r\n", "DELETED\r\n");
  auto after = client->Get(absl::MakeConstSpan(&byte_key, 1));
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_FALSE(after->found(0));
}

TEST(MemcachedPortTest, OffByDefault) {
  auto server = testing::start_server(testing::test_options());
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(server->memcached_port(), 0);
}

TEST(MemcachedPortTest, BadAddressStopsTheStart) {
  server::ServerOptions o = memcached_options();
  o.memcached.address = "not-an-address";
  testing::keep_grpc_initialized();
  auto server = server::Server::start(o);
  ASSERT_FALSE(server.ok());
  EXPECT_NE(server.status().message().find("--memcached_address"), std::string::npos) << server.status();
}

// The value of one series in a /metrics page ("name{labels}" exactly as
// prometheus-cpp writes it), -1 when the page has no such line.
double series(const std::string& page, const std::string& name) {
  const std::string line = "\n" + name + " ";
  const size_t at = page.find(line);
  if (at == std::string::npos) return -1;
  return std::strtod(page.c_str() + at + line.size(), nullptr);
}

// The port's Prometheus series (docs/service.md, "Metrics"): its commands by
// kind, the keys gets asked for, its connections, the calls it queued to the
// store and the gets that went in packs; a server without the port has none.
TEST_F(MemcachedCommandsTest, TheMetricsCountThePortsCommands) {
  expect("set a 0 0 1\r\nx\r\n", "STORED\r\n");
  expect("get a b\r\n", "VALUE a 0 1\r\nx\r\nEND\r\n");
  expect("get a\r\nget b\r\n", "VALUE a 0 1\r\nx\r\nEND\r\nEND\r\n");
  expect("mn\r\n", "MN\r\n");
  expect("bogus\r\n", "ERROR\r\n");
  // A refused ms is a command parsed, not a set stored: the metrics count it,
  // stats' cmd_set does not; a line that does not parse counts nowhere.
  expect("ms a 1 c\r\nx\r\n", "SERVER_ERROR not supported yet (ms flags c, I with C)\r\n");
  expect("ms a 1 Z\r\nx\r\n", "CLIENT_ERROR invalid flag\r\n");
  ASSERT_TRUE(socket_->send("stats\r\n"));
  std::string stats;
  while (stats.find("END\r\n") == std::string::npos) {
    const std::string more = socket_->read_available(std::chrono::milliseconds(200));
    if (more.empty()) break;
    stats += more;
  }
  EXPECT_NE(stats.find("STAT cmd_set 1\r\n"), std::string::npos) << stats;
  const std::string page = server_->render_metrics();
  EXPECT_EQ(series(page, "gphkv_memcached_commands_total{command=\"get\"}"), 3) << page;
  EXPECT_EQ(series(page, "gphkv_memcached_commands_total{command=\"set\"}"), 1);
  EXPECT_EQ(series(page, "gphkv_memcached_commands_total{command=\"mn\"}"), 1);
  EXPECT_EQ(series(page, "gphkv_memcached_commands_total{command=\"ms\"}"), 1);
  EXPECT_EQ(series(page, "gphkv_memcached_commands_total{command=\"stats\"}"), 1);
  EXPECT_EQ(series(page, "gphkv_memcached_commands_total{command=\"delete\"}"), 0);
  EXPECT_EQ(series(page, "gphkv_memcached_get_keys_total"), 4);
  EXPECT_EQ(series(page, "gphkv_memcached_connections"), 1);
  EXPECT_EQ(series(page, "gphkv_memcached_connections_accepted_total"), 1);
  EXPECT_EQ(series(page, "gphkv_memcached_connections_rejected_total"), 0);
  // The set alone; the gets in packs (the two pipelined ones in one pack,
  // unless their bytes came in two reads).
  EXPECT_EQ(series(page, "gphkv_memcached_packed_gets_total"), 3);
  const double calls = series(page, "gphkv_memcached_store_calls_total");
  EXPECT_TRUE(calls == 3 || calls == 4) << calls;
  // Counters only move forward, from where the last scrape left them.
  expect("get a\r\n", "VALUE a 0 1\r\nx\r\nEND\r\n");
  EXPECT_EQ(series(server_->render_metrics(), "gphkv_memcached_commands_total{command=\"get\"}"), 4);

  auto plain = testing::start_server(testing::test_options());
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(plain->render_metrics().find("gphkv_memcached_"), std::string::npos);
}

}  // namespace
}  // namespace gphkv

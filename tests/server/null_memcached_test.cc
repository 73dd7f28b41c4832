// The null server's memcached target (bench/null_memcached.h): gphkv's
// listener over no table. Every get key is found with its fixed value (8 to
// 158 bytes by the key), in request order; sets are stored and deletes find
// nothing, and nothing is kept: the transport alone, for the comparisons.
#include <string>

#include "absl/strings/str_cat.h"
#include "bench/null_memcached.h"
#include "gtest/gtest.h"
#include "server/byte_key.h"
#include "server/memcache/listener.h"
#include "tests/server/memcache_socket.h"

namespace gphkv {
namespace {

using bench::NullMemcachedSink;

std::string value_line(const std::string& key, bool with_cas) {
  const uint32_t n = NullMemcachedSink::value_bytes(server::byte_key::table_key(key));
  EXPECT_GE(n, NullMemcachedSink::kMinValueBytes);
  EXPECT_LE(n, NullMemcachedSink::kMaxValueBytes);
  return absl::StrCat("VALUE ", key, " 0 ", n, with_cas ? " 0" : "", "\r\n", std::string(n, 'v'), "\r\n");
}

TEST(NullMemcachedTest, AnswersFromAFixedValueSetAndKeepsNothing) {
  NullMemcachedSink sink;
  server::memcache::ListenerOptions o;
  o.address = "127.0.0.1:0";
  o.threads = 2;
  auto l = server::memcache::Listener::start(&sink, o);
  ASSERT_TRUE(l.ok()) << l.status();
  testing::MemcacheSocket s((*l)->port());
  const std::string keys[] = {"a", "user:42", "a", std::string(250, 'k')};
  std::string request = "get";
  std::string expected;
  for (const std::string& k : keys) {
    absl::StrAppend(&request, " ", k);
    expected += value_line(k, false);
  }
  request += "\r\n";
  expected += "END\r\n";
  // Twice: the same values each time (nothing is stored or changed).
  for (int i = 0; i < 2; ++i) ASSERT_EQ(s.round_trip(request, expected), expected);
  const std::string sets = "set a 0 0 3\r\nxyz\r\ndelete a\r\ngets a\r\n";
  const std::string replies = "STORED\r\nNOT_FOUND\r\n" + value_line("a", true) + "END\r\n";
  EXPECT_EQ(s.round_trip(sets, replies), replies);
  // Lengths differ by key (the spread of the default workload's associations).
  EXPECT_NE(NullMemcachedSink::value_bytes(server::byte_key::table_key("a")),
            NullMemcachedSink::value_bytes(server::byte_key::table_key("user:42")));
  // Bad input gets the listener's own answers.
  EXPECT_EQ(s.round_trip("bogus\r\n", "ERROR\r\n"), "ERROR\r\n");
}

}  // namespace
}  // namespace gphkv

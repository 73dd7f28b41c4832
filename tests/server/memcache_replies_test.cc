#include "server/memcache/replies.h"

#include <string>

#include "gtest/gtest.h"

namespace gphkv::server::memcache {
namespace {

TEST(MemcacheReplies, OneWordReplies) {
  std::string out;
  for (Reply r : {Reply::kStored, Reply::kNotStored, Reply::kExists, Reply::kNotFound, Reply::kDeleted, Reply::kTouched,
                  Reply::kOk, Reply::kEnd, Reply::kError}) {
    append_reply(&out, r);
  }
  EXPECT_EQ(out, "STORED\r\nNOT_STORED\r\nEXISTS\r\nNOT_FOUND\r\nDELETED\r\nTOUCHED\r\nOK\r\nEND\r\nERROR\r\n");
}

TEST(MemcacheReplies, ValueLines) {
  std::string out;
  append_value(&out, "k1", 0, "hello");
  append_value(&out, "k2", 4294967295u, "", 18446744073709551615ull);
  append_value(&out, "k3", 7, std::string("a\r\n\0b", 5), 12);
  append_reply(&out, Reply::kEnd);
  constexpr char kExpected[] =
      "VALUE k1 0 5\r\nhello\r\n"
      "VALUE k2 4294967295 0 18446744073709551615\r\n\r\n"
      "VALUE k3 7 5 12\r\na\r\n\0b\r\n"
      "END\r\n";
  EXPECT_EQ(out, std::string(kExpected, sizeof(kExpected) - 1));
}

TEST(MemcacheReplies, NumbersVersionErrorsStats) {
  std::string out;
  append_number(&out, 0);
  append_number(&out, 18446744073709551615ull);
  append_version(&out, "1.6.0-gphkv");
  append_client_error(&out, "bad command line format");
  append_server_error(&out, "object too large for cache");
  append_error(&out, ParseError{ErrorKind::kError, {}});
  append_error(&out, ParseError{ErrorKind::kClientError, "bad data chunk"});
  append_error(&out, ParseError{ErrorKind::kServerError, "out of memory"});
  append_stat(&out, "pid", 42);
  append_stat(&out, "version", "1.6.0");
  append_reply(&out, Reply::kEnd);
  EXPECT_EQ(out,
            "0\r\n18446744073709551615\r\nVERSION 1.6.0-gphkv\r\nCLIENT_ERROR bad command line format\r\n"
            "SERVER_ERROR object too large for cache\r\nERROR\r\nCLIENT_ERROR bad data chunk\r\n"
            "SERVER_ERROR out of memory\r\nSTAT pid 42\r\nSTAT version 1.6.0\r\nEND\r\n");
}

TEST(MemcacheReplies, MetaStatuses) {
  std::string out;
  MetaReply(&out, MetaStatus::kHeader).end();
  MetaReply(&out, MetaStatus::kMiss).end();
  MetaReply(&out, MetaStatus::kNotFound).end();
  MetaReply(&out, MetaStatus::kNotStored).end();
  MetaReply(&out, MetaStatus::kExists).end();
  MetaReply(&out, MetaStatus::kNoop).end();
  EXPECT_EQ(out, "HD\r\nEN\r\nNF\r\nNS\r\nEX\r\nMN\r\n");
}

TEST(MemcacheReplies, MetaFlagsInTheOrderAdded) {
  std::string out;
  MetaReply::value(&out, 5).key("foo").opaque("x1").cas(99).client_flags(3).size(5).ttl(-1).end("hello");
  EXPECT_EQ(out, "VA 5 kfoo Ox1 c99 f3 s5 t-1\r\nhello\r\n");

  out.clear();
  MetaReply::value(&out, 0).end();
  EXPECT_EQ(out, "VA 0\r\n\r\n");

  out.clear();
  MetaReply(&out, MetaStatus::kHeader).key("Zm9v").base64_key().ttl(30).flag('h', 1).flag('W').end();
  EXPECT_EQ(out, "HD kZm9v b t30 h1 W\r\n");

  out.clear();
  MetaReply(&out, MetaStatus::kMiss).opaque("abc").key("k").end();
  EXPECT_EQ(out, "EN Oabc kk\r\n");
}

}  // namespace
}  // namespace gphkv::server::memcache

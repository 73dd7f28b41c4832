#include "server/memcache/parser.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <iostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace gphkv::server::memcache {
namespace {

// A parsed command copied out of the parser's buffer, to compare and print.
struct OwnedCommand {
  CommandKind kind = CommandKind::kVersion;
  std::vector<std::string> keys;
  uint32_t client_flags = 0;
  int32_t exptime = 0;
  uint64_t cas_unique = 0;
  uint64_t delta = 0;
  uint32_t level = 0;
  std::string value;
  std::vector<std::string> stats_args;
  std::vector<std::pair<char, std::string>> meta_flags;
  bool base64_key = false;

  bool operator==(const OwnedCommand& o) const {
    return kind == o.kind && keys == o.keys && client_flags == o.client_flags && exptime == o.exptime &&
           cas_unique == o.cas_unique && delta == o.delta && level == o.level && value == o.value &&
           stats_args == o.stats_args && meta_flags == o.meta_flags && base64_key == o.base64_key;
  }
};

OwnedCommand own(const Command& c) {
  OwnedCommand o;
  o.kind = c.kind;
  for (std::string_view k : c.keys) o.keys.emplace_back(k);
  o.client_flags = c.client_flags;
  o.exptime = c.exptime;
  o.cas_unique = c.cas_unique;
  o.delta = c.delta;
  o.level = c.level;
  o.value = std::string(c.value);
  for (std::string_view a : c.stats_args) o.stats_args.emplace_back(a);
  for (const MetaFlag& f : c.meta_flags) o.meta_flags.emplace_back(f.letter, std::string(f.argument));
  o.base64_key = c.base64_key;
  return o;
}

// What the connection loop sees of one parse that did not ask for more.
struct Event {
  ParseStatus status = ParseStatus::kCommand;
  OwnedCommand command;  // kCommand
  ErrorKind error_kind = ErrorKind::kError;
  std::string error_message;
  bool noreply = false;
  bool close = false;

  bool operator==(const Event& o) const {
    return status == o.status && (status != ParseStatus::kCommand || command == o.command) &&
           (status != ParseStatus::kError || (error_kind == o.error_kind && error_message == o.error_message)) &&
           noreply == o.noreply && close == o.close;
  }
};

std::ostream& operator<<(std::ostream& os, const Event& e) {
  if (e.status == ParseStatus::kError) {
    os << "error " << static_cast<int>(e.error_kind) << " '" << e.error_message << "'";
  } else {
    os << "command " << static_cast<int>(e.command.kind) << " keys=" << e.command.keys.size()
       << " value=" << e.command.value.size() << "B";
  }
  return os << (e.noreply ? " noreply" : "") << (e.close ? " close" : "");
}

Event event_of(const ParseResult& r, const Command& c) {
  Event e;
  e.status = r.status;
  if (r.status == ParseStatus::kCommand) e.command = own(c);
  e.error_kind = r.error.kind;
  e.error_message = std::string(r.error.message);
  e.noreply = r.noreply;
  e.close = r.close_connection;
  return e;
}

// Feeds `stream` in chunks ending at `cuts` (sorted offsets) the way a
// connection loop would: append what arrived, parse until the parser wants
// more, drop what it consumed. Stops at a close.
std::vector<Event> feed(std::string_view stream, const std::vector<size_t>& cuts, ParserLimits limits = {}) {
  Parser parser(limits);
  Command command;
  std::string buffer;
  std::vector<Event> events;
  size_t from = 0;
  std::vector<size_t> ends = cuts;
  ends.push_back(stream.size());
  for (size_t end : ends) {
    buffer.append(stream.substr(from, end - from));
    from = end;
    for (;;) {
      ParseResult r = parser.parse(buffer, &command);
      EXPECT_LE(r.consumed, buffer.size());
      if (r.status != ParseStatus::kNeedMore) events.push_back(event_of(r, command));
      buffer.erase(0, r.consumed);
      if (r.status == ParseStatus::kNeedMore) break;
      if (r.close_connection) return events;
    }
  }
  return events;
}

std::vector<Event> feed_whole(std::string_view stream, ParserLimits limits = {}) { return feed(stream, {}, limits); }

std::vector<Event> feed_bytewise(std::string_view stream, ParserLimits limits = {}) {
  std::vector<size_t> cuts;
  for (size_t i = 1; i < stream.size(); ++i) cuts.push_back(i);
  return feed(stream, cuts, limits);
}

// The one event a whole stream gives; checks that it gives exactly one, and
// the same one fed a byte at a time.
Event one(std::string_view stream, ParserLimits limits = {}) {
  std::vector<Event> whole = feed_whole(stream, limits);
  EXPECT_EQ(whole.size(), 1u) << "stream: " << stream;
  EXPECT_EQ(feed_bytewise(stream, limits), whole) << "stream: " << stream;
  return whole.empty() ? Event{} : whole.front();
}

OwnedCommand command_of(std::string_view stream) {
  Event e = one(stream);
  EXPECT_EQ(e.status, ParseStatus::kCommand) << "stream: " << stream << " gave " << e;
  return e.command;
}

void expect_error(std::string_view stream, ErrorKind kind, std::string_view message) {
  Event e = one(stream);
  EXPECT_EQ(e.status, ParseStatus::kError) << "stream: " << stream;
  EXPECT_EQ(e.error_kind, kind) << "stream: " << stream;
  EXPECT_EQ(e.error_message, message) << "stream: " << stream;
}

void expect_bad_format(std::string_view stream) {
  expect_error(stream, ErrorKind::kClientError, "bad command line format");
}

TEST(MemcacheParser, GetFamily) {
  OwnedCommand c = command_of("get a\r\n");
  EXPECT_EQ(c.kind, CommandKind::kGet);
  EXPECT_EQ(c.keys, (std::vector<std::string>{"a"}));

  c = command_of("gets a bb ccc\r\n");
  EXPECT_EQ(c.kind, CommandKind::kGets);
  EXPECT_EQ(c.keys, (std::vector<std::string>{"a", "bb", "ccc"}));

  c = command_of("gat 30 a b\r\n");
  EXPECT_EQ(c.kind, CommandKind::kGat);
  EXPECT_EQ(c.exptime, 30);
  EXPECT_EQ(c.keys, (std::vector<std::string>{"a", "b"}));

  c = command_of("gats -1 k\r\n");
  EXPECT_EQ(c.kind, CommandKind::kGats);
  EXPECT_EQ(c.exptime, -1);
  EXPECT_EQ(c.keys, (std::vector<std::string>{"k"}));

  // Bare '\n', runs of spaces, and "noreply" is only a key here.
  c = command_of("get  a   noreply \n");
  EXPECT_EQ(c.keys, (std::vector<std::string>{"a", "noreply"}));

  std::string many = "get";
  std::vector<std::string> keys;
  for (int i = 0; i < 500; ++i) {
    keys.push_back("key:" + std::to_string(i));
    many += " " + keys.back();
  }
  c = command_of(many + "\r\n");
  EXPECT_EQ(c.keys, keys);
}

TEST(MemcacheParser, GetFamilyMalformed) {
  expect_bad_format("get\r\n");
  expect_bad_format("get \r\n");
  expect_bad_format("gets\r\n");
  expect_bad_format("gat 10\r\n");
  expect_error("gat\r\n", ErrorKind::kClientError, "bad command line format");
  expect_error("gat x k\r\n", ErrorKind::kClientError, "invalid exptime argument");
  expect_error("gats 99999999999 k\r\n", ErrorKind::kClientError, "invalid exptime argument");
  expect_bad_format("get " + std::string(251, 'k') + "\r\n");
  EXPECT_EQ(command_of("get " + std::string(250, 'k') + "\r\n").keys.front().size(), 250u);
  expect_bad_format("get a\x01z\r\n");
  expect_bad_format("get a\tb\r\n");
  expect_bad_format("get a\x7f\r\n");
  // A '\r' that is not the line's last byte is part of the key: refused.
  expect_bad_format("get a\rb\r\n");
}

TEST(MemcacheParser, StorageCommands) {
  const std::pair<const char*, CommandKind> kinds[] = {{"set", CommandKind::kSet},
                                                       {"add", CommandKind::kAdd},
                                                       {"replace", CommandKind::kReplace},
                                                       {"append", CommandKind::kAppend},
                                                       {"prepend", CommandKind::kPrepend}};
  for (const auto& [name, kind] : kinds) {
    Event e = one(std::string(name) + " key 42 -5 5\r\nhello\r\n");
    ASSERT_EQ(e.status, ParseStatus::kCommand) << name;
    EXPECT_EQ(e.command.kind, kind);
    EXPECT_EQ(e.command.keys, (std::vector<std::string>{"key"}));
    EXPECT_EQ(e.command.client_flags, 42u);
    EXPECT_EQ(e.command.exptime, -5);  // negative: expired at once, as memcached takes it
    EXPECT_EQ(e.command.value, "hello");
    EXPECT_FALSE(e.noreply);
  }
  Event e = one("cas k 4294967295 0 3 18446744073709551615 noreply\r\na\r\n\r\n");
  ASSERT_EQ(e.status, ParseStatus::kCommand);
  EXPECT_EQ(e.command.kind, CommandKind::kCas);
  EXPECT_EQ(e.command.client_flags, 4294967295u);
  EXPECT_EQ(e.command.cas_unique, 18446744073709551615ull);
  EXPECT_EQ(e.command.value, "a\r\n");
  EXPECT_TRUE(e.noreply);

  e = one("set k 0 0 0 noreply\n\r\n");
  ASSERT_EQ(e.status, ParseStatus::kCommand);
  EXPECT_EQ(e.command.value, "");
  EXPECT_TRUE(e.noreply);
}

TEST(MemcacheParser, StorageMalformed) {
  // Without a usable length the data block cannot be found: only the line
  // goes, and the data that follows is read as a line of its own.
  expect_bad_format("set k 0 0\r\n");
  expect_bad_format("set k 0 0 -1\r\n");
  expect_bad_format("set k 0 0 x\r\n");
  expect_bad_format("set k 0 0 2147483647\r\n");
  expect_bad_format("set\r\n");
  std::vector<Event> events = feed_whole("set k 0 0 abc\r\nhello\r\n");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].error_message, "bad command line format");
  EXPECT_EQ(events[1].error_kind, ErrorKind::kError);  // "hello" is no command

  // With a length, the data block goes with the refused line.
  for (const char* line : {"set k -1 0 5", "set k x 0 5", "set k 4294967296 0 5", "set k 0 x 5", "set k 0 0 5 6",
                           "set k 0 0 5 noreply extra", "cas k 0 0 5", "cas k 0 0 5 -1", "cas k 0 0 5 x noreply",
                           "cas k 0 0 5 1 2", "set k\x01 0 0 5"}) {
    std::string stream = std::string(line) + "\r\nhello\r\nversion\r\n";
    std::vector<Event> whole = feed_whole(stream);
    ASSERT_EQ(whole.size(), 2u) << line;
    EXPECT_EQ(whole[0].status, ParseStatus::kError) << line;
    EXPECT_EQ(whole[0].error_message, "bad command line format") << line;
    EXPECT_EQ(whole[1].command.kind, CommandKind::kVersion) << line;
    EXPECT_EQ(feed_bytewise(stream), whole) << line;
  }
  std::string too_long_key = "set " + std::string(251, 'k') + " 0 0 1\r\nx\r\n";
  expect_bad_format(too_long_key);
}

TEST(MemcacheParser, BadDataChunk) {
  // Exactly <bytes> + 2 go, and they must end in "\r\n" (a bare '\n' ends
  // the line, not the data).
  std::vector<Event> events = feed_whole("set k 0 0 3\r\nabcd\r\nversion\r\n");
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].error_kind, ErrorKind::kClientError);
  EXPECT_EQ(events[0].error_message, "bad data chunk");
  EXPECT_EQ(events[1].error_kind, ErrorKind::kError);  // the "\n" left over
  EXPECT_EQ(events[2].command.kind, CommandKind::kVersion);
  EXPECT_EQ(feed_bytewise("set k 0 0 3\r\nabcd\r\nversion\r\n"), events);
  expect_error("set k 0 0 3\r\nabc\n\n", ErrorKind::kClientError, "bad data chunk");
  expect_error("ms k 3\r\nabcXY", ErrorKind::kClientError, "bad data chunk");
}

TEST(MemcacheParser, TooLargeValueIsSkippedAcrossFeeds) {
  ParserLimits limits;
  limits.max_value_length = 10;
  const std::string stream = "set k 0 0 20 noreply\r\n" + std::string(20, 'v') + "\r\nget a\r\n";
  Parser parser(limits);
  Command command;
  // The line and 4 bytes of its block.
  const size_t line = std::string("set k 0 0 20 noreply\r\n").size();
  ParseResult r = parser.parse(std::string_view(stream).substr(0, line + 4), &command);
  ASSERT_EQ(r.status, ParseStatus::kError);
  EXPECT_EQ(r.error.kind, ErrorKind::kServerError);
  EXPECT_EQ(r.error.message, "object too large for cache");
  EXPECT_TRUE(r.noreply);
  EXPECT_EQ(r.consumed, line + 4);
  EXPECT_EQ(r.skip_remaining, 18u);
  EXPECT_EQ(parser.skip_remaining(), 18u);
  // 10 more: skipped, nothing else.
  r = parser.parse(std::string_view(stream).substr(line + 4, 10), &command);
  EXPECT_EQ(r.status, ParseStatus::kNeedMore);
  EXPECT_EQ(r.consumed, 10u);
  EXPECT_EQ(r.skip_remaining, 8u);
  // The rest of the block and the next command in one feed.
  r = parser.parse(std::string_view(stream).substr(line + 14), &command);
  ASSERT_EQ(r.status, ParseStatus::kCommand);
  EXPECT_EQ(command.kind, CommandKind::kGet);
  EXPECT_EQ(r.consumed, stream.size() - line - 14);
  EXPECT_EQ(parser.skip_remaining(), 0u);

  // Every split of the same stream gives the same two events; a value at the
  // limit is taken.
  std::vector<Event> whole = feed_whole(stream, limits);
  ASSERT_EQ(whole.size(), 2u);
  EXPECT_EQ(feed_bytewise(stream, limits), whole);
  EXPECT_EQ(one("set k 0 0 10\r\n0123456789\r\n", limits).status, ParseStatus::kCommand);
  std::vector<Event> meta = feed_whole("ms k 11 T0\r\n01234567890\r\nmn\r\n", limits);
  ASSERT_EQ(meta.size(), 2u);
  EXPECT_EQ(meta[0].error_message, "object too large for cache");
  EXPECT_EQ(meta[1].command.kind, CommandKind::kMetaNoop);
}

TEST(MemcacheParser, Delete) {
  Event e = one("delete k\r\n");
  EXPECT_EQ(e.command.kind, CommandKind::kDelete);
  EXPECT_EQ(e.command.keys, (std::vector<std::string>{"k"}));
  EXPECT_FALSE(e.noreply);
  EXPECT_TRUE(one("delete k noreply\r\n").noreply);
  // The legacy hold time, 0 only.
  EXPECT_EQ(one("delete k 0\r\n").status, ParseStatus::kCommand);
  e = one("delete k 0 noreply\r\n");
  EXPECT_EQ(e.status, ParseStatus::kCommand);
  EXPECT_TRUE(e.noreply);
  expect_error("delete k 1\r\n", ErrorKind::kClientError, "bad command line format.  Usage: delete <key> [noreply]");
  expect_error("delete k 0 0\r\n", ErrorKind::kClientError, "bad command line format.  Usage: delete <key> [noreply]");
  expect_bad_format("delete\r\n");
  expect_bad_format("delete " + std::string(251, 'k') + "\r\n");
}

TEST(MemcacheParser, IncrDecr) {
  Event e = one("incr k 18446744073709551615\r\n");
  EXPECT_EQ(e.command.kind, CommandKind::kIncr);
  EXPECT_EQ(e.command.delta, 18446744073709551615ull);
  e = one("decr k 7 noreply\r\n");
  EXPECT_EQ(e.command.kind, CommandKind::kDecr);
  EXPECT_EQ(e.command.delta, 7u);
  EXPECT_TRUE(e.noreply);
  for (const char* bad : {"incr k 18446744073709551616\r\n", "incr k -1\r\n", "decr k x\r\n", "incr k +1\r\n"}) {
    expect_error(bad, ErrorKind::kClientError, "invalid numeric delta argument");
  }
  expect_bad_format("incr k\r\n");
  expect_bad_format("incr k 1 2\r\n");
  expect_bad_format("decr\r\n");
}

TEST(MemcacheParser, TouchFlushVersionVerbosityStatsQuit) {
  Event e = one("touch k -1 noreply\r\n");
  EXPECT_EQ(e.command.kind, CommandKind::kTouch);
  EXPECT_EQ(e.command.exptime, -1);
  EXPECT_TRUE(e.noreply);
  expect_error("touch k x\r\n", ErrorKind::kClientError, "invalid exptime argument");
  expect_bad_format("touch k\r\n");
  expect_bad_format("touch k 1 2\r\n");

  EXPECT_EQ(command_of("flush_all\r\n").kind, CommandKind::kFlushAll);
  EXPECT_EQ(command_of("flush_all 60\r\n").exptime, 60);
  e = one("flush_all 60 noreply\r\n");
  EXPECT_EQ(e.command.exptime, 60);
  EXPECT_TRUE(e.noreply);
  EXPECT_TRUE(one("flush_all noreply\r\n").noreply);
  expect_error("flush_all soon\r\n", ErrorKind::kClientError, "invalid exptime argument");
  expect_bad_format("flush_all 1 2\r\n");

  EXPECT_EQ(command_of("version\r\n").kind, CommandKind::kVersion);
  EXPECT_EQ(command_of("verbosity 2\r\n").level, 2u);
  EXPECT_TRUE(one("verbosity 1 noreply\r\n").noreply);
  expect_bad_format("verbosity\r\n");
  expect_bad_format("verbosity -1\r\n");
  expect_bad_format("verbosity 1 2\r\n");

  OwnedCommand c = command_of("stats\r\n");
  EXPECT_EQ(c.kind, CommandKind::kStats);
  EXPECT_TRUE(c.stats_args.empty());
  c = command_of("stats slabs x\r\n");
  EXPECT_EQ(c.stats_args, (std::vector<std::string>{"slabs", "x"}));

  e = one("quit\r\n");
  EXPECT_EQ(e.command.kind, CommandKind::kQuit);
  EXPECT_TRUE(e.close);
  // Nothing after quit is read.
  EXPECT_EQ(feed_whole("quit\r\nversion\r\n").size(), 1u);
}

TEST(MemcacheParser, MetaCommands) {
  OwnedCommand c = command_of("mg key v f t k s c Oab12 q\r\n");
  EXPECT_EQ(c.kind, CommandKind::kMetaGet);
  EXPECT_EQ(c.keys, (std::vector<std::string>{"key"}));
  std::vector<std::pair<char, std::string>> flags = {{'v', ""}, {'f', ""}, {'t', ""},     {'k', ""},
                                                     {'s', ""}, {'c', ""}, {'O', "ab12"}, {'q', ""}};
  EXPECT_EQ(c.meta_flags, flags);
  EXPECT_FALSE(c.base64_key);

  c = command_of("mg Zm9v b v\r\n");
  EXPECT_TRUE(c.base64_key);
  EXPECT_EQ(c.keys, (std::vector<std::string>{"Zm9v"}));  // recorded, not decoded

  c = command_of("ms key 5 T30 F7 C99 I MS\r\nhello\r\n");
  EXPECT_EQ(c.kind, CommandKind::kMetaSet);
  EXPECT_EQ(c.value, "hello");
  flags = {{'T', "30"}, {'F', "7"}, {'C', "99"}, {'I', ""}, {'M', "S"}};
  EXPECT_EQ(c.meta_flags, flags);
  EXPECT_EQ(command_of("ms key 0\r\n\r\n").value, "");

  c = command_of("md key q C5 k\r\n");
  EXPECT_EQ(c.kind, CommandKind::kMetaDelete);
  EXPECT_EQ(c.meta_flags.size(), 3u);

  c = command_of("ma key D5 J10 N30 MI v\r\n");
  EXPECT_EQ(c.kind, CommandKind::kMetaArithmetic);
  flags = {{'D', "5"}, {'J', "10"}, {'N', "30"}, {'M', "I"}, {'v', ""}};
  EXPECT_EQ(c.meta_flags, flags);

  EXPECT_EQ(command_of("mn\r\n").kind, CommandKind::kMetaNoop);
  c = command_of("me key\r\n");
  EXPECT_EQ(c.kind, CommandKind::kMetaDebug);
  EXPECT_EQ(c.keys, (std::vector<std::string>{"key"}));
}

TEST(MemcacheParser, MetaMalformed) {
  // No key: memcached 1.6.18 knows no such command, except me.
  for (const char* bare : {"mg\r\n", "md\r\n", "ma  \r\n", "ms\r\n"}) expect_error(bare, ErrorKind::kError, "");
  expect_bad_format("me\r\n");
  expect_bad_format("ms k\r\n");
  expect_bad_format("mg " + std::string(251, 'k') + " v\r\n");
  expect_error("mg k v v\r\n", ErrorKind::kClientError, "duplicate flag");
  expect_error("mg k !\r\n", ErrorKind::kClientError, "invalid flag");
  expect_error("mg k T\r\n", ErrorKind::kClientError, "bad token in command line format");
  expect_error("mg k Tx\r\n", ErrorKind::kClientError, "bad token in command line format");
  expect_error("ms k 1 Cx\r\n1\r\n", ErrorKind::kClientError, "bad token in command line format");
  // memcached 1.6.18's md and ma say one thing for every flag they cannot read.
  expect_error("md k C-1\r\n", ErrorKind::kClientError, "invalid or duplicate flag");
  expect_error("md k q q\r\n", ErrorKind::kClientError, "invalid or duplicate flag");
  expect_error("ma k Dx\r\n", ErrorKind::kClientError, "invalid or duplicate flag");
  expect_error("ma k J-2\r\n", ErrorKind::kClientError, "invalid or duplicate flag");
  expect_error("ma k D18446744073709551616\r\n", ErrorKind::kClientError, "invalid or duplicate flag");
  expect_error("md k O" + std::string(33, 'o') + "\r\n", ErrorKind::kClientError, "opaque token too long");
  // E and x came after 1.6.18.
  expect_error("mg k E5\r\n", ErrorKind::kClientError, "invalid flag");
  expect_error("mg k x\r\n", ErrorKind::kClientError, "invalid flag");
  expect_error("ma k x\r\n", ErrorKind::kClientError, "invalid or duplicate flag");
  expect_error("mg k O" + std::string(33, 'o') + "\r\n", ErrorKind::kClientError, "opaque token too long");
  std::string many = "mg k";
  for (char f : std::string("abcfhklOqstuvNTRCDJP")) many += std::string(" ") + f + (isupper(f) ? "1" : "");
  expect_error(many + "\r\n", ErrorKind::kClientError, "options flags are too long");
  // ms: no usable length, only the line goes; with one, the block goes too.
  expect_bad_format("ms k\r\n");
  expect_bad_format("ms k -1\r\n");
  std::vector<Event> events = feed_whole("ms k 2 !\r\nab\r\nmn\r\n");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].error_message, "invalid flag");
  EXPECT_EQ(events[1].command.kind, CommandKind::kMetaNoop);
  // A key too long: memcached 1.6.18 reads the data block as the next line.
  events = feed_whole("ms " + std::string(251, 'k') + " 2\r\nmn\r\n");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].error_message, "bad command line format");
  EXPECT_EQ(events[1].command.kind, CommandKind::kMetaNoop);
}

TEST(MemcacheParser, UnknownAndEmptyLines) {
  expect_error("bogus\r\n", ErrorKind::kError, "");
  expect_error("GET a\r\n", ErrorKind::kError, "");
  expect_error("\r\n", ErrorKind::kError, "");
  expect_error("\n", ErrorKind::kError, "");
  expect_error(" get a\r\n", ErrorKind::kError, "");
  // memcached honours noreply even on an unknown command.
  EXPECT_TRUE(one("bogus x noreply\r\n").noreply);
}

TEST(MemcacheParser, LineLimits) {
  ParserLimits limits;
  Parser parser(limits);
  Command command;
  // 2048 bytes and no '\n' yet: still waiting; one more and it is refused.
  std::string line = "set " + std::string(2044, 'k');
  EXPECT_EQ(parser.parse(line, &command).status, ParseStatus::kNeedMore);
  line += "k";
  ParseResult r = parser.parse(line, &command);
  EXPECT_EQ(r.status, ParseStatus::kError);
  EXPECT_EQ(r.error.message, "line too long");
  EXPECT_TRUE(r.close_connection);
  EXPECT_EQ(r.consumed, line.size());
  // The same whether the '\n' came or not.
  r = parser.parse(line + "\r\n", &command);
  EXPECT_EQ(r.status, ParseStatus::kError);
  EXPECT_TRUE(r.close_connection);
  Event e = one(line + " 0 0 1\r\nx\r\n");
  EXPECT_EQ(e.error_message, "line too long");
  EXPECT_TRUE(e.close);

  // A get line may be longer, up to max_get_line_length.
  limits.max_get_line_length = 4096;
  std::string get = "get";
  while (get.size() < 4000) get += " " + std::string(200, 'g');
  EXPECT_EQ(one(get + "\r\n", limits).command.keys.size(), 20u);
  while (get.size() <= 4096) get += " g";
  e = one(get + "\r\n", limits);
  EXPECT_EQ(e.error_message, "line too long");
  EXPECT_TRUE(e.close);
}

TEST(MemcacheParser, SplitInputs) {
  // A data block in pieces: need more until the last byte of its "\r\n".
  Parser parser;
  Command command;
  const std::string stream = "set k 1 2 6\r\nab\r\ncd\r\n";
  for (size_t n = 0; n < stream.size(); ++n) {
    ParseResult r = parser.parse(std::string_view(stream).substr(0, n), &command);
    EXPECT_EQ(r.status, ParseStatus::kNeedMore) << n;
    EXPECT_EQ(r.consumed, 0u) << n;
  }
  ParseResult r = parser.parse(stream, &command);
  ASSERT_EQ(r.status, ParseStatus::kCommand);
  EXPECT_EQ(command.value, "ab\r\ncd");
  EXPECT_EQ(r.consumed, stream.size());

  // Two pipelined commands in one buffer: the first, then the rest.
  const std::string two = "get a b\r\nset k 0 0 1\nx\r\n";
  r = parser.parse(two, &command);
  ASSERT_EQ(r.status, ParseStatus::kCommand);
  EXPECT_EQ(command.kind, CommandKind::kGet);
  EXPECT_EQ(r.consumed, 9u);
  r = parser.parse(std::string_view(two).substr(9), &command);
  ASSERT_EQ(r.status, ParseStatus::kCommand);
  EXPECT_EQ(command.kind, CommandKind::kSet);
  EXPECT_EQ(command.value, "x");
  EXPECT_EQ(r.consumed, two.size() - 9);
}

TEST(MemcacheParser, EveryCaseSameBytewiseAsWhole) {
  // Valid and malformed lines back to back: fed whole, a byte at a time and
  // in threes, the events are the same.
  const std::string stream =
      "get a b\r\ngets c\nset k 1 2 3\r\nabc\r\nbogus\r\nincr k x\r\ncas k 0 0 2 9 noreply\r\nhi\r\n"
      "set k x 0 2\r\nzz\r\ndelete k 0\r\nmg k v k O1\r\nms k 2 T1\r\nab\r\nma k\r\nmd k q\r\nmn\r\n"
      "touch k 10\r\nflush_all 0\r\nstats items\r\nverbosity 1\r\nversion\r\n\r\nset k 0 0 1\r\nxyz\r\n"
      "mg k v v\r\nquit\r\nget never\r\n";
  std::vector<Event> whole = feed_whole(stream);
  EXPECT_EQ(whole.size(), 23u);
  EXPECT_TRUE(whole.back().close);
  EXPECT_EQ(feed_bytewise(stream), whole);
  std::vector<size_t> threes;
  for (size_t i = 3; i < stream.size(); i += 3) threes.push_back(i);
  EXPECT_EQ(feed(stream, threes), whole);
}

TEST(MemcacheParser, WarmVectorsAreReused) {
  Parser parser;
  Command command;
  ASSERT_EQ(parser.parse("get a b c d e f g h\r\n", &command).status, ParseStatus::kCommand);
  const std::string_view* keys = command.keys.data();
  const size_t capacity = command.keys.capacity();
  ASSERT_EQ(parser.parse("get x y\r\n", &command).status, ParseStatus::kCommand);
  EXPECT_EQ(command.keys.data(), keys);
  EXPECT_EQ(command.keys.capacity(), capacity);
}

// Random valid commands, serialized, concatenated, cut at random points:
// the parsed sequence is the generated one.
class RandomCommands {
 public:
  explicit RandomCommands(uint64_t seed) : rng_(seed) {}

  // One command: what the parser should give (noreply in the pair), and its
  // bytes.
  std::pair<Event, std::string> next() {
    Event e;
    OwnedCommand& c = e.command;
    std::string text;
    const int pick = static_cast<int>(uniform(0, 19));
    static constexpr CommandKind kStorage[] = {CommandKind::kSet,    CommandKind::kAdd,     CommandKind::kReplace,
                                               CommandKind::kAppend, CommandKind::kPrepend, CommandKind::kCas};
    static constexpr const char* kStorageNames[] = {"set", "add", "replace", "append", "prepend", "cas"};
    switch (pick) {
      case 0:
      case 1:
      case 2:
      case 3: {
        static constexpr CommandKind kKinds[] = {CommandKind::kGet, CommandKind::kGets, CommandKind::kGat,
                                                 CommandKind::kGats};
        static constexpr const char* kNames[] = {"get", "gets", "gat", "gats"};
        c.kind = kKinds[pick];
        text = kNames[pick];
        if (pick >= 2) {
          c.exptime = exptime();
          text += " " + std::to_string(c.exptime);
        }
        for (uint64_t n = uniform(1, 20); n > 0; --n) {
          c.keys.push_back(key());
          text += spaces() + c.keys.back();
        }
        break;
      }
      case 4:
      case 5:
      case 6: {
        const size_t i = uniform(0, 5);
        c.kind = kStorage[i];
        c.keys.push_back(key());
        c.client_flags = static_cast<uint32_t>(uniform(0, UINT32_MAX));
        c.exptime = exptime();
        c.value = value();
        text = std::string(kStorageNames[i]) + " " + c.keys[0] + " " + std::to_string(c.client_flags) + " " +
               std::to_string(c.exptime) + " " + std::to_string(c.value.size());
        if (c.kind == CommandKind::kCas) {
          c.cas_unique = rng_();
          text += " " + std::to_string(c.cas_unique);
        }
        e.noreply = maybe_noreply(&text);
        return {e, text + eol() + c.value + "\r\n"};
      }
      case 7:
        c.kind = CommandKind::kDelete;
        c.keys.push_back(key());
        text = "delete " + c.keys[0] + (uniform(0, 3) == 0 ? " 0" : "");
        e.noreply = maybe_noreply(&text);
        break;
      case 8:
        c.kind = uniform(0, 1) ? CommandKind::kIncr : CommandKind::kDecr;
        c.keys.push_back(key());
        c.delta = rng_();
        text =
            std::string(c.kind == CommandKind::kIncr ? "incr " : "decr ") + c.keys[0] + " " + std::to_string(c.delta);
        e.noreply = maybe_noreply(&text);
        break;
      case 9:
        c.kind = CommandKind::kTouch;
        c.keys.push_back(key());
        c.exptime = exptime();
        text = "touch " + c.keys[0] + " " + std::to_string(c.exptime);
        e.noreply = maybe_noreply(&text);
        break;
      case 10:
        c.kind = CommandKind::kFlushAll;
        text = "flush_all";
        if (uniform(0, 1)) {
          c.exptime = exptime();
          text += " " + std::to_string(c.exptime);
        }
        e.noreply = maybe_noreply(&text);
        break;
      case 11:
        c.kind = uniform(0, 1) ? CommandKind::kVersion : CommandKind::kMetaNoop;
        text = c.kind == CommandKind::kVersion ? "version" : "mn";
        break;
      case 12:
        c.kind = CommandKind::kVerbosity;
        c.level = static_cast<uint32_t>(uniform(0, 3));
        text = "verbosity " + std::to_string(c.level);
        e.noreply = maybe_noreply(&text);
        break;
      case 13:
        c.kind = CommandKind::kStats;
        text = "stats";
        for (uint64_t n = uniform(0, 3); n > 0; --n) {
          c.stats_args.push_back(key());
          text += " " + c.stats_args.back();
        }
        break;
      case 14:
      case 15:
      case 16:
      case 17:
      case 18: {
        static constexpr CommandKind kKinds[] = {CommandKind::kMetaGet, CommandKind::kMetaSet, CommandKind::kMetaDelete,
                                                 CommandKind::kMetaArithmetic, CommandKind::kMetaDebug};
        static constexpr const char* kNames[] = {"mg", "ms", "md", "ma", "me"};
        c.kind = kKinds[pick - 14];
        c.keys.push_back(key());
        text = std::string(kNames[pick - 14]) + " " + c.keys[0];
        if (c.kind == CommandKind::kMetaSet) {
          c.value = value();
          text += " " + std::to_string(c.value.size());
        }
        text += meta_flags(&c);
        if (c.kind == CommandKind::kMetaSet) return {e, text + eol() + c.value + "\r\n"};
        break;
      }
      default:
        c.kind = CommandKind::kGet;
        c.keys.push_back(std::string(250, 'K'));
        text = "get " + c.keys[0];
        break;
    }
    return {e, text + eol()};
  }

  uint64_t uniform(uint64_t lo, uint64_t hi) { return std::uniform_int_distribution<uint64_t>(lo, hi)(rng_); }

 private:
  std::string key() {
    std::string k(uniform(1, 40), ' ');
    for (char& ch : k) ch = static_cast<char>(uniform(0x21, 0x7e));
    return k;
  }
  std::string value() {
    std::string v(uniform(0, 3) == 0 ? uniform(0, 2000) : uniform(0, 20), ' ');
    for (char& ch : v) ch = static_cast<char>(uniform(0, 255));
    if (!v.empty() && uniform(0, 1)) v.back() = '\n';
    return v;
  }
  int32_t exptime() { return static_cast<int32_t>(uniform(0, 200000)) - 100000; }
  std::string eol() { return uniform(0, 3) == 0 ? "\n" : "\r\n"; }
  std::string spaces() { return std::string(uniform(0, 4) == 0 ? 2 : 1, ' '); }
  bool maybe_noreply(std::string* text) {
    if (uniform(0, 2) != 0) return false;
    *text += " noreply";
    return true;
  }
  std::string meta_flags(OwnedCommand* c) {
    std::string letters = "bcfhklOqstuvNTRCJDFMI";
    std::shuffle(letters.begin(), letters.end(), rng_);
    std::string text;
    for (size_t i = 0, n = uniform(0, 10); i < n; ++i) {
      const char f = letters[i];
      std::string argument;
      if (f == 'O') argument = std::to_string(uniform(0, 1u << 30));
      if (f == 'N' || f == 'T' || f == 'R') argument = std::to_string(exptime());
      if (f == 'C' || f == 'J' || f == 'D') argument = std::to_string(rng_());
      if (f == 'F') argument = std::to_string(uniform(0, UINT32_MAX));
      if (f == 'M') argument = "S";
      if (f == 'b') c->base64_key = true;
      c->meta_flags.emplace_back(f, argument);
      text += spaces() + f + argument;
    }
    return text;
  }

  std::mt19937_64 rng_;
};

TEST(MemcacheParser, RandomStreamsSplitAnywhere) {
  const uint64_t seed = std::random_device{}();
  std::cout << "memcache parser random seed: " << seed << "\n";
  SCOPED_TRACE("seed " + std::to_string(seed));
  RandomCommands random(seed);
  size_t commands = 0;
  for (int round = 0; round < 50; ++round) {
    std::vector<Event> expected;
    std::string stream;
    for (int i = 0, n = static_cast<int>(random.uniform(1, 60)); i < n; ++i) {
      auto [event, text] = random.next();
      expected.push_back(event);
      stream += text;
    }
    std::vector<size_t> cuts;
    for (uint64_t n = random.uniform(0, 40); n > 0; --n) cuts.push_back(random.uniform(0, stream.size()));
    std::sort(cuts.begin(), cuts.end());
    std::vector<Event> got = feed(stream, cuts);
    ASSERT_EQ(got.size(), expected.size()) << "round " << round;
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], expected[i]) << "round " << round << " command " << i;
    commands += got.size();
  }
  std::cout << "memcache parser random: " << commands << " commands in 50 streams\n";
}

}  // namespace
}  // namespace gphkv::server::memcache

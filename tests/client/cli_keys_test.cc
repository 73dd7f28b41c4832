// The CLI's keys (client/cli_keys.h): every --key_format on numbers, text,
// binary and malformed arguments; how keys print in text and JSON; a list of
// both kinds split into one call per kind.
#include "client/cli_keys.h"

#include <string>

#include "gtest/gtest.h"

namespace gphkv::cli {
namespace {

CliKey parse(std::string_view text, KeyFormat f) {
  auto k = ParseKey(text, f);
  EXPECT_TRUE(k.ok()) << text << ": " << k.status();
  return k.ok() ? *k : CliKey{};
}

CliKey u64(uint64_t v) { return CliKey{false, v, ""}; }
CliKey bytes(std::string b) { return CliKey{true, 0, std::move(b)}; }

TEST(CliKeys, FormatNames) {
  EXPECT_EQ(*ParseKeyFormat("auto"), KeyFormat::kAuto);
  EXPECT_EQ(*ParseKeyFormat("u64"), KeyFormat::kU64);
  EXPECT_EQ(*ParseKeyFormat("bytes"), KeyFormat::kBytes);
  EXPECT_EQ(*ParseKeyFormat("hex"), KeyFormat::kHex);
  EXPECT_EQ(ParseKeyFormat("binary").status().code(), absl::StatusCode::kInvalidArgument);
}

// Under auto a number keeps its meaning as a uint64 key (decimal, and 0x hex
// as the CLI always read it); anything else is a byte key of its bytes.
TEST(CliKeys, AutoKeepsNumbersAsUint64Keys) {
  for (auto [text, value] : std::vector<std::pair<std::string, uint64_t>>{
           {"42", 42}, {"0", 0}, {"007", 7}, {"0x2a", 42}, {"0X2A", 42}, {"18446744073709551615", ~uint64_t{0}}}) {
    const CliKey k = parse(text, KeyFormat::kAuto);
    EXPECT_FALSE(k.is_bytes) << text;
    EXPECT_EQ(k.u64, value) << text;
  }
  // Not numbers as a person writes them: byte keys, whole.
  for (std::string text : {"user:42:profile", "18446744073709551616", "-1", "+42", " 42", "42 ", "0x", "0xg1", "4.2",
                           "1e3", "0x12345678901234567"}) {
    const CliKey k = parse(text, KeyFormat::kAuto);
    EXPECT_TRUE(k.is_bytes) << text;
    EXPECT_EQ(k.bytes, text);
  }
  EXPECT_EQ(ParseKey("", KeyFormat::kAuto).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CliKeys, U64RefusesWhatIsNotANumber) {
  EXPECT_EQ(parse("42", KeyFormat::kU64).u64, 42u);
  EXPECT_EQ(parse("0xff", KeyFormat::kU64).u64, 255u);
  auto bad = ParseKey("user:1", KeyFormat::kU64);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("not a 64-bit key"), std::string::npos) << bad.status();
}

TEST(CliKeys, BytesTakesEveryArgumentAsItsBytes) {
  for (std::string text : {"42", "0x2a", "user:42:profile", " spaced "}) {
    const CliKey k = parse(text, KeyFormat::kBytes);
    EXPECT_TRUE(k.is_bytes);
    EXPECT_EQ(k.bytes, text);
  }
  EXPECT_EQ(ParseKey("", KeyFormat::kBytes).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CliKeys, HexGivesBinaryKeys) {
  const CliKey k = parse("00ff61", KeyFormat::kHex);
  EXPECT_TRUE(k.is_bytes);
  EXPECT_EQ(k.bytes, std::string("\0\xff"
                                 "a",
                                 3));
  EXPECT_EQ(parse("4A4b", KeyFormat::kHex).bytes, "JK");
  for (std::string bad : {"", "0", "abc", "zz", "0x00", "00 11"}) {
    EXPECT_EQ(ParseKey(bad, KeyFormat::kHex).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

// Text output reads back as the same key under auto: plain when printable
// and not a number, quoted with C escapes otherwise.
TEST(CliKeys, TextShowsByteKeysReadably) {
  EXPECT_EQ(KeyText(u64(42)), "42");
  EXPECT_EQ(KeyText(bytes("user:42:profile")), "user:42:profile");
  EXPECT_EQ(KeyText(bytes("42")), "\"42\"");      // not the uint64 key 42
  EXPECT_EQ(KeyText(bytes("0x2a")), "\"0x2a\"");  // nor 0x2a
  EXPECT_EQ(KeyText(bytes("a b")), "\"a b\"");
  EXPECT_EQ(KeyText(bytes(std::string("\0k\n\xff", 4))), "\"\\x00k\\n\\xff\"");
  EXPECT_EQ(KeyText(bytes("\"q\"")), "\"\\\"q\\\"\"");
  EXPECT_EQ(KeyText(bytes("tab\there")), "\"tab\\there\"");
}

TEST(CliKeys, JsonGivesBase64AndPrintableText) {
  EXPECT_EQ(KeyJsonFields(u64(7)), R"("key":"7")");
  EXPECT_EQ(KeyJsonFields(bytes("user:1")), R"("key_format":"bytes","key_base64":"dXNlcjox","key":"user:1")");
  EXPECT_EQ(KeyJsonFields(bytes("42")), R"("key_format":"bytes","key_base64":"NDI=","key":"42")");
  EXPECT_EQ(KeyJsonFields(bytes("a\"\\")), R"("key_format":"bytes","key_base64":"YSJc","key":"a\"\\")");
  EXPECT_EQ(KeyJsonFields(bytes(std::string("\0", 1))), R"("key_format":"bytes","key_base64":"AA==")");
}

TEST(CliKeys, AListOfBothKindsIsOneCallPerKind) {
  const std::vector<CliKey> keys = {u64(1), bytes("a"), u64(2), bytes("42"), bytes("b")};
  const KeysByKind g = GroupByKind(keys);
  EXPECT_EQ(g.u64, (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(g.u64_at, (std::vector<size_t>{0, 2}));
  EXPECT_EQ(g.bytes, (std::vector<std::string_view>{"a", "42", "b"}));
  EXPECT_EQ(g.bytes_at, (std::vector<size_t>{1, 3, 4}));
  const KeysByKind none = GroupByKind({});
  EXPECT_TRUE(none.u64.empty() && none.bytes.empty());
}

}  // namespace
}  // namespace gphkv::cli

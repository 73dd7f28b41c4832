// The conditional and read-modify-write puts' rules (server/conditional_put.h)
// on values alone: each mode against a present and an absent key, the
// counters' edges (2^64 - 1, wrapping, stopping at 0, spaces, leading zeros,
// signs), and the value-size limit.
#include "server/conditional_put.h"

#include <optional>
#include <string>

#include "gtest/gtest.h"

namespace gphkv::server {
namespace {

absl::StatusCode code(PutMode mode, std::optional<std::string_view> stored, std::string_view operand, ResolvedPut* out,
                      uint32_t max_value_bytes = 1000) {
  return resolve_put(mode, stored, operand, max_value_bytes, out).code();
}

TEST(ParseCounter, TakesDecimalNumbersBelowTwoToThe64) {
  EXPECT_EQ(parse_counter("0", false), 0u);
  EXPECT_EQ(parse_counter("007", false), 7u);
  EXPECT_EQ(parse_counter("18446744073709551615", false), UINT64_MAX);
  EXPECT_EQ(parse_counter("00000000000000000001", false), 1u);  // 20 digits
  EXPECT_EQ(parse_counter("18446744073709551616", false), std::nullopt);
  EXPECT_EQ(parse_counter("99999999999999999999", false), std::nullopt);
  EXPECT_EQ(parse_counter("000000000000000000001", false), std::nullopt);  // 21 digits
  for (const char* bad : {"", " ", "-1", "+1", "1.5", "1e3", "0x10", "12a"}) {
    EXPECT_EQ(parse_counter(bad, true), std::nullopt) << "'" << bad << "'";
  }
  EXPECT_EQ(parse_counter(std::string("1\0", 2), true), std::nullopt);
  // Trailing spaces: a stored counter's padding, never an operand's.
  EXPECT_EQ(parse_counter("12  ", true), 12u);
  EXPECT_EQ(parse_counter("12  ", false), std::nullopt);
  EXPECT_EQ(parse_counter(" 12", true), std::nullopt);
}

TEST(ResolvePut, AddAndReplaceDependOnPresence) {
  ResolvedPut r;
  EXPECT_EQ(code(PutMode::kAdd, std::nullopt, "v", &r), absl::StatusCode::kOk);
  EXPECT_EQ(r.value, "v");
  EXPECT_EQ(code(PutMode::kAdd, "old", "v", &r), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(code(PutMode::kAdd, "", "v", &r), absl::StatusCode::kAlreadyExists);  // an empty value is present
  EXPECT_EQ(code(PutMode::kReplace, std::nullopt, "v", &r), absl::StatusCode::kNotFound);
  EXPECT_EQ(code(PutMode::kReplace, "", "new", &r), absl::StatusCode::kOk);
  EXPECT_EQ(r.value, "new");
}

TEST(ResolvePut, CompareAndSetNeedsTheItemsOwnCas) {
  ResolvedPut r;
  const uint64_t held = 0x1234567890abcdefull;
  EXPECT_EQ(resolve_put(PutMode::kCompareAndSet, "old", "new", 1000, &r, held, held).code(), absl::StatusCode::kOk);
  EXPECT_EQ(r.value, "new");
  r.value = "untouched";
  for (uint64_t other : {uint64_t{0}, held - 1, held + 1, held ^ (uint64_t{1} << 63), UINT64_MAX}) {
    EXPECT_EQ(resolve_put(PutMode::kCompareAndSet, "old", "new", 1000, &r, held, other).code(),
              absl::StatusCode::kAborted)
        << other;
  }
  EXPECT_EQ(r.value, "untouched");
  // Absent: NOT_FOUND, whatever the unique.
  EXPECT_EQ(resolve_put(PutMode::kCompareAndSet, std::nullopt, "new", 1000, &r, 0, 0).code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(resolve_put(PutMode::kCompareAndSet, std::nullopt, "new", 1000, &r, 0, held).code(),
            absl::StatusCode::kNotFound);
}

// compare_cas (memcached's ms A/P C and ma C): the stored CAS must be the
// expected one, compared after a miss (NOT_FOUND first) and, for incr and
// decr, after an empty value (memcached's order) but before the number.
TEST(ResolvePut, CompareCasGuardsAppendPrependAndCounters) {
  ResolvedPut r;
  const uint64_t held = 77;
  for (PutMode mode : {PutMode::kAppend, PutMode::kPrepend, PutMode::kIncrement, PutMode::kDecrement}) {
    SCOPED_TRACE(put_mode_name(mode));
    r.value = "untouched";
    EXPECT_EQ(resolve_put(mode, "12", "3", 1000, &r, held, held + 1, /*compare_cas=*/true).code(),
              absl::StatusCode::kAborted);
    EXPECT_EQ(r.value, "untouched");
    EXPECT_EQ(resolve_put(mode, std::nullopt, "3", 1000, &r, 0, held, true).code(), absl::StatusCode::kNotFound);
    EXPECT_EQ(resolve_put(mode, "12", "3", 1000, &r, held, held, true).code(), absl::StatusCode::kOk);
    EXPECT_NE(r.value, "untouched");
    // Without compare_cas the CAS is not looked at.
    EXPECT_EQ(resolve_put(mode, "12", "3", 1000, &r, held, held + 1, false).code(), absl::StatusCode::kOk);
  }
  EXPECT_EQ(resolve_put(PutMode::kIncrement, "x", "1", 1000, &r, held, held + 1, true).code(),
            absl::StatusCode::kAborted);
  EXPECT_EQ(resolve_put(PutMode::kIncrement, "", "1", 1000, &r, held, held + 1, true).code(),
            absl::StatusCode::kInvalidArgument);
  // add ignores it, as memcached's does.
  EXPECT_EQ(resolve_put(PutMode::kAdd, std::nullopt, "v", 1000, &r, 0, held, true).code(), absl::StatusCode::kOk);
}

TEST(ResolvePut, AppendAndPrependJoinBytesUpToTheLimit) {
  ResolvedPut r;
  const std::string binary("a\0b", 3);
  EXPECT_EQ(code(PutMode::kAppend, binary, "c", &r), absl::StatusCode::kOk);
  EXPECT_EQ(r.value, std::string("a\0bc", 4));
  EXPECT_EQ(code(PutMode::kPrepend, binary, "c", &r), absl::StatusCode::kOk);
  EXPECT_EQ(r.value, std::string("ca\0b", 4));
  EXPECT_EQ(code(PutMode::kAppend, std::nullopt, "c", &r), absl::StatusCode::kNotFound);
  EXPECT_EQ(code(PutMode::kPrepend, std::nullopt, "c", &r), absl::StatusCode::kNotFound);
  EXPECT_EQ(code(PutMode::kAppend, std::string(6, 'x'), "1234", &r, 10), absl::StatusCode::kOk);
  EXPECT_EQ(r.value.size(), 10u);
  EXPECT_EQ(code(PutMode::kPrepend, std::string(6, 'x'), "12345", &r, 10), absl::StatusCode::kResourceExhausted);
}

TEST(ResolvePut, CountersWrapUpAndStopAtZeroDown) {
  ResolvedPut r;
  EXPECT_EQ(code(PutMode::kIncrement, "41", "1", &r), absl::StatusCode::kOk);
  EXPECT_EQ(r.counter, 42u);
  EXPECT_EQ(r.value, "42");
  EXPECT_EQ(code(PutMode::kIncrement, "18446744073709551615", "2", &r), absl::StatusCode::kOk);
  EXPECT_EQ(r.counter, 1u);
  EXPECT_EQ(r.value, "1");
  EXPECT_EQ(code(PutMode::kDecrement, "5", "7", &r), absl::StatusCode::kOk);
  EXPECT_EQ(r.counter, 0u);
  EXPECT_EQ(r.value, "0");
  EXPECT_EQ(code(PutMode::kDecrement, "100 ", "1", &r), absl::StatusCode::kOk);
  EXPECT_EQ(r.value, "99");
  EXPECT_EQ(code(PutMode::kIncrement, "0042", "0", &r), absl::StatusCode::kOk);
  EXPECT_EQ(r.value, "42");
  EXPECT_EQ(code(PutMode::kIncrement, std::nullopt, "1", &r), absl::StatusCode::kNotFound);
  EXPECT_EQ(code(PutMode::kIncrement, "x", "1", &r), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(PutMode::kIncrement, "", "1", &r), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(PutMode::kDecrement, "18446744073709551616", "1", &r), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(PutMode::kIncrement, "1", "-1", &r), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gphkv::server

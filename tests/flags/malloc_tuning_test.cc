#include "flags/malloc_tuning.h"

#include <cstdlib>
#include <cstring>

#include <gtest/gtest.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace gphkv {
namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitizerAllocator = true;  // their malloc, not glibc's: mallopt and mallinfo2 say nothing
#else
constexpr bool kSanitizerAllocator = false;
#endif

TEST(MallocTuning, RefusesWhatGlibcWouldRefuseAndNamesTheLimit) {
  absl::Status s = tune_malloc({0, 33});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("at most 32 MiB"), std::string::npos) << s;
  s = tune_malloc({1025, 0});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("at most 1024 MiB"), std::string::npos) << s;
}

TEST(MallocTuning, ZeroLeavesGlibcsOwn) {
  EXPECT_TRUE(tune_malloc({0, 0}).ok());
#if defined(__GLIBC__)
  EXPECT_EQ(describe({0, 0}), "malloc: glibc's defaults");
  EXPECT_EQ(describe({256, 0}), "malloc: trim_threshold=256MiB mmap_threshold=glibc's");
  EXPECT_EQ(describe(kLargeMessageMalloc), "malloc: trim_threshold=256MiB mmap_threshold=32MiB");
#endif
}

TEST(MallocTuning, AnAllocatorThatIgnoresMalloptIsSaidNotToBeTuned) {
  EXPECT_EQ(describe(kLargeMessageMalloc, absl::FailedPreconditionError("ignored")), "malloc: not tuned: ignored");
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer's mallopt returns 0 and changes nothing: the programs go on, untuned.
  const absl::Status s = tune_malloc(kLargeMessageMalloc);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
#else
  GTEST_SKIP() << "glibc's allocator takes mallopt; AddressSanitizer's builds check the refusal";
#endif
}

// The point of it: once tuned, a message-sized buffer (3 MiB) comes from an
// arena, not from a mapping of its own that is unmapped when freed, and the
// memory it leaves free stays for the next one.
TEST(MallocTuning, MessageSizedBuffersStayInTheArena) {
#if !defined(__GLIBC__)
  GTEST_SKIP() << "not glibc's allocator";
#else
  if (kSanitizerAllocator) GTEST_SKIP() << "a sanitizer's allocator replaces glibc's";
  ASSERT_TRUE(tune_malloc(kLargeMessageMalloc).ok());
  constexpr size_t kMessage = size_t{3} << 20;
  const size_t mapped_before = mallinfo2().hblkhd;
  for (int round = 0; round < 4; ++round) {
    char* p = static_cast<char*>(std::malloc(kMessage));
    ASSERT_NE(p, nullptr);
    std::memset(p, round, kMessage);  // touched, as a message is
    EXPECT_LT(mallinfo2().hblkhd, mapped_before + kMessage) << "round " << round << ": served by mmap";
    std::free(p);
    // What it used stays free in the arena instead of going back to the kernel.
    EXPECT_GE(mallinfo2().fordblks, kMessage) << "round " << round;
  }
#endif
}

}  // namespace
}  // namespace gphkv

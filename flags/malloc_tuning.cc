#include "flags/malloc_tuning.h"

#include "absl/strings/str_cat.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace gphkv {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
// glibc refuses an mmap threshold above half its largest arena heap: 32 MiB
// on 64-bit hosts (HEAP_MAX_SIZE / 2, malloc/arena.c).
constexpr uint64_t kMaxMmapThresholdMiB = 32;
// mallopt takes an int; 1 GiB of free memory kept per arena is already far
// past any message gphkv sends.
constexpr uint64_t kMaxTrimThresholdMiB = 1024;

}  // namespace

absl::Status tune_malloc(const MallocTuning& t) {
  if (t.mmap_threshold_mib > kMaxMmapThresholdMiB) {
    return absl::InvalidArgumentError(absl::StrCat("an mmap threshold of ", t.mmap_threshold_mib,
                                                   " MiB: glibc takes at most ", kMaxMmapThresholdMiB, " MiB"));
  }
  if (t.trim_threshold_mib > kMaxTrimThresholdMiB) {
    return absl::InvalidArgumentError(
        absl::StrCat("a trim threshold of ", t.trim_threshold_mib, " MiB: at most ", kMaxTrimThresholdMiB, " MiB"));
  }
#if defined(__GLIBC__)
  // Either setting turns glibc's dynamic thresholds off; leave them on
  // unless asked (0 keeps glibc's, GLIBC_TUNABLES included). The values are
  // in glibc's range (above), so a refusal means another allocator answers
  // mallopt: AddressSanitizer's returns 0 and ignores it.
  const auto refused = [](const char* what) {
    return absl::FailedPreconditionError(
        absl::StrCat("the allocator ignored mallopt(", what, "): not glibc's (a sanitizer's?); left as it is"));
  };
  if (t.trim_threshold_mib > 0 && mallopt(M_TRIM_THRESHOLD, static_cast<int>(t.trim_threshold_mib * kMiB)) != 1) {
    return refused("M_TRIM_THRESHOLD");
  }
  if (t.mmap_threshold_mib > 0 && mallopt(M_MMAP_THRESHOLD, static_cast<int>(t.mmap_threshold_mib * kMiB)) != 1) {
    return refused("M_MMAP_THRESHOLD");
  }
#endif
  return absl::OkStatus();
}

std::string describe(const MallocTuning& t) {
#if defined(__GLIBC__)
  if (t.trim_threshold_mib == 0 && t.mmap_threshold_mib == 0) return "malloc: glibc's defaults";
  auto part = [](const char* name, uint64_t mib) {
    return mib == 0 ? absl::StrCat(name, "=glibc's") : absl::StrCat(name, "=", mib, "MiB");
  };
  return absl::StrCat("malloc: ", part("trim_threshold", t.trim_threshold_mib), " ",
                      part("mmap_threshold", t.mmap_threshold_mib));
#else
  (void)t;
  return "malloc: not glibc's; the thresholds have no effect";
#endif
}

std::string describe(const MallocTuning& tuning, const absl::Status& tuned) {
  return tuned.ok() ? describe(tuning) : absl::StrCat("malloc: not tuned: ", tuned.message());
}

}  // namespace gphkv

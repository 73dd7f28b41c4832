// How a gphkv program tunes glibc's allocator for messages of megabytes.
//
// A get of a thousand ~190-byte values answers with about 3 MB; glibc serves
// an allocation that large with mmap (or from an arena's top, which it trims
// back to the kernel once more than 128 KiB lies free there), so every such
// message is paid for again in page faults: each of its pages is mapped,
// zeroed and faulted in, then given back when the message is freed. In the
// load generator that was half of its CPU at 1000-key gets (perf, this VM:
// page faults under memmove and the socket's copy). With an arena that keeps
// up to trim_threshold free and allocations below mmap_threshold kept off
// mmap, the same buffers are reused: 1.4-1.7 M keys/s became 3.2-3.4 M on
// one core (docs/loadgen.md, "The allocator"; on the device the coalescing
// client gained 30-50% at 1000-key gets: docs/service.md, "Every GPU of a host").
//
// What it costs: memory freed stays with the process, up to trim_threshold
// per malloc arena (the high-water mark of what was in use, not more), where
// glibc's default gives it back at once. A setting of 0 leaves glibc's own
// (dynamic) threshold, and with it GLIBC_TUNABLES' say, as it is.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace gphkv {

struct MallocTuning {
  uint64_t trim_threshold_mib = 0;  // free bytes an arena keeps before trimming; 0: glibc's
  uint64_t mmap_threshold_mib = 0;  // smallest allocation served by mmap; 0: glibc's (at most 32 MiB)
};

// The programs' default: measured on the load generator (above).
inline constexpr MallocTuning kLargeMessageMalloc{256, 32};

// Sets glibc's thresholds (mallopt) for this process; call first thing in
// main, before threads allocate. INVALID_ARGUMENT names a threshold glibc
// refuses (mmap_threshold above 32 MiB): the caller's flags are wrong.
// FAILED_PRECONDITION: the process's allocator ignored mallopt (under
// AddressSanitizer), nothing changed, and the program can go on. Without
// glibc the settings are accepted and have no effect (describe() says so).
absl::Status tune_malloc(const MallocTuning& tuning);

// What a program logs and reports of its allocator: describe(tuning), or
// why tune_malloc left it as it was.
std::string describe(const MallocTuning& tuning, const absl::Status& tuned);

// "malloc: trim_threshold=256MiB mmap_threshold=32MiB", "malloc: glibc's
// defaults", or that the allocator is not glibc's: for a program's start-up log.
std::string describe(const MallocTuning& tuning);

}  // namespace gphkv

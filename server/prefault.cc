#include "server/prefault.h"

#include <cstdint>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace gphkv::server {
namespace {

constexpr uintptr_t kPage = 4096;
constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
// One madvise call's share: small enough to stop soon, large enough that
// the calls cost nothing beside the zeroing.
constexpr uintptr_t kStep = uintptr_t{32} << 20;

}  // namespace

void Prefault::start(const void* data, size_t bytes) {
  stop();
#if defined(__linux__) && defined(MADV_POPULATE_WRITE) && defined(MADV_HUGEPAGE)
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + kPage - 1) & ~(kPage - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes) & ~(kPage - 1);
  if (end <= begin) return;
  // Huge pages over the whole 2 MiB pages inside: only advice.
  const uintptr_t huge_begin = (begin + kHugePage - 1) & ~(kHugePage - 1);
  const uintptr_t huge_end = end & ~(kHugePage - 1);
  if (huge_end > huge_begin) (void)madvise(reinterpret_cast<void*>(huge_begin), huge_end - huge_begin, MADV_HUGEPAGE);
  stopping_ = false;
  thread_ = std::thread([this, begin, end] {
    for (uintptr_t at = begin; at < end && !stopping_.load(std::memory_order_relaxed); at += kStep) {
      const uintptr_t n = end - at < kStep ? end - at : kStep;
      // EINVAL: a kernel before 5.14; the owner faults its pages itself.
      if (madvise(reinterpret_cast<void*>(at), n, MADV_POPULATE_WRITE) != 0) return;
    }
  });
#else
  (void)data;
  (void)bytes;
#endif
}

void Prefault::stop() {
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
}

}  // namespace gphkv::server

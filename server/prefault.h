// Fills in the pages of a large array before its owner writes them, on a
// thread of its own.
//
// Why: recovery's bulk load (server/bulk_load.h) fills arrays of gigabytes
// front to back on the executor thread (24 bytes a pair for the table's
// build, 16 a value for the heap's records), and every first touch of a page
// is a fault that zeroes it: on the 2-core VM, zeroing pages was the largest
// single cost of a 10^7-pair recovery outside the build (about a sixth of its
// samples, clear_page_erms). Populating them ahead, on another core, takes
// that off the thread the restart waits for. Huge pages are asked for too
// (512 times fewer faults where the kernel grants them on request, Debian's
// and Ubuntu's default).
//
// MADV_POPULATE_WRITE (Linux 5.14) faults pages in as a write would but never
// changes what they hold, so it may race the owner's writes; where the
// kernel lacks it, Prefault does nothing and the owner faults as before.
#pragma once

#include <atomic>
#include <cstddef>
#include <thread>

namespace gphkv::server {

class Prefault {
 public:
  Prefault() = default;
  ~Prefault() { stop(); }
  Prefault(const Prefault&) = delete;
  Prefault& operator=(const Prefault&) = delete;

  // Starts populating [data, data + bytes), front to back (after stopping
  // the one before). The range must stay mapped until stop().
  void start(const void* data, size_t bytes);
  // Stops between steps and waits for the thread.
  void stop();

 private:
  std::thread thread_;
  std::atomic<bool> stopping_{false};
};

}  // namespace gphkv::server

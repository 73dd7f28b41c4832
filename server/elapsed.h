// The seconds since a steady-clock time point: what the server's stage
// timings, metrics and logs record.
#pragma once

#include <chrono>

namespace gphkv::server {

inline double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace gphkv::server

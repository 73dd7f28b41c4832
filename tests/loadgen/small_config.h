// The run the tests against the in-process fake gphkv start from: 20k keys,
// one driver thread with two connections, no progress line, bounded waits.
#pragma once

#include <string>

#include "loadgen/config.h"

namespace gphkv::loadgen::testing {

inline LoadgenConfig SmallConfig(const std::string& address) {
  LoadgenConfig c;
  c.target = "gphkv";
  c.address = address;
  c.workload.keys = 20'000;
  c.workload.key_pool = 1 << 16;  // a small ring: quick to draw
  c.progress = false;
  c.wait_ready_s = 10;
  c.drive.threads = 1;
  c.drive.connections = 2;
  c.drive.depth = 1;
  c.drive.warmup_s = 0.2;
  c.drive.drain_timeout_s = 5;
  return c;
}

}  // namespace gphkv::loadgen::testing

// An in-process gphkv.v1.KeyValue server for the loadgen tests: an ordinary
// map behind the real wire contract, with a switch that holds every call
// arriving inside a time window until the window ends (a stalled server).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace gphkv::loadgen::testing {

class FakeGphkvServer {
 public:
  using Clock = std::chrono::steady_clock;
  FakeGphkvServer();
  ~FakeGphkvServer();
  // "127.0.0.1:PORT", bound to a free port.
  const std::string& address() const;
  // Calls arriving in [from, until) are answered at `until`, not before.
  void StallBetween(Clock::time_point from, Clock::time_point until);
  // Puts are refused with this gRPC status code (0: accepted).
  void FailPutsWith(int code);
  // Every call's method and keys, in arrival order ("get 1 2 3").
  std::vector<std::string> Log() const;
  size_t stored() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace gphkv::loadgen::testing

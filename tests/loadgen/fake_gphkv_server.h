// An in-process gphkv.v1.KeyValue server for the loadgen tests: an ordinary
// map of keys to values behind the real wire contract (unary Get/Put/Delete
// and the Pipeline stream), with a switch that holds every call or stream
// operation arriving inside a time window until the window ends (a stalled
// server), and one that makes it a broken store.
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
  // Puts are refused with this gRPC status code (0: accepted); on a
  // Pipeline stream, as the operation's code.
  void FailPutsWith(int code);
  // A broken store: a put of a stored key is acknowledged but keeps the old
  // value, so gets read stale values (what the read check must catch).
  void KeepFirstValues();
  // Pipeline streams answer each operation with this id added to its own
  // (0: the id sent), as a server that mixes up ids would.
  void ShiftPipelineIdsBy(uint64_t offset);
  // Every call's method and keys, in arrival order ("get 1 2 3"); a Pipeline
  // operation's the same way.
  std::vector<std::string> Log() const;
  size_t stored() const;
  // Pipeline streams opened so far, and the most operations any one of them
  // had read but not yet answered at one time.
  int pipeline_streams() const;
  int max_pipeline_in_flight() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace gphkv::loadgen::testing

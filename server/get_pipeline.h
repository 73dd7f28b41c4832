// Get runs that run on the device ahead of their answers: submitted, then
// finished in submission order (server/cuda/device_gets.h, built with CUDA).
// Reads only: the owner (the store, on the executor thread) finishes every
// run in flight before it applies a write, so a slot freed by a write is
// never read by an older get and a get submitted after an acknowledged write
// sees it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "gphkv/engine/stream_ordered_table.h"
#include "server/call.h"
#include "server/get_answers.h"
#include "server/get_stages.h"

namespace gphkv::server {

class GetPipeline {
 public:
  virtual ~GetPipeline() = default;

  // Runs in flight at most.
  virtual int depth() const = 0;
  virtual size_t in_flight() const = 0;
  // Runs whose values outgrew the download sent with them (copied at finish).
  virtual uint64_t late_downloads() const = 0;
  // Whether byte keys' table keys are made where the run executes (the
  // default: the device hashes the key bytes it compares records with) or
  // taken from the calls (GetOp::keys, hashed by the front end). Off only
  // to measure the one against the other (bench/byte_key_gets_bench.cc).
  virtual void set_hashes_byte_keys(bool on) = 0;

  // Enqueues a run of get calls on the table (in_flight() < depth()). An
  // error leaves nothing in flight for the run; its calls are the caller's.
  // `now` (unix seconds) is the store's clock: a byte key's item that
  // expired by then is a miss (server/byte_key.h).
  virtual absl::Status submit(engine::StreamOrderedTable& table, absl::Span<Call* const> calls, uint32_t now) = 0;
  // Whether the oldest run in flight is done on the device, so finish()
  // would not wait for it (a device error counts as done: finish() reports
  // it). Never blocks; false when no run is in flight.
  virtual bool oldest_done() const = 0;
  // Waits for the oldest run and returns its answers, to be filled into the
  // responses on any thread. Everything the run read of the table and the
  // value heap was read by then.
  virtual std::shared_ptr<GetAnswers> finish(uint64_t max_response_bytes, GetStageTimes* times) = 0;
};

}  // namespace gphkv::server

// The answers of one finished get batch on their way into the calls'
// responses. Filling is the per-key part of answering (found flags, lengths,
// value bytes), so it is done off the executor thread: disjoint ranges of
// calls can be filled on several threads at once. The batch's buffers are
// reused once every range was filled (range_filled), before the calls are
// answered: a call's done() may merge a split call's parts and serialize and
// send a message, and the device pipeline must not wait for that (issue 30).
// Without ranges counted, once the last reference to the answers is gone.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "server/call.h"

namespace gphkv::server {

class GetAnswers {
 public:
  virtual ~GetAnswers() = default;

  const std::vector<Call*>& calls() const { return calls_; }
  // statuses()[i] answers calls()[i] once its range was filled.
  const std::vector<absl::Status>& statuses() const { return statuses_; }
  // Keys of the calls before call i (key_offset(calls().size()) = all keys),
  // to cut the batch into ranges of similar work.
  uint64_t key_offset(size_t i) const { return key_offsets_[i]; }

  // Fills the responses of calls [begin, end) and their statuses. Any
  // thread; concurrent calls must be given disjoint ranges.
  virtual void fill(size_t begin, size_t end) = 0;

  // The batch is answered in `ranges` ranges, each filled once and then
  // reported with range_filled(): the last report gives the batch's buffers
  // back. Before the first fill.
  void expect_ranges(size_t ranges) { unfilled_ranges_.store(ranges, std::memory_order_relaxed); }
  // A range was filled (fill() returned): after the last one the answers
  // must not be filled again.
  void range_filled() {
    if (unfilled_ranges_.fetch_sub(1, std::memory_order_acq_rel) == 1) release_buffers();
  }

 protected:
  // Every range was filled: the buffers the answers were read from may be reused.
  virtual void release_buffers() {}

  std::vector<Call*> calls_;
  std::vector<absl::Status> statuses_;
  std::vector<uint64_t> key_offsets_;

 private:
  std::atomic<size_t> unfilled_ranges_{0};
};

}  // namespace gphkv::server

// The answers of one finished get batch on their way into the calls'
// responses. Filling is the per-key part of answering (found flags, lengths,
// value bytes), so it is done off the executor thread: disjoint ranges of
// calls can be filled on several threads at once. The batch's buffers are
// reused once the last reference to its answers is gone.
#pragma once

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

 protected:
  std::vector<Call*> calls_;
  std::vector<absl::Status> statuses_;
  std::vector<uint64_t> key_offsets_;
};

}  // namespace gphkv::server

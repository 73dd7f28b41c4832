// A call whose keys lie on several partitions, cut into one part per
// partition it touches (a shrink: one part on every partition). Each part is
// an ordinary Call over a request and response of its own, queued on its
// partition like any other; when the last part is answered, the parts'
// answers are merged into the original response in request order and the
// original call is answered once.
//
// Semantics across partitions are the sharded client's: each part takes
// effect as one call on its partition (atomic there, ordered with the other
// calls on those keys), but not atomically with the other parts. A part that
// fails fails the whole call with its code, and the message names the
// partition and, for a write, the partitions whose parts were applied.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "server/call.h"
#include "server/call_stages.h"
#include "server/key_placement.h"

namespace prometheus {
class Histogram;
}

namespace gphkv::server {

class SplitCall;

struct CallPart {
  uint32_t partition;
  Call call;  // its `done` settles the part in the SplitCall
};

// The call stage histograms a split call observes its split_wait and merge
// in (server/call_stages.h); null: not timed.
using CallStageHistograms = std::array<prometheus::Histogram*, kNumCallStages>;

// What split() returns: the parts, and the call they answer.
struct SplitParts {
  std::shared_ptr<SplitCall> call;
  std::vector<CallPart> parts;
};

// The call's keys all lie on one partition (the fast path: the call is
// queued as it is, without a copy); a key-less call (shrink) lies on one
// only when there is one partition. Otherwise -1.
int64_t single_partition(const Call& call, const KeyPlacement& placement);

class SplitCall : public std::enable_shared_from_this<SplitCall> {
 public:
  // Cuts `call` into its parts, in partition order. partition_names[p] is
  // how errors name partition p ("gpu 1", "partition 3").
  // max_response_bytes: the merged get response's bound (each part is also
  // bounded alone by its store). stages (may be null): where the wait for
  // the last part and the merge are observed.
  static SplitParts split(Call call, const KeyPlacement& placement,
                          std::shared_ptr<const std::vector<std::string>> partition_names, uint64_t max_response_bytes,
                          const CallStageHistograms* stages = nullptr);

  // The submitter's side, once it tried to queue every part (and ran the
  // `done` of each part refused, which settles it): drops the submitter's
  // hold. answer == false: no part was queued, the submitter refuses the
  // call itself, and the original `done` never runs.
  void release(bool answer);

  struct Part {
    uint32_t partition = 0;
    // positions[j]: where the part's key j stands in the original request.
    std::vector<uint32_t> positions;
    absl::Status status;
    // The part's keys and a put's values, which its call views.
    std::vector<uint64_t> keys;
    std::string key_bytes;  // a byte-key call's keys (keys then holds their table keys)
    std::vector<uint32_t> key_lengths;
    std::vector<uint64_t> key_sessions;  // a packed get's (GetOp::key_sessions)
    std::vector<uint32_t> value_lengths;
    std::string values;
    v1::GetResponse get_response;
    std::vector<byte_key::ItemMeta> items;  // a get's items, when the original asks (GetOp::items)
    v1::PutResponse put_response;
    v1::DeleteResponse delete_response;
    v1::ShrinkResponse shrink_response;
  };

  // Public for std::make_shared; split() is the way in.
  SplitCall(Call call, std::shared_ptr<const std::vector<std::string>> partition_names, uint64_t max_response_bytes,
            const CallStageHistograms* stages)
      : original_(std::move(call)),
        names_(std::move(partition_names)),
        max_response_bytes_(max_response_bytes),
        stages_(stages) {}

 private:
  // One part answered (or refused); the last of them, and the submitter's
  // hold, finish the call.
  void settle(size_t part, absl::Status status);
  void finish();
  // The first failed part's status, naming its partition and the parts applied.
  absl::Status failure() const;
  absl::Status merge_gets();
  void merge_puts();
  void merge_deletes();
  // Every part's per-key flags (`flags_of(part)`) to their places in `out`,
  // which gets one flag per key of the call (false for a part that sent fewer).
  template <class FlagsOf>
  void scatter_flags(int keys, google::protobuf::RepeatedField<bool>* out, FlagsOf flags_of) const;
  void merge_shrinks();

  Call original_;
  std::shared_ptr<const std::vector<std::string>> names_;
  uint64_t max_response_bytes_;
  const CallStageHistograms* stages_;
  std::vector<Part> parts_;
  std::mutex mu_;
  size_t unsettled_ = 0;  // parts not settled, plus the submitter's hold
  bool answer_ = true;
  Clock::time_point first_settled_{};  // when the first part was answered (stages_ only)
};

}  // namespace gphkv::server

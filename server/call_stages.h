// Where one call's time in the server goes, stage by stage, for the
// gphkv_call_stage_seconds histograms (issue 25): what a paced call's
// latency is made of, and where calls wait when a shape does not scale
// (issue 30). With gphkv_queue_wait_seconds (enqueued to its batch's start)
// the stages cover a call from the front end's read to its answer:
//
//   received --intake--> enqueued --queue--> started --execute--> answers
//   ready --answer_wait--> delivery began --respond--> done() returned
//
// intake: parse, checks, the cut of a call over several partitions (from the
// time the front end read the call's message); execute: the engine run, or
// the pipelined get batch until its answers are on the host; answer_wait: in
// the completion pool's queue; respond: filling the answers of the call's
// range and its done(), which merges a split call's parts and serializes and
// sends a message once its last call is answered.
#pragma once

#include <array>
#include <vector>

#include <prometheus/histogram.h>

namespace gphkv::server {

enum CallStage : int {
  kCallIntake = 0,
  kCallExecute,
  kCallAnswerWait,
  kCallRespond,
  kCallSplitWait,
  kCallMerge,
  kCallSerialize,
  kCallSend,
  kNumCallStages
};

inline const char* call_stage_name(int s) {
  static const char* const kNames[kNumCallStages] = {"intake",     "execute", "answer_wait", "respond",
                                                     "split_wait", "merge",   "serialize",   "send"};
  return kNames[s];
}

// The stages' bucket bounds: 1 us, doubling, 24 of them (to ~8 s), as the
// other time histograms.
inline const prometheus::Histogram::BucketBoundaries& call_stage_bounds() {
  static const auto* bounds = [] {
    auto* b = new prometheus::Histogram::BucketBoundaries;
    double v = 1e-6;
    for (int i = 0; i < 24; ++i, v *= 2) b->push_back(v);
    return b;
  }();
  return *bounds;
}

// A run's or range's stage times gathered locally and added to the
// histograms at once (ObserveMultiple): prometheus-cpp 1.0.1 locks a
// series' mutex per observation, which the completion threads would contend
// on if every call observed its own.
class CallStageTally {
 public:
  void add(CallStage stage, double seconds) {
    Stage& s = stages_[stage];
    if (s.buckets.empty()) s.buckets.assign(call_stage_bounds().size() + 1, 0.0);
    const auto& bounds = call_stage_bounds();
    size_t b = 0;
    while (b < bounds.size() && seconds > bounds[b]) ++b;
    s.buckets[b] += 1;
    s.sum += seconds;
    s.any = true;
  }
  // Adds what was tallied to `histograms` (null: dropped) and starts over.
  void flush(const std::array<prometheus::Histogram*, kNumCallStages>* histograms) {
    for (int st = 0; st < kNumCallStages; ++st) {
      Stage& s = stages_[st];
      if (!s.any) continue;
      if (histograms != nullptr) (*histograms)[st]->ObserveMultiple(s.buckets, s.sum);
      std::fill(s.buckets.begin(), s.buckets.end(), 0.0);
      s.sum = 0;
      s.any = false;
    }
  }

 private:
  struct Stage {
    std::vector<double> buckets;
    double sum = 0;
    bool any = false;
  };
  std::array<Stage, kNumCallStages> stages_;
};

}  // namespace gphkv::server

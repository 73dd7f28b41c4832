// Where one pipelined CUDA get batch spent its time (seconds), for the
// gphkv_get_stage_seconds histograms and docs/performance.md. Device stages
// come from CUDA events on the batch's stream; host stages from the steady
// clock on the executor thread.
#pragma once

#include <array>

namespace gphkv::server {

enum GetStage : int {
  kStagePack = 0,  // host: keys into the pinned upload buffer, launches enqueued
  kStageH2D,       // device: the keys' upload
  kStageFind,      // device: the GPH lookup kernel
  kStageGather,    // device: lengths, prefix sum, gather kernel
  kStageD2H,       // device: the one download (flags, lengths, values)
  kStageWait,      // host: blocked on the batch's completion event
  kStageRespond,   // host: responses filled from the pinned buffer
  kStageSlot,      // host: the executor waited for a free slot (its answers still being filled: issue 30)
  kStageIdle,      // host: the executor waited for calls before the batch of this run
  kNumGetStages
};

inline const char* get_stage_name(int s) {
  static const char* const kNames[kNumGetStages] = {"pack", "h2d",     "find", "gather", "d2h",
                                                    "wait", "respond", "slot", "idle"};
  return kNames[s];
}

struct GetStageTimes {
  std::array<double, kNumGetStages> seconds{};
  bool device_timed = false;  // the device stages were measured (stage timing on)
};

}  // namespace gphkv::server

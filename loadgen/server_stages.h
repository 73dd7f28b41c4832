// What the server says of its own time per call over the measured window:
// the load generator scrapes the gphkv server's /metrics (--server_metrics)
// when the window opens and when it closes, and reports the mean time a call
// spent in each of the server's stages (gphkv_call_stage_seconds and
// gphkv_queue_wait_seconds: server/call_stages.h). Beside the client's own
// latency it says how much of a call's time is the server's and where: the
// issue 25 question, asked at every rung of the latency ladder.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace gphkv::loadgen {

// Sums and counts of the stage histograms in one scrape.
struct StageSample {
  std::map<std::string, std::pair<double, double>> sum_count;  // stage -> (seconds, calls)
};

// A stage's calls over the window and their mean time.
struct StageMean {
  double calls = 0;
  double mean_s = 0;
};

struct ServerStages {
  std::string metrics_address;              // empty: not asked for
  std::optional<std::string> error;         // why it was not measured (a scrape failed)
  std::map<std::string, StageMean> stages;  // intake, queue, execute, answer_wait, respond
};

// The stage sums and counts of a Prometheus text page (only the series named
// above; the queue wait as stage "queue"; the pipelined CUDA get batches'
// stages, gphkv_get_stage_seconds, as "batch_NAME", per batch).
StageSample ParseStageSample(const std::string& page);
// What happened between two scrapes.
std::map<std::string, StageMean> StagesBetween(const StageSample& from, const StageSample& to);

// GET http://HOST:PORT/metrics over a plain socket, within `timeout_s`.
absl::StatusOr<std::string> ScrapeMetrics(const std::string& host_port, double timeout_s = 2.0);

}  // namespace gphkv::loadgen

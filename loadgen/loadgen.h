// One gphkv-loadgen run, start to end: resolve the workload, wait for the
// store, load the key space, drive the measured run, and write the outputs.
#pragma once

#include "absl/status/statusor.h"
#include "loadgen/config.h"
#include "loadgen/report.h"

namespace gphkv::loadgen {

absl::StatusOr<Report> RunLoadgen(const LoadgenConfig& config);

// Writes the JSON (config.json_path) and the plot (config.plot_path) when
// asked for. A missing gnuplot is reported, not fatal to the JSON.
absl::Status WriteOutputs(const Report& report);

}  // namespace gphkv::loadgen

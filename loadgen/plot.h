// The run as a picture: throughput and latency percentiles over time, drawn
// by gnuplot (Debian's gnuplot-nox) into an SVG or PNG file. The data and
// the gnuplot script are left beside the image (PATH.dat, PATH.gp) so a
// reader can redraw it.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "loadgen/run_stats.h"

namespace gphkv::loadgen {

// Writes the data and script, then runs gnuplot (FailedPrecondition when
// gnuplot is not installed; the data and script are written regardless).
absl::Status WritePlot(const std::vector<SeriesPoint>& series, const std::string& path, const std::string& title);

}  // namespace gphkv::loadgen

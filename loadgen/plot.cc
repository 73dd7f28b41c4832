#include "loadgen/plot.h"

#include <cstdlib>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"

namespace gphkv::loadgen {

absl::Status WritePlot(const std::vector<SeriesPoint>& series, const std::string& path, const std::string& title) {
  const std::string dat = path + ".dat", gp = path + ".gp";
  {
    std::ofstream f(dat);
    if (!f) return absl::UnavailableError(absl::StrCat("cannot write ", dat));
    f << "# t_s calls_per_s keys_per_s p50_us p90_us p99_us p999_us max_us errors\n";
    for (const SeriesPoint& p : series) {
      f << absl::StrFormat("%.3f %.1f %.1f %.2f %.2f %.2f %.2f %.2f %d\n", p.t_s, p.calls_per_s, p.keys_per_s, p.p50_us,
                           p.p90_us, p.p99_us, p.p999_us, p.max_us, p.errors);
    }
  }
  const bool png = absl::EndsWithIgnoreCase(path, ".png");
  const std::string safe_title = absl::StrReplaceAll(title, {{"\"", "'"}});
  {
    std::ofstream f(gp);
    if (!f) return absl::UnavailableError(absl::StrCat("cannot write ", gp));
    f << (png ? "set terminal pngcairo size 1000,800 font 'sans,10'\n"
              : "set terminal svg size 1000,800 dynamic font 'sans,11'\n");
    f << "set output '" << path << "'\n";
    f << "set multiplot layout 2,1 title \"" << safe_title << "\"\n";
    f << "set grid\nset key outside right top\nset xlabel 'seconds since start (warm-up not plotted)'\n";
    // Keys/s is tens of times calls/s (batches): each gets its own axis.
    f << "set ylabel 'keys/s'\nset format y '%.1s%c'\nset yrange [0:*]\n";
    f << "set y2label 'calls/s (batches)'\nset y2tics\nset format y2 '%.1s%c'\nset y2range [0:*]\n";
    f << "plot '" << dat << "' using 1:3 axes x1y1 with linespoints lw 2 title 'keys/s', "
      << "'' using 1:2 axes x1y2 with linespoints lw 2 title 'calls/s'\n";
    f << "unset y2label\nunset y2tics\n";
    f << "set ylabel 'latency (us)'\nset logscale y\nset format y '%g'\nset yrange [*:*]\n";
    f << "plot '" << dat << "' using 1:4 with lines lw 2 title 'p50', '' using 1:5 with lines lw 2 title 'p90', "
      << "'' using 1:6 with lines lw 2 title 'p99', '' using 1:7 with lines lw 2 title 'p99.9', "
      << "'' using 1:8 with lines lw 1 dt 2 title 'max'\n";
    f << "unset multiplot\n";
  }
  if (series.empty()) return absl::FailedPreconditionError("no measured interval to plot");
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    return absl::FailedPreconditionError("gnuplot is not installed (apt-get install gnuplot-nox); data left in " + dat);
  }
  const std::string cmd = absl::StrCat("gnuplot '", gp, "' 2>&1");
  if (std::system(cmd.c_str()) != 0) return absl::InternalError(absl::StrCat("gnuplot failed on ", gp));
  return absl::OkStatus();
}

}  // namespace gphkv::loadgen

// The CPU the load generator (and, when told its PID, the store) spent over
// the measured window: CPU seconds divided by wall seconds = cores used, the
// figure that says whether the generator had headroom and what each side
// cost. This process is read with getrusage(RUSAGE_SELF) (every thread:
// drivers, gRPC's, the reporter); another with /proc/PID/stat (utime +
// stime, in clock ticks, 10 ms on Linux).
#pragma once

#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "loadgen/target.h"

namespace gphkv::loadgen {

struct CpuSample {
  Clock::time_point at;
  double self_s = 0;               // this process, user + system
  std::optional<double> server_s;  // the other process, when asked for and readable
};

struct CpuUsage {
  double wall_s = 0;
  double loadgen_cpu_s = 0;
  int server_pid = 0;                  // 0: none asked for
  std::optional<double> server_cpu_s;  // empty when not measured (none asked for, or it went away)
  double loadgen_cores() const { return wall_s > 0 ? loadgen_cpu_s / wall_s : 0; }
  std::optional<double> server_cores() const {
    if (!server_cpu_s || !(wall_s > 0)) return std::nullopt;
    return *server_cpu_s / wall_s;
  }
};

// server_pid 0: this process only.
CpuSample TakeCpuSample(int server_pid);
CpuUsage CpuUsageBetween(const CpuSample& from, const CpuSample& to, int server_pid);

// User + system CPU seconds of process `pid`, from /proc/PID/stat.
absl::StatusOr<double> ProcessCpuSeconds(int pid);
// The same from the text of a /proc/PID/stat (the command name in its
// parentheses may hold spaces and parentheses itself).
absl::StatusOr<double> CpuSecondsFromProcStat(absl::string_view stat, long ticks_per_second);

}  // namespace gphkv::loadgen

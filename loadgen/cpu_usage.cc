#include "loadgen/cpu_usage.h"

#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace gphkv::loadgen {
namespace {

double Seconds(const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; }

double SelfCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return Seconds(u.ru_utime) + Seconds(u.ru_stime);
}

}  // namespace

absl::StatusOr<double> CpuSecondsFromProcStat(absl::string_view stat, long ticks_per_second) {
  // "pid (comm) state ppid ... utime stime ...": utime and stime are fields
  // 14 and 15, counted from the pid; the comm ends at the last ')'.
  const size_t close = stat.rfind(')');
  if (close == absl::string_view::npos) return absl::InvalidArgumentError("no ')' in /proc/PID/stat");
  std::vector<absl::string_view> fields = absl::StrSplit(stat.substr(close + 1), ' ', absl::SkipEmpty());
  // fields[0] is field 3 (state): utime is fields[11], stime fields[12].
  uint64_t utime = 0, stime = 0;
  if (fields.size() < 13 || !absl::SimpleAtoi(fields[11], &utime) || !absl::SimpleAtoi(fields[12], &stime)) {
    return absl::InvalidArgumentError("cannot read utime and stime from /proc/PID/stat");
  }
  return static_cast<double>(utime + stime) / static_cast<double>(ticks_per_second);
}

absl::StatusOr<double> ProcessCpuSeconds(int pid) {
  const std::string path = absl::StrCat("/proc/", pid, "/stat");
  std::ifstream f(path);
  if (!f) return absl::NotFoundError(absl::StrCat("cannot read ", path, " (is process ", pid, " running?)"));
  std::stringstream text;
  text << f.rdbuf();
  return CpuSecondsFromProcStat(text.str(), sysconf(_SC_CLK_TCK));
}

CpuSample TakeCpuSample(int server_pid) {
  CpuSample s;
  s.at = Clock::now();
  s.self_s = SelfCpuSeconds();
  if (server_pid > 0) {
    if (auto server = ProcessCpuSeconds(server_pid); server.ok()) s.server_s = *server;
  }
  return s;
}

CpuUsage CpuUsageBetween(const CpuSample& from, const CpuSample& to, int server_pid) {
  CpuUsage u;
  u.wall_s = std::chrono::duration<double>(to.at - from.at).count();
  u.loadgen_cpu_s = to.self_s - from.self_s;
  u.server_pid = server_pid;
  if (from.server_s && to.server_s) u.server_cpu_s = *to.server_s - *from.server_s;
  return u;
}

}  // namespace gphkv::loadgen

// The cores-used figures: /proc/PID/stat parsed right even for hostile
// command names, and CPU seconds that agree with what was burnt.
#include "loadgen/cpu_usage.h"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <csignal>
#include <thread>

#include <gtest/gtest.h>

namespace gphkv::loadgen {
namespace {

double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

// Spins until this thread has used `seconds` of CPU.
void Burn(double seconds) {
  const double until = ThreadCpuSeconds() + seconds;
  volatile uint64_t x = 0;
  while (ThreadCpuSeconds() < until) x = x + 1;
}

TEST(CpuUsage, ProcStatFieldsAreFoundPastAnyCommandName) {
  // utime 250 and stime 50 ticks at 100 per second: 3 s.
  const std::string tail = " S 1 1 1 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1 0 100 0 0";
  for (const std::string comm : {"(memcached)", "(a b)", "(x) S 1 2 (y)", "())", "(()"}) {
    auto s = CpuSecondsFromProcStat("4242 " + comm + tail, 100);
    ASSERT_TRUE(s.ok()) << comm << ": " << s.status();
    EXPECT_DOUBLE_EQ(*s, 3.0) << comm;
  }
  EXPECT_FALSE(CpuSecondsFromProcStat("4242 memcached S 1", 100).ok());
  EXPECT_FALSE(CpuSecondsFromProcStat("4242 (memcached) S 1 1 1", 100).ok());
  EXPECT_FALSE(CpuSecondsFromProcStat("4242 (m)" + std::string(" S 1 1 1 0 -1 1 1 0 0 0 x 50"), 100).ok());
}

TEST(CpuUsage, OurOwnStatReadsRightUnderAHostileThreadName) {
  // The kernel shows the main thread's name as the process's comm.
  char old_name[17] = {0};
  prctl(PR_GET_NAME, old_name, 0, 0, 0);
  prctl(PR_SET_NAME, "a) b (c 1 2 3", 0, 0, 0);
  Burn(0.05);
  auto proc = ProcessCpuSeconds(getpid());
  const CpuSample self = TakeCpuSample(0);
  prctl(PR_SET_NAME, old_name, 0, 0, 0);
  ASSERT_TRUE(proc.ok()) << proc.status();
  // The same CPU seen two ways: /proc in 10 ms ticks, getrusage finer.
  EXPECT_NEAR(*proc, self.self_s, 0.03);
}

TEST(CpuUsage, TheWindowCountsTheCpuBurntInIt) {
  const CpuSample from = TakeCpuSample(0);
  std::thread worker([] { Burn(0.3); });
  Burn(0.2);
  worker.join();
  const CpuSample to = TakeCpuSample(0);
  const CpuUsage u = CpuUsageBetween(from, to, 0);
  EXPECT_GE(u.loadgen_cpu_s, 0.5 - 0.005);
  EXPECT_LT(u.loadgen_cpu_s, 0.5 + 0.15);  // the test process's own odds and ends
  EXPECT_GT(u.wall_s, 0.0);
  EXPECT_NEAR(u.loadgen_cores(), u.loadgen_cpu_s / u.wall_s, 1e-12);
  EXPECT_FALSE(u.server_cpu_s.has_value());
  EXPECT_FALSE(u.server_cores().has_value());
}

TEST(CpuUsage, AnotherProcessIsReadThroughItsPid) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Burn(0.4);
    pause();  // until killed: its CPU stays readable
    _exit(0);
  }
  const CpuSample from = TakeCpuSample(child);
  ASSERT_TRUE(from.server_s.has_value());
  // Wait until the child has burnt its 0.4 s (bounded).
  CpuSample to = TakeCpuSample(child);
  for (int i = 0; i < 500 && to.server_s && *to.server_s < 0.39; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    to = TakeCpuSample(child);
  }
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  const CpuUsage u = CpuUsageBetween(from, to, child);
  EXPECT_EQ(u.server_pid, child);
  ASSERT_TRUE(u.server_cpu_s.has_value());
  EXPECT_NEAR(*u.server_cpu_s + *from.server_s, *to.server_s, 1e-9);
  EXPECT_GE(*to.server_s, 0.39);
  EXPECT_LT(*to.server_s, 0.45);
  ASSERT_TRUE(u.server_cores().has_value());
  // Gone: no figure rather than a wrong one.
  EXPECT_FALSE(ProcessCpuSeconds(child).ok());
  EXPECT_FALSE(TakeCpuSample(child).server_s.has_value());
}

}  // namespace
}  // namespace gphkv::loadgen

// Starting and stopping the servers and the gphkv-loadgen binary that the
// end-to-end tests drive. Every wait is bounded; a child still running when
// its ChildProcess goes away is killed.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace gphkv::loadgen::testing {

class ChildProcess {
 public:
  // Starts argv[0] with its output appended to `log_path`. pid() < 0 on failure.
  ChildProcess(const std::vector<std::string>& argv, const std::string& log_path);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  pid_t pid() const { return pid_; }
  // The exit status, or -1 if it was still running after timeout_s (then killed).
  int Wait(double timeout_s);
  // Whether it still runs (if not, it is reaped and pid() turns -1).
  bool Running();
  void Kill();

 private:
  pid_t pid_ = -1;
};

// A TCP port on 127.0.0.1 that was free a moment ago.
int FreePort();
// The absolute path of an executable found on PATH or in /usr/bin, /usr/sbin; "" if none.
std::string FindExecutable(const std::string& name);
std::string ReadFile(const std::string& path);
// A fresh directory for one test's files.
std::string TempDir(const std::string& name);

}  // namespace gphkv::loadgen::testing

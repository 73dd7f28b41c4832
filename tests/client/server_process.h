// gphkv-server as a process of its own, for tests that kill servers, start
// them with flags, or need several: CPU backend, 127.0.0.1, a port the
// kernel picks (read back from its log), no metrics endpoint.
#pragma once

#include <string>
#include <vector>

#include "tests/loadgen/child_process.h"

namespace gphkv::testing {

class ServerProcess {
 public:
  // Starts GPHKV_SERVER_PATH with the flags above plus `flags` (later ones win).
  ServerProcess(const std::string& log_path, const std::vector<std::string>& flags = {});

  // Waits (up to 30 s) for the log to name the port; false if the server
  // exited or said nothing by then.
  bool WaitServing();
  int port() const { return port_; }
  // The host it listens on (127.0.0.1 unless --listen_address said otherwise) and the port.
  std::string address() const { return host_ + ":" + std::to_string(port_); }
  std::string log() const;

  // SIGKILL, as a crash: nothing drains.
  void Crash();
  // Waits up to timeout_s for the process to exit; its exit status, or -1.
  int WaitExit(double timeout_s) { return process_.Wait(timeout_s); }

 private:
  std::string log_path_;
  loadgen::testing::ChildProcess process_;
  std::string host_ = "127.0.0.1";
  int port_ = 0;
};

// A loopback address of its own (127.a.b.c, random): a test that kills a
// server gives it one, so that no other test's server, started meanwhile on
// the port the kernel hands out again, answers for the dead one.
std::string UnsharedLoopbackHost();

}  // namespace gphkv::testing

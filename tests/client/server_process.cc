#include "tests/client/server_process.h"

#include <signal.h>

#include <chrono>
#include <random>
#include <regex>
#include <thread>

namespace gphkv::testing {
namespace {

std::vector<std::string> server_argv(const std::vector<std::string>& flags) {
  std::vector<std::string> argv = {
      GPHKV_SERVER_PATH, "--listen_address=127.0.0.1:0", "--metrics_address=",     "--backend=cpu",
      "--memory=128MiB", "--initial_capacity=4096",      "--completion_threads=1", "--grpc_threads=1"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  return argv;
}

}  // namespace

ServerProcess::ServerProcess(const std::string& log_path, const std::vector<std::string>& flags)
    : log_path_(log_path), process_(server_argv(flags), log_path) {}

std::string ServerProcess::log() const { return loadgen::testing::ReadFile(log_path_); }

bool ServerProcess::WaitServing() {
  // "serving gphkv.v1.KeyValue on 127.0.0.1:0 (port 41234) ..."
  static const std::regex kPort(R"(serving gphkv\.v1\.KeyValue on (\S+):\d+ \(port (\d+)\))");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline && process_.Running()) {
    std::smatch m;
    const std::string text = log();
    if (std::regex_search(text, m, kPort)) {
      host_ = m[1];
      port_ = std::stoi(m[2]);
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

void ServerProcess::Crash() {
  if (process_.pid() > 0) kill(process_.pid(), SIGKILL);
  process_.Wait(10);
}

std::string UnsharedLoopbackHost() {
  std::random_device rd;
  std::uniform_int_distribution<int> octet(1, 254);
  return "127." + std::to_string(octet(rd)) + "." + std::to_string(octet(rd)) + "." + std::to_string(octet(rd));
}

}  // namespace gphkv::testing

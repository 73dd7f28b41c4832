#include "bench/bench_report.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>

namespace gphkv::bench {
namespace {

std::string run(const char* cmd) {
  std::string out;
  if (FILE* p = popen(cmd, "r")) {
    char buf[256];
    while (fgets(buf, sizeof buf, p)) out += buf;
    pclose(p);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

}  // namespace

double median(std::vector<double> s) {
  std::sort(s.begin(), s.end());
  const size_t n = s.size();
  return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown";
}

#ifndef GPHKV_GIT_COMMIT
#define GPHKV_GIT_COMMIT ""
#endif

std::string git_commit() {
  // The commit the program was built from; the checkout it runs in may be
  // another (a device machine runs a copy of the tree, not its history).
  const std::string built = GPHKV_GIT_COMMIT;
  if (!built.empty()) return built;
  std::string head = run("git rev-parse HEAD 2>/dev/null");
  if (head.empty()) return "unknown";
  if (!run("git status --porcelain --untracked-files=no 2>/dev/null").empty()) head += "-dirty";
  return head;
}

std::string utc_now() {
  char buf[32];
  std::time_t t = std::time(nullptr);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

std::string command_line(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) s += (i ? " " : "") + std::string(argv[i]);
  return s;
}

std::string json_quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

nlohmann::ordered_json run_record(const std::string& benchmark, const std::string& device, int argc, char** argv) {
  return {{"benchmark", benchmark},
          {"device", device},
          {"commit", git_commit()},
          {"command", command_line(argc, argv)},
          {"date", utc_now()}};
}

bool write_json(const std::string& path, const nlohmann::ordered_json& record) {
  std::ofstream out(path);
  out << record.dump(2) << "\n";
  if (!out) {
    std::cerr << "cannot write " << path << "\n";
    return false;
  }
  return true;
}

}  // namespace gphkv::bench

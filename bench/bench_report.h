// What every benchmark program records beside its numbers: where, when, what
// commit and which command produced them, and the median of repeated runs.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gphkv::bench {

// The median of a non-empty set of samples.
double median(std::vector<double> samples);

// The CPU model name from /proc/cpuinfo ("unknown" if unreadable).
std::string cpu_model();

// `git rev-parse HEAD` of the working directory, with "-dirty" when the tree
// has changes, or "unknown".
std::string git_commit();

// UTC now, ISO 8601.
std::string utc_now();

// The command line, space-joined.
std::string command_line(int argc, char** argv);

// `s` as a JSON string literal (service_bench's writer; the others build nlohmann::json).
std::string json_quote(const std::string& s);

// What every result file opens with: benchmark, device, commit, command and date.
nlohmann::ordered_json run_record(const std::string& benchmark, const std::string& device, int argc, char** argv);

// Writes `record` to `path`, indented; false (and a message on stderr) when it cannot.
bool write_json(const std::string& path, const nlohmann::ordered_json& record);

}  // namespace gphkv::bench

// Throwaway certificate authorities and certificates for the TLS tests,
// made with the openssl command-line tool (OpenSSL 3, Debian's `openssl`):
// P-256 keys, valid for a day, unencrypted.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gphkv::testing {

struct TestCa {
  std::string dir;   // where its files and those of its certificates live
  std::string name;  // file name stem
  std::string cert;  // PEM files
  std::string key;
};

struct TestCertificate {
  std::string cert;  // PEM files: the certificate (signed by its CA) and its key
  std::string key;
};

// Runs `openssl ARGS` in `dir` (its output in dir/openssl.log).
absl::Status RunOpenssl(const std::string& dir, std::vector<std::string> args);

// A self-signed CA in `dir` (which exists), files named after `name`.
absl::StatusOr<TestCa> MakeTestCa(const std::string& dir, const std::string& name);

// A certificate `ca` signed for `subject_alt_names` (e.g. "DNS:localhost",
// "IP:127.0.0.1"), usable by a server and by a client.
absl::StatusOr<TestCertificate> IssueTestCertificate(const TestCa& ca, const std::string& name,
                                                     const std::vector<std::string>& subject_alt_names);

}  // namespace gphkv::testing

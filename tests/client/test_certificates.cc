#include "tests/client/test_certificates.h"

#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tests/loadgen/child_process.h"

namespace gphkv::testing {
namespace {

using loadgen::testing::ChildProcess;
using loadgen::testing::FindExecutable;
using loadgen::testing::ReadFile;

}  // namespace

absl::Status RunOpenssl(const std::string& dir, std::vector<std::string> args) {
  const std::string bin = FindExecutable("openssl");
  if (bin.empty()) return absl::FailedPreconditionError("the openssl tool is not installed (Debian: openssl)");
  args.insert(args.begin(), bin);
  const std::string log = dir + "/openssl.log";
  ChildProcess p(args, log);
  if (p.Wait(60) != 0) {
    return absl::InternalError(absl::StrCat("`", absl::StrJoin(args, " "), "` failed:\n", ReadFile(log)));
  }
  return absl::OkStatus();
}

absl::StatusOr<TestCa> MakeTestCa(const std::string& dir, const std::string& name) {
  TestCa ca{dir, name, dir + "/" + name + ".crt", dir + "/" + name + ".key"};
  if (auto s =
          RunOpenssl(dir, {"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
                           ca.key, "-out", ca.cert, "-days", "1", "-subj", "/CN=" + name, "-addext",
                           "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"});
      !s.ok()) {
    return s;
  }
  return ca;
}

absl::StatusOr<TestCertificate> IssueTestCertificate(const TestCa& ca, const std::string& name,
                                                     const std::vector<std::string>& subject_alt_names) {
  const std::string stem = ca.dir + "/" + name;
  TestCertificate c{stem + ".crt", stem + ".key"};
  if (auto s = RunOpenssl(ca.dir, {"req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                                   "-keyout", c.key, "-out", stem + ".csr", "-subj", "/CN=" + name});
      !s.ok()) {
    return s;
  }
  const std::string extensions = stem + ".ext";
  std::ofstream(extensions) << "subjectAltName=" << absl::StrJoin(subject_alt_names, ",") << "\n"
                            << "basicConstraints=CA:FALSE\n";
  if (auto s = RunOpenssl(ca.dir, {"x509", "-req", "-in", stem + ".csr", "-CA", ca.cert, "-CAkey", ca.key,
                                   "-CAcreateserial", "-out", c.cert, "-days", "1", "-extfile", extensions});
      !s.ok()) {
    return s;
  }
  return c;
}

}  // namespace gphkv::testing

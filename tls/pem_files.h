// The PEM files TLS is configured with, read and checked before gRPC sees
// them: gRPC reports a bad file only at the first handshake, as a failed
// connection, long after the flag that named it. Errors here name the flag
// (or whatever `what` says) and the file.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gphkv::tls {

// The whole of `path`, given as `what` (e.g. "--tls_cert"); NOT_FOUND or
// PERMISSION_DENIED naming both when it cannot be read, INVALID_ARGUMENT
// when it is empty.
absl::StatusOr<std::string> ReadPemFile(absl::string_view what, const std::string& path);

// OK when `pem` holds one or more certificates and nothing that fails to
// parse; INVALID_ARGUMENT naming `what` otherwise.
absl::Status CheckCertificates(absl::string_view what, const std::string& pem);

// OK when `key_pem` is a private key and the first certificate of
// `chain_pem` is its certificate; INVALID_ARGUMENT naming the two otherwise
// ("--tls_key does not belong to the certificate in --tls_cert").
absl::Status CheckKeyPair(absl::string_view chain_what, const std::string& chain_pem, absl::string_view key_what,
                          const std::string& key_pem);

// The files flags name, read and checked as above; errors name the flag
// and the file.
struct KeyPair {
  std::string certificate_chain;  // PEM
  std::string private_key;        // PEM
};
// Both paths or neither: neither gives an empty pair; one alone is
// INVALID_ARGUMENT ("--tls_cert and --tls_key go together").
absl::StatusOr<KeyPair> ReadKeyPair(absl::string_view cert_flag, const std::string& cert_path,
                                    absl::string_view key_flag, const std::string& key_path);
// The certificates in `path`, given as `flag`.
absl::StatusOr<std::string> ReadCertificates(absl::string_view flag, const std::string& path);

}  // namespace gphkv::tls

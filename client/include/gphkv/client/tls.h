// TLS between gphkv clients and gphkv-server. Off by default: plain text is
// the default for loopback and the demo. The server's side is
// gphkv-server --tls_cert/--tls_key (and --tls_client_ca to require client
// certificates); docs/service.md, "TLS".
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace grpc {
class Channel;
class ChannelArguments;
}  // namespace grpc

namespace gphkv {

struct TlsOptions {
  // false: plain text.
  bool enabled = false;
  // PEM: the CA certificates trusted to sign the server's certificate;
  // empty: gRPC's default roots (the system's).
  std::string root_certificates;
  // PEM: this client's certificate chain and its private key, for servers
  // that require one (mTLS); both or neither.
  std::string certificate_chain;
  std::string private_key;
  // The name the server's certificate must carry, when it is not the host
  // of the address dialled (an IP address, say). ShardedClient sets it to
  // the name of a "dns:///NAME:PORT" list unless it is set here.
  std::string server_name;
};

// TLS as the CLI and the load generator take it, from PEM files.
struct TlsFiles {
  bool enabled = false;     // --tls: TLS with gRPC's default roots
  std::string ca_file;      // --tls_ca (implies TLS)
  std::string cert_file;    // --tls_cert (implies TLS; needs --tls_key)
  std::string key_file;     // --tls_key
  std::string server_name;  // --tls_server_name

  // Whether these flags ask for TLS.
  bool on() const { return enabled || !ca_file.empty() || !cert_file.empty() || !key_file.empty(); }
};

// Reads and checks the files: every certificate parses, the key is the
// certificate's, cert and key come together. INVALID_ARGUMENT (or
// NOT_FOUND, PERMISSION_DENIED) naming the flag and the file otherwise.
// TLS stays off when no flag asks for it.
absl::StatusOr<TlsOptions> LoadTlsFiles(const TlsFiles& files);

// A channel to `target` with `tls`'s credentials (plain text when off) and
// `args` plus what TLS needs (the certificate name to check).
std::shared_ptr<grpc::Channel> MakeChannel(const std::string& target, const TlsOptions& tls,
                                           grpc::ChannelArguments args);

}  // namespace gphkv

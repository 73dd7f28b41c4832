#include "gphkv/client/tls.h"

#include <grpcpp/grpcpp.h>

#include "tls/pem_files.h"

namespace gphkv {

absl::StatusOr<TlsOptions> LoadTlsFiles(const TlsFiles& files) {
  TlsOptions tls;
  tls.enabled = files.on();
  tls.server_name = files.server_name;
  if (!files.ca_file.empty()) {
    auto ca = tls::ReadCertificates("--tls_ca", files.ca_file);
    if (!ca.ok()) return ca.status();
    tls.root_certificates = std::move(*ca);
  }
  auto pair = tls::ReadKeyPair("--tls_cert", files.cert_file, "--tls_key", files.key_file);
  if (!pair.ok()) return pair.status();
  tls.certificate_chain = std::move(pair->certificate_chain);
  tls.private_key = std::move(pair->private_key);
  return tls;
}

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& target, const TlsOptions& tls,
                                           grpc::ChannelArguments args) {
  if (!tls.enabled) return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = tls.root_certificates;
  ssl.pem_cert_chain = tls.certificate_chain;
  ssl.pem_private_key = tls.private_key;
  if (!tls.server_name.empty()) args.SetSslTargetNameOverride(tls.server_name);
  return grpc::CreateCustomChannel(target, grpc::SslCredentials(ssl), args);
}

}  // namespace gphkv

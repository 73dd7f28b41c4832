#include "tls/pem_files.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>

#include "absl/strings/str_cat.h"

namespace gphkv::tls {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using Bio = std::unique_ptr<BIO, BioFree>;
using Certificate = std::unique_ptr<X509, X509Free>;
using PrivateKey = std::unique_ptr<EVP_PKEY, KeyFree>;

Bio memory_bio(const std::string& pem) { return Bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()))); }

// The last reason on OpenSSL's error queue, which it clears.
std::string openssl_reason() {
  const unsigned long e = ERR_peek_last_error();
  ERR_clear_error();
  if (e == 0) return "no detail from OpenSSL";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  return buf;
}

// Whether the queue's last error is "no more PEM blocks": the end of a file.
bool at_end_of_pem() {
  const unsigned long e = ERR_peek_last_error();
  return ERR_GET_LIB(e) == ERR_LIB_PEM && ERR_GET_REASON(e) == PEM_R_NO_START_LINE;
}

// Refuses encrypted keys instead of prompting on the terminal for a pass
// phrase (OpenSSL's default): gRPC takes unencrypted keys only.
int no_pass_phrase(char*, int, int, void*) { return 0; }

}  // namespace

absl::StatusOr<std::string> ReadPemFile(absl::string_view what, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    const std::string why = absl::StrCat("cannot read ", what, "=", path, ": ", std::strerror(err));
    if (err == ENOENT) return absl::NotFoundError(why);
    if (err == EACCES) return absl::PermissionDeniedError(why);
    return absl::InvalidArgumentError(why);
  }
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return absl::InvalidArgumentError(absl::StrCat("cannot read ", what, "=", path));
  if (text.empty()) return absl::InvalidArgumentError(absl::StrCat(what, "=", path, " is empty"));
  return text;
}

absl::Status CheckCertificates(absl::string_view what, const std::string& pem) {
  ERR_clear_error();
  Bio bio = memory_bio(pem);
  int count = 0;
  while (Certificate cert{PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)}) ++count;
  if (count > 0 && at_end_of_pem()) {
    ERR_clear_error();
    return absl::OkStatus();
  }
  if (count == 0 && at_end_of_pem()) {
    ERR_clear_error();
    return absl::InvalidArgumentError(absl::StrCat(what, " holds no PEM certificate (BEGIN CERTIFICATE)"));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("certificate ", count + 1, " in ", what, " does not parse: ", openssl_reason()));
}

absl::Status CheckKeyPair(absl::string_view chain_what, const std::string& chain_pem, absl::string_view key_what,
                          const std::string& key_pem) {
  if (absl::Status s = CheckCertificates(chain_what, chain_pem); !s.ok()) return s;
  ERR_clear_error();
  Bio chain = memory_bio(chain_pem);
  Certificate leaf(PEM_read_bio_X509(chain.get(), nullptr, nullptr, nullptr));
  Bio key_bio = memory_bio(key_pem);
  PrivateKey key(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, no_pass_phrase, nullptr));
  if (!key) {
    return absl::InvalidArgumentError(
        absl::StrCat(key_what, " holds no unencrypted PEM private key: ", openssl_reason()));
  }
  if (X509_check_private_key(leaf.get(), key.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(
        absl::StrCat(key_what, " does not belong to the certificate in ", chain_what, " (its first certificate)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<KeyPair> ReadKeyPair(absl::string_view cert_flag, const std::string& cert_path,
                                    absl::string_view key_flag, const std::string& key_path) {
  if (cert_path.empty() && key_path.empty()) return KeyPair{};
  if (cert_path.empty() || key_path.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(cert_flag, " and ", key_flag, " go together"));
  }
  auto cert = ReadPemFile(cert_flag, cert_path);
  if (!cert.ok()) return cert.status();
  auto key = ReadPemFile(key_flag, key_path);
  if (!key.ok()) return key.status();
  if (absl::Status s =
          CheckKeyPair(absl::StrCat(cert_flag, "=", cert_path), *cert, absl::StrCat(key_flag, "=", key_path), *key);
      !s.ok()) {
    return s;
  }
  return KeyPair{std::move(*cert), std::move(*key)};
}

absl::StatusOr<std::string> ReadCertificates(absl::string_view flag, const std::string& path) {
  auto pem = ReadPemFile(flag, path);
  if (!pem.ok()) return pem.status();
  if (absl::Status s = CheckCertificates(absl::StrCat(flag, "=", path), *pem); !s.ok()) return s;
  return pem;
}

}  // namespace gphkv::tls

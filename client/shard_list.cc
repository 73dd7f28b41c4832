#include "gphkv/client/shard_list.h"

#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <memory>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace gphkv {
namespace {

constexpr absl::string_view kDnsScheme = "dns:///";

struct AddrinfoFree {
  void operator()(addrinfo* a) const { freeaddrinfo(a); }
};

// "NAME:PORT" or "[V6]:PORT" -> NAME, PORT.
absl::Status split_host_port(absl::string_view text, std::string* host, std::string* port) {
  const size_t colon = text.rfind(':');
  uint32_t number = 0;
  if (colon == absl::string_view::npos || !absl::SimpleAtoi(text.substr(colon + 1), &number) || number == 0 ||
      number > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("'", text, "' is not NAME:PORT"));
  }
  absl::string_view h = text.substr(0, colon);
  if (absl::ConsumePrefix(&h, "[") && !absl::ConsumeSuffix(&h, "]")) {
    return absl::InvalidArgumentError(absl::StrCat("'", text, "': unclosed [ in an IPv6 address"));
  }
  if (h.empty()) return absl::InvalidArgumentError(absl::StrCat("'", text, "' has no host"));
  *host = std::string(h);
  *port = std::string(text.substr(colon + 1));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ResolvedAddress>> resolve(const std::string& host, const std::string& port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    const std::string why = absl::StrCat("cannot resolve dns:///", host, ":", port, ": ", gai_strerror(rc));
    return rc == EAI_NONAME ? absl::NotFoundError(why) : absl::UnavailableError(why);
  }
  std::unique_ptr<addrinfo, AddrinfoFree> owned(found);
  std::vector<ResolvedAddress> out;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    char address[NI_MAXHOST], name[NI_MAXHOST];
    if (getnameinfo(a->ai_addr, a->ai_addrlen, address, sizeof(address), nullptr, 0, NI_NUMERICHOST) != 0) continue;
    ResolvedAddress r{address, ""};
    if (getnameinfo(a->ai_addr, a->ai_addrlen, name, sizeof(name), nullptr, 0, NI_NAMEREQD) == 0) {
      r.reverse_name = name;
    }
    out.push_back(std::move(r));
  }
  if (out.empty()) return absl::NotFoundError(absl::StrCat("dns:///", host, ":", port, " has no addresses"));
  return out;
}

}  // namespace

std::vector<std::string> ShardsOfAddresses(const std::vector<ResolvedAddress>& addresses, absl::string_view port) {
  std::set<std::string> shards;
  for (const ResolvedAddress& a : addresses) {
    if (!a.reverse_name.empty()) {
      shards.insert(absl::StrCat(a.reverse_name, ":", port));
    } else if (absl::StrContains(a.address, ':')) {
      shards.insert(absl::StrCat("[", a.address, "]:", port));
    } else {
      shards.insert(absl::StrCat(a.address, ":", port));
    }
  }
  return std::vector<std::string>(shards.begin(), shards.end());
}

TlsOptions ShardTlsOptions(const ShardList& list, TlsOptions tls) {
  if (tls.enabled && tls.server_name.empty()) tls.server_name = list.dns_name;
  return tls;
}

absl::StatusOr<ShardList> ResolveShardList(const std::string& servers) {
  std::vector<std::string> entries;
  for (absl::string_view e : absl::StrSplit(servers, ',')) entries.emplace_back(absl::StripAsciiWhitespace(e));
  ShardList list;
  for (const std::string& e : entries) {
    if (e.empty()) return absl::InvalidArgumentError(absl::StrCat("server list '", servers, "' has an empty entry"));
    if (!absl::StartsWith(e, kDnsScheme)) continue;
    if (entries.size() > 1) {
      return absl::InvalidArgumentError(absl::StrCat("server list '", servers, "': ", kDnsScheme,
                                                     "NAME:PORT stands alone (its addresses are the shards)"));
    }
    std::string host, port;
    if (auto s = split_host_port(absl::string_view(e).substr(kDnsScheme.size()), &host, &port); !s.ok()) return s;
    auto addresses = resolve(host, port);
    if (!addresses.ok()) return addresses.status();
    list.shards = ShardsOfAddresses(*addresses, port);
    list.dns_name = host;
    return list;
  }
  std::set<std::string> seen;
  for (const std::string& e : entries) {
    if (!seen.insert(e).second) {
      return absl::InvalidArgumentError(absl::StrCat("server list '", servers, "' names ", e, " twice"));
    }
  }
  list.shards = std::move(entries);
  return list;
}

}  // namespace gphkv

// The shards a server list names: what ShardedClient, the CLI's --server and
// the load generator's --address take.
//
//   host:port            one shard (gRPC resolves the host itself, again on reconnect)
//   a:1,b:2,c:3          one shard per entry
//   dns:///NAME:PORT     one shard per address NAME resolves to now (getaddrinfo: A and
//                        AAAA records): a StatefulSet's headless Service resolves to every pod
//
// A resolved address's shard is named by its reverse lookup when it has one
// (getnameinfo; in Kubernetes, the pod's stable name
// gphkv-0.gphkv-shards.NS.svc.cluster.local), else by the address itself.
// Keys hash over these names (shard_router.h): a pod that restarts with a new
// IP keeps its keys, and the channel to a named shard follows the new IP on
// its own. Addresses that resolve back to one name are one shard (a
// dual-stack host). gphkv does not watch NAME: ShardedClient::Refresh()
// resolves it again.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "gphkv/client/tls.h"

namespace gphkv {

struct ShardList {
  std::vector<std::string> shards;  // host:port each, no two alike
  std::string dns_name;             // NAME of a dns:/// list; empty for a list of addresses
};

// INVALID_ARGUMENT for an empty entry, an entry given twice, or dns:///
// beside other entries; NOT_FOUND or UNAVAILABLE when NAME does not resolve.
absl::StatusOr<ShardList> ResolveShardList(const std::string& servers);

// `tls` for the shards of `list`: the shards of a DNS name present
// certificates for that name, not for the addresses it resolved to, so an
// unset server_name becomes the name.
TlsOptions ShardTlsOptions(const ShardList& list, TlsOptions tls);

// One address of a dns:/// name and the name it resolves back to ("" if none).
struct ResolvedAddress {
  std::string address;  // numeric: 10.0.0.7, fd00::7
  std::string reverse_name;
};
// The shards of those addresses, each "name:port" or "address:port"
// ("[v6]:port"), sorted, without repeats (exposed for tests).
std::vector<std::string> ShardsOfAddresses(const std::vector<ResolvedAddress>& addresses, absl::string_view port);

}  // namespace gphkv

// gphkv: the command-line client.
//
//   gphkv [--server=host:port[,host:port...] | --server=dns:///NAME:PORT]
//         [--tls_ca=F [--tls_cert=F --tls_key=F]] [--timeout=5s] [--json] COMMAND ARGS
//         [--key_format=auto|u64|bytes|hex]
//     get KEY...            values of keys (--raw: value bytes only)
//     put KEY VALUE         store VALUE; put KEY --file=F; put KEY - (stdin)
//     del KEY...            remove keys
//     add|replace|append|prepend KEY VALUE, incr|decr KEY [DELTA]
//                           conditional writes (docs/service.md); a refusal exits 1
//     cas --cas=N KEY VALUE store only if KEY's CAS version is N (a refusal exits 1)
//     gets KEY...           values with their flags, expiry and CAS version (byte keys)
//     touch --ttl=S KEY...  set the keys' expiry, keeping their values (byte keys)
//   put, add, replace and cas take --ttl=SECONDS (memcached's exptime) and
//   --flags=N for byte keys (docs/service.md, "Item fields").
//     stats                 the server's table, memory, batching and data directory state
//     shrink                rebuild the table for the keys stored now (after mass deletes)
//     health                exit 0 when the server reports SERVING
//
// Several servers are shards: each key goes to its own (gphkv::ShardedClient);
// stats, shrink and health ask every shard. Keys are uint64 keys or byte keys
// (client/cli_keys.h says how an argument becomes one, and how keys print); a
// get or del of both kinds is one call per kind.
//
// Exit status: 0 success; 1 a key was not found (get), a conditional write
// was refused (ALREADY_EXISTS, NOT_FOUND), or the server is not serving (health); 2 usage error; 3 the RPC failed.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "client/cli_keys.h"
#include "flags/program_flags.h"
#include "gphkv/client/sharded_client.h"

ABSL_FLAG(std::string, server, "localhost:50051",
          "gphkv-server address, host:port; several (a:1,b:2) or dns:///NAME:PORT (every address of NAME) are "
          "shards, each key on its own");
ABSL_FLAG(bool, tls, false, "TLS, trusting gRPC's default CA roots (implied by --tls_ca and --tls_cert)");
ABSL_FLAG(std::string, tls_ca, "", "TLS: PEM CA certificates that may sign the server's certificate");
ABSL_FLAG(std::string, tls_cert, "", "TLS: PEM client certificate, for servers that require one (with --tls_key)");
ABSL_FLAG(std::string, tls_key, "", "TLS: PEM private key of --tls_cert");
ABSL_FLAG(std::string, tls_server_name, "",
          "TLS: the name the server's certificate must carry, when not the --server host (e.g. dialling an IP)");
ABSL_FLAG(absl::Duration, timeout, absl::Seconds(5), "deadline of each call (e.g. 500ms, 5s)");
ABSL_FLAG(bool, json, false, "print one JSON object (for scripts) instead of text");
ABSL_FLAG(bool, raw, false, "get: write only the value bytes of found keys, nothing else");
ABSL_FLAG(std::string, file, "", "put: read the value from this file");
ABSL_FLAG(int64_t, ttl, 0,
          "put/add/replace/cas/touch, byte keys: the expiry by memcached's rule (0 never; up to 2592000 seconds "
          "from now; beyond, an absolute unix time; negative, expired at once)");
ABSL_FLAG(uint32_t, flags, 0, "put/add/replace/cas, byte keys: 32 bits of client flags stored with the item");
ABSL_FLAG(uint64_t, cas, 0, "cas: the CAS version the item must hold (gets prints it)");
ABSL_FLAG(std::string, key_format, "auto",
          "how KEY arguments are read: auto (decimal digits or 0x and hex digits are a uint64 key, anything else a "
          "byte key), u64 (uint64 keys only), bytes (every KEY is a byte key of its bytes: \"42\" is not 42), hex "
          "(byte keys written in hex, two digits a byte: 00ff is the key of bytes 0x00 0xff)");

namespace {

constexpr int kExitMissing = 1, kExitUsage = 2, kExitRpc = 3;

const char* kUsage =
    "the gphkv command-line client.\n"
    "Usage: gphkv [--server=host:port[,host:port...] | --server=dns:///NAME:PORT]\n"
    "             [--tls_ca=F [--tls_cert=F --tls_key=F]] [--timeout=5s] [--json]\n"
    "             [--key_format=auto|u64|bytes|hex] COMMAND ARGS\n"
    "  get KEY...          print the values of keys (--raw: value bytes only)\n"
    "  put KEY VALUE       store VALUE under KEY\n"
    "  put KEY --file=F    store the contents of file F\n"
    "  put KEY -           store standard input\n"
    "  del KEY...          remove keys\n"
    "  add KEY VALUE       store VALUE only if KEY is absent (replace: only if present)\n"
    "  append KEY VALUE    add VALUE after KEY's value (prepend: before it); KEY must be stored\n"
    "  incr KEY [DELTA]    add DELTA (default 1) to KEY's decimal value and print it (decr: subtract,\n"
    "                      stopping at 0). A refused add/replace/append/prepend/incr/decr exits 1\n"
    "  cas --cas=N KEY VALUE  store VALUE only if KEY's CAS version is N (else exits 1)\n"
    "  gets KEY...         print values with their flags, expiry and CAS version (byte keys)\n"
    "  touch --ttl=S KEY...  set the keys' expiry, keeping values and flags (byte keys)\n"
    "  put, add, replace and cas take --ttl=SECONDS and --flags=N (byte keys only)\n"
    "  stats               the server's table, memory, batching and data directory state\n"
    "  shrink              rebuild the table for the keys stored now (after mass deletes)\n"
    "  health              exit 0 when the server reports SERVING, 1 otherwise\n"
    "Keys: with --key_format=auto (the default) a KEY of decimal digits or 0x and hex digits is an\n"
    "unsigned 64-bit key, as before; anything else (user:42:profile) is a byte key of 1 to 250 bytes.\n"
    "--key_format=bytes reads every KEY as a byte key (\"42\" then differs from 42), =hex as the hex\n"
    "of its bytes (binary keys: 00ff), =u64 as integers only. Output shows a byte key as it is when\n"
    "printable, else double-quoted with C escapes (\"42\", \"\\x00k\").\n"
    "Several servers are shards: each key goes to its own; stats, shrink and health ask every shard.\n"
    "Exit status: 0 ok, 1 key not found / not stored / not serving, 2 usage, 3 RPC failed.";

int usage_error(const std::string& msg) {
  std::cerr << "gphkv: " << msg << "\n\ngphkv: " << kUsage << "\n";
  return kExitUsage;
}

int rpc_error(const absl::Status& s, bool json) {
  if (json) {
    std::cout << absl::StrFormat(R"({"error":{"code":"%s","message":"%s"}})", absl::StatusCodeToString(s.code()),
                                 absl::CEscape(s.message()))
              << "\n";
  }
  std::cerr << "gphkv: " << absl::StatusCodeToString(s.code()) << ": " << s.message() << "\n";
  return kExitRpc;
}

// The keys args[from..] name under --key_format; a usage error's message otherwise.
absl::StatusOr<std::vector<gphkv::cli::CliKey>> parse_keys(const std::vector<std::string>& args, size_t from) {
  auto format = gphkv::cli::ParseKeyFormat(absl::GetFlag(FLAGS_key_format));
  if (!format.ok()) return format.status();
  std::vector<gphkv::cli::CliKey> keys;
  for (size_t i = from; i < args.size(); ++i) {
    auto key = gphkv::cli::ParseKey(args[i], *format);
    if (!key.ok()) return key.status();
    keys.push_back(std::move(*key));
  }
  return keys;
}

// A list's answers, one call per kind of key present (a request carries one
// kind): r.at(i) is key i's answer and its index in that answer.
template <class R>
struct AnswersByKind {
  absl::Status status;          // the first failed call's
  std::optional<R> u64, bytes;  // each kind's answer, when it has keys
  std::vector<size_t> index;    // index[i]: key i's place among its kind's keys
  std::vector<bool> is_bytes;
  std::pair<const R&, size_t> at(size_t i) const { return {is_bytes[i] ? *bytes : *u64, index[i]}; }
};

template <class R, class Call>
AnswersByKind<R> call_by_kind(const std::vector<gphkv::cli::CliKey>& keys, Call&& call) {
  AnswersByKind<R> a;
  const gphkv::cli::KeysByKind by_kind = gphkv::cli::GroupByKind(keys);
  a.index.resize(keys.size());
  a.is_bytes.resize(keys.size());
  for (size_t j = 0; j < by_kind.u64_at.size(); ++j) a.index[by_kind.u64_at[j]] = j;
  for (size_t j = 0; j < by_kind.bytes_at.size(); ++j) {
    a.index[by_kind.bytes_at[j]] = j;
    a.is_bytes[by_kind.bytes_at[j]] = true;
  }
  auto run = [&](auto kind_keys, std::optional<R>* answer) {
    if (kind_keys.empty() || !a.status.ok()) return;
    absl::StatusOr<R> r = call(kind_keys);
    if (r.ok()) {
      answer->emplace(std::move(*r));
    } else {
      a.status = r.status();
    }
  };
  run(absl::Span<const uint64_t>(by_kind.u64), &a.u64);
  run(absl::Span<const std::string_view>(by_kind.bytes), &a.bytes);
  return a;
}

bool printable(std::string_view v) {
  for (unsigned char c : v) {
    if (c < 0x20 && c != '\t') return false;
    if (c >= 0x7f) return false;
  }
  return true;
}

// A JSON string literal for text that printable() accepted.
std::string json_string(std::string_view v) {
  std::string out = "\"";
  for (char c : v) {
    if (c == '"')
      out += "\\\"";
    else if (c == '\\')
      out += "\\\\";
    else if (c == '\t')
      out += "\\t";
    else
      out += c;
  }
  return out + "\"";
}

int cmd_get(gphkv::ShardedClient& client, const std::vector<std::string>& args, bool json) {
  if (args.size() < 3) return usage_error("get needs at least one KEY");
  auto keys = parse_keys(args, 2);
  if (!keys.ok()) return usage_error(std::string(keys.status().message()));
  auto answers = call_by_kind<gphkv::GetResult>(*keys, [&](auto kind_keys) { return client.Get(kind_keys); });
  if (!answers.status.ok()) return rpc_error(answers.status, json);
  bool all_found = true;
  const size_t n = keys->size();
  if (absl::GetFlag(FLAGS_raw)) {
    for (size_t i = 0; i < n; ++i) {
      const auto [r, at] = answers.at(i);
      all_found &= r.found(at);
      std::cout << r.value(at);
    }
  } else if (json) {
    std::cout << "{\"results\":[";
    for (size_t i = 0; i < n; ++i) {
      const auto [r, at] = answers.at(i);
      all_found &= r.found(at);
      std::cout << (i ? "," : "") << "{" << gphkv::cli::KeyJsonFields((*keys)[i])
                << ",\"found\":" << (r.found(at) ? "true" : "false");
      if (r.found(at)) {
        const std::string_view v = r.value(at);
        std::cout << ",\"length\":" << v.size() << ",\"value_base64\":\""
                  << absl::Base64Escape(absl::string_view(v.data(), v.size())) << "\"";
        if (printable(v)) std::cout << ",\"value\":" << json_string(v);
      }
      std::cout << "}";
    }
    std::cout << "]}\n";
  } else {
    for (size_t i = 0; i < n; ++i) {
      const auto [r, at] = answers.at(i);
      all_found &= r.found(at);
      std::cout << gphkv::cli::KeyText((*keys)[i]) << "\t";
      if (!r.found(at)) {
        std::cout << "(not found)\n";
        continue;
      }
      const std::string_view v = r.value(at);
      if (printable(v)) {
        std::cout << v << "\n";
      } else {
        std::cout << "(" << v.size() << " bytes) \"" << absl::CHexEscape(absl::string_view(v.data(), v.size()))
                  << "\"\n";
      }
    }
  }
  return all_found ? 0 : kExitMissing;
}

// A write's item fields from --ttl, --flags and --cas.
gphkv::WriteOptions item_options(gphkv::v1::WriteMode mode) {
  gphkv::WriteOptions o;
  o.mode = mode;
  o.exptime = absl::GetFlag(FLAGS_ttl);
  o.flags = absl::GetFlag(FLAGS_flags);
  if (mode == gphkv::v1::WRITE_MODE_CAS) o.cas = absl::GetFlag(FLAGS_cas);
  return o;
}

int cmd_put(gphkv::ShardedClient& client, const std::vector<std::string>& args, bool json) {
  const std::string file = absl::GetFlag(FLAGS_file);
  if (args.size() < 3) return usage_error("put needs KEY and VALUE, KEY --file=F, or KEY -");
  auto parsed = parse_keys({args[2]}, 0);
  if (!parsed.ok()) return usage_error(std::string(parsed.status().message()));
  const gphkv::cli::CliKey& key = (*parsed)[0];
  std::string value;
  if (!file.empty()) {
    if (args.size() != 3) return usage_error("put KEY --file=F takes no VALUE argument");
    std::ifstream in(file, std::ios::binary);
    if (!in) return usage_error("cannot read --file=" + file);
    value.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  } else if (args.size() == 4 && args[3] == "-") {
    std::ostringstream ss;
    ss << std::cin.rdbuf();
    value = ss.str();
  } else if (args.size() == 4) {
    value = args[3];
  } else {
    return usage_error("put needs exactly KEY and VALUE (or KEY --file=F, or KEY - for stdin)");
  }
  const std::vector<std::string_view> values{value};
  const gphkv::WriteOptions item = item_options(gphkv::v1::WRITE_MODE_SET);
  if (!key.is_bytes && (item.flags != 0 || item.exptime != 0)) {
    return usage_error("--ttl and --flags are for byte keys only");
  }
  absl::StatusOr<std::vector<bool>> r;
  if (key.is_bytes && (item.flags != 0 || item.exptime != 0)) {
    auto written = client.Write(std::string_view(key.bytes), value, item);
    if (written.ok()) {
      r = std::vector<bool>{written->created_size() > 0 && written->created(0)};
    } else {
      r = written.status();
    }
  } else {
    r = key.is_bytes ? client.Put(std::vector<std::string_view>{key.bytes}, values)
                     : client.Put(std::vector<uint64_t>{key.u64}, values);
  }
  if (!r.ok()) return rpc_error(r.status(), json);
  const bool created = (*r)[0];
  if (json) {
    std::cout << "{" << gphkv::cli::KeyJsonFields(key) << ",\"created\":" << (created ? "true" : "false")
              << ",\"length\":" << value.size() << "}\n";
  } else {
    std::cout << gphkv::cli::KeyText(key) << "\t" << (created ? "created" : "replaced") << " (" << value.size()
              << " bytes)\n";
  }
  return 0;
}

// add, replace, append, prepend, incr, decr: one conditional write
// (docs/service.md, "Conditional writes").
int cmd_write(gphkv::ShardedClient& client, const std::vector<std::string>& args, gphkv::v1::WriteMode mode,
              bool json) {
  const bool counter = mode == gphkv::v1::WRITE_MODE_INCREMENT || mode == gphkv::v1::WRITE_MODE_DECREMENT;
  if (counter ? (args.size() < 3 || args.size() > 4) : args.size() != 4) {
    return usage_error(absl::StrCat(args[1], counter ? " needs KEY and an optional DELTA" : " needs KEY and VALUE"));
  }
  auto parsed = parse_keys({args[2]}, 0);
  if (!parsed.ok()) return usage_error(std::string(parsed.status().message()));
  const gphkv::cli::CliKey& key = (*parsed)[0];
  const std::string value = args.size() == 4 ? args[3] : "1";
  const gphkv::WriteOptions item = item_options(mode);
  const bool has_item_fields = item.flags != 0 || item.exptime != 0 || mode == gphkv::v1::WRITE_MODE_CAS;
  if (!key.is_bytes && has_item_fields) return usage_error("--ttl, --flags and cas are for byte keys only");
  if (mode == gphkv::v1::WRITE_MODE_CAS && item.cas == 0) return usage_error("cas needs --cas=N (gets prints N)");
  auto r = key.is_bytes ? client.Write(std::string_view(key.bytes), value, item) : client.Write(key.u64, value, mode);
  if (!r.ok()) {
    const absl::StatusCode code = r.status().code();
    if (code != absl::StatusCode::kAlreadyExists && code != absl::StatusCode::kNotFound &&
        code != absl::StatusCode::kAborted) {
      return rpc_error(r.status(), json);
    }
    // The store said no: nothing changed, and that is an answer, not a failure.
    if (json) {
      std::cout << "{" << gphkv::cli::KeyJsonFields(key) << ",\"stored\":false,\"code\":\""
                << absl::StatusCodeToString(code) << "\"}\n";
    } else {
      std::cout << gphkv::cli::KeyText(key) << "\tnot stored (" << absl::StatusCodeToString(code) << ")\n";
    }
    return kExitMissing;
  }
  if (json) {
    std::cout << "{" << gphkv::cli::KeyJsonFields(key) << ",\"stored\":true";
    if (counter) std::cout << ",\"value\":" << r->counter();
    std::cout << "}\n";
  } else if (counter) {
    std::cout << gphkv::cli::KeyText(key) << "\t" << r->counter() << "\n";
  } else {
    std::cout << gphkv::cli::KeyText(key) << "\tstored\n";
  }
  return 0;
}

// The byte keys args[from..] name; a usage error's message for a uint64 key.
absl::StatusOr<std::vector<gphkv::cli::CliKey>> parse_byte_keys(const std::vector<std::string>& args, size_t from) {
  auto keys = parse_keys(args, from);
  if (!keys.ok()) return keys.status();
  for (const gphkv::cli::CliKey& k : *keys) {
    if (!k.is_bytes) {
      return absl::InvalidArgumentError(absl::StrCat(gphkv::cli::KeyText(k),
                                                     " is a uint64 key; only byte keys carry flags, expiry and CAS "
                                                     "(--key_format=bytes reads it as one)"));
    }
  }
  return keys;
}

// gets (with_items) and touch: each key's value and item fields; exit 1 when one is missing.
int cmd_items(gphkv::ShardedClient& client, const std::vector<std::string>& args, bool touch, bool json) {
  if (args.size() < 3) return usage_error(absl::StrCat(args[1], " needs at least one KEY"));
  auto keys = parse_byte_keys(args, 2);
  if (!keys.ok()) return usage_error(std::string(keys.status().message()));
  std::vector<std::string_view> views;
  for (const gphkv::cli::CliKey& k : *keys) views.push_back(k.bytes);
  auto r = touch ? client.Touch(views, absl::GetFlag(FLAGS_ttl)) : client.GetItems(views);
  if (!r.ok()) return rpc_error(r.status(), json);
  bool all_found = true;
  size_t offset = 0;
  if (json) std::cout << "{\"results\":[";
  for (size_t i = 0; i < keys->size(); ++i) {
    const int k = static_cast<int>(i);
    const bool found = k < r->found_size() && r->found(k);
    all_found &= found;
    const uint32_t len = k < r->value_lengths_size() ? r->value_lengths(k) : 0;
    const std::string_view v = std::string_view(r->values()).substr(std::min<size_t>(offset, r->values().size()), len);
    offset += len;
    const uint32_t flags = k < r->flags_size() ? r->flags(k) : 0;
    const uint32_t exptime = k < r->exptime_size() ? r->exptime(k) : 0;
    const uint64_t cas = k < r->cas_size() ? r->cas(k) : 0;
    if (json) {
      std::cout << (i ? "," : "") << "{" << gphkv::cli::KeyJsonFields((*keys)[i])
                << ",\"found\":" << (found ? "true" : "false");
      if (found) {
        std::cout << ",\"flags\":" << flags << ",\"exptime\":" << exptime << ",\"cas\":" << cas;
        if (!touch) {
          std::cout << ",\"length\":" << v.size() << ",\"value_base64\":\""
                    << absl::Base64Escape(absl::string_view(v.data(), v.size())) << "\"";
          if (printable(v)) std::cout << ",\"value\":" << json_string(v);
        }
      }
      std::cout << "}";
      continue;
    }
    std::cout << gphkv::cli::KeyText((*keys)[i]) << "\t";
    if (!found) {
      std::cout << "(not found)\n";
      continue;
    }
    if (touch) {
      std::cout << "touched\n";
      continue;
    }
    std::cout << "flags=" << flags << " exptime=" << exptime << " cas=" << cas << "\t";
    if (printable(v)) {
      std::cout << v << "\n";
    } else {
      std::cout << "(" << v.size() << " bytes) \"" << absl::CHexEscape(absl::string_view(v.data(), v.size())) << "\"\n";
    }
  }
  if (json) std::cout << "]}\n";
  return all_found ? 0 : kExitMissing;
}

int cmd_del(gphkv::ShardedClient& client, const std::vector<std::string>& args, bool json) {
  if (args.size() < 3) return usage_error("del needs at least one KEY");
  auto keys = parse_keys(args, 2);
  if (!keys.ok()) return usage_error(std::string(keys.status().message()));
  auto answers = call_by_kind<std::vector<bool>>(*keys, [&](auto kind_keys) { return client.Delete(kind_keys); });
  if (!answers.status.ok()) return rpc_error(answers.status, json);
  if (json) std::cout << "{\"results\":[";
  for (size_t i = 0; i < keys->size(); ++i) {
    const auto [r, at] = answers.at(i);
    if (json) {
      std::cout << (i ? "," : "") << "{" << gphkv::cli::KeyJsonFields((*keys)[i])
                << ",\"deleted\":" << (r[at] ? "true" : "false") << "}";
    } else {
      std::cout << gphkv::cli::KeyText((*keys)[i]) << "\t" << (r[at] ? "deleted" : "(not found)") << "\n";
    }
  }
  if (json) std::cout << "]}\n";
  return 0;
}

// A JSON array of strings.
std::string json_strings(const google::protobuf::RepeatedPtrField<std::string>& items) {
  std::string out = "[";
  for (const std::string& item : items) {
    absl::StrAppend(&out, out.size() > 1 ? "," : "", "\"", absl::CEscape(item), "\"");
  }
  return out + "]";
}

// The data directory's fields of `stats --json`, as one object.
std::string data_dir_json(const gphkv::v1::DataDirStats& d) {
  return absl::StrFormat(
      R"({"dir":"%s","fsync":"%s","last_sequence":%d,"durable_sequence":%d,"log_segments":%d,"log_bytes":%d,)"
      R"("log_written_bytes":%d,"fsyncs":%d,"fsyncs_behind":%d,"log_error":"%s","snapshot_sequence":%d,)"
      R"("snapshot_bytes":%d,"snapshot_age_seconds":%.3f,"snapshots":%d,"last_snapshot_seconds":%.3f,)"
      R"("snapshot_running":%s,"last_snapshot_error":"%s","recovery_seconds":%.3f,"recovered_snapshot":"%s",)"
      R"("recovered_snapshot_pairs":%d,"recovered_batches":%d,"recovered_keys":%d,"torn_bytes_cut":%d,)"
      R"("recovery_dropped":%s,"recovery_warnings":%s})",
      absl::CEscape(d.dir()), d.fsync(), d.last_sequence(), d.durable_sequence(), d.log_segments(), d.log_bytes(),
      d.log_written_bytes(), d.fsyncs(), d.fsyncs_behind(), absl::CEscape(d.log_error()), d.snapshot_sequence(),
      d.snapshot_bytes(), d.snapshot_age_seconds(), d.snapshots(), d.last_snapshot_seconds(),
      d.snapshot_running() ? "true" : "false", absl::CEscape(d.last_snapshot_error()), d.recovery_seconds(),
      absl::CEscape(d.recovered_snapshot()), d.recovered_snapshot_pairs(), d.recovered_batches(), d.recovered_keys(),
      d.torn_bytes_cut(), json_strings(d.recovery_dropped()), json_strings(d.recovery_warnings()));
}

// The data directory's lines of `stats`.
std::string data_dir_text(const gphkv::v1::DataDirStats& d) {
  std::string out = absl::StrFormat(
      "data_dir           %s\nfsync              %s\nlog_sequence       %d (on disk: %d)\n"
      "log                %d segments, %d bytes (%d written since start, %d fsyncs, %d fell behind)\n",
      d.dir(), d.fsync(), d.last_sequence(), d.durable_sequence(), d.log_segments(), d.log_bytes(),
      d.log_written_bytes(), d.fsyncs(), d.fsyncs_behind());
  if (!d.log_error().empty()) absl::StrAppend(&out, "log_error          ", d.log_error(), "\n");
  if (d.snapshot_sequence() == 0 && d.snapshot_age_seconds() < 0) {
    absl::StrAppend(&out, "snapshot           none\n");
  } else {
    absl::StrAppend(&out, absl::StrFormat("snapshot           of batch %d, %d bytes, %.1f s old\n",
                                          d.snapshot_sequence(), d.snapshot_bytes(), d.snapshot_age_seconds()));
  }
  absl::StrAppend(&out, absl::StrFormat("snapshots          %d taken, the last in %.2f s%s\n", d.snapshots(),
                                        d.last_snapshot_seconds(), d.snapshot_running() ? "; writing one now" : ""));
  if (!d.last_snapshot_error().empty()) absl::StrAppend(&out, "snapshot_error     ", d.last_snapshot_error(), "\n");
  absl::StrAppend(
      &out,
      absl::StrFormat(
          "recovery           %.2f s: %s (%d pairs), then %d log batches: %d keys%s\n", d.recovery_seconds(),
          d.recovered_snapshot().empty() ? "no snapshot" : d.recovered_snapshot(), d.recovered_snapshot_pairs(),
          d.recovered_batches(), d.recovered_keys(),
          d.torn_bytes_cut() > 0 ? absl::StrCat("; a torn last record of ", d.torn_bytes_cut(), " bytes cut") : ""));
  for (const std::string& w : d.recovery_warnings()) absl::StrAppend(&out, "recovery_warning   ", w, "\n");
  for (const std::string& x : d.recovery_dropped()) absl::StrAppend(&out, "recovery_dropped   ", x, "\n");
  return out;
}

// One partition (a GPU, or one of the CPU backend's --partitions) of `stats --json`.
std::string partition_json(const gphkv::v1::PartitionStats& p) {
  return absl::StrFormat(R"({"partition":%d,"gpu":%d,"device":"%s","keys":%d,"load_factor":%.6f,"table_bytes":%d,)"
                         R"("value_heap_bytes":%d,"memory_limit_bytes":%d,"rebuilds":%d,"batches":%d,)"
                         R"("batched_keys":%d,"evictions":%d,"items_swept":%d,"rebuilding":%s%s})",
                         p.partition(), p.gpu(), absl::CEscape(p.device()), p.keys(), p.load_factor(), p.table_bytes(),
                         p.value_heap_bytes(), p.memory_limit_bytes(), p.rebuilds(), p.batches(), p.batched_keys(),
                         p.evictions(), p.items_swept(), p.rebuilding() ? "true" : "false",
                         p.has_data_dir() ? absl::StrCat(",\"data_dir\":", data_dir_json(p.data_dir())) : "");
}

std::string stats_json(const gphkv::v1::StatsResponse& s) {
  std::string partitions;
  for (const auto& p : s.partitions()) absl::StrAppend(&partitions, partitions.empty() ? "" : ",", partition_json(p));
  return absl::StrFormat(
      R"({"backend":"%s","device":"%s","keys":%d,"load_factor":%.6f,"table_bytes":%d,)"
      R"("value_heap_bytes":%d,"memory_limit_bytes":%d,"rebuilds":%d,"batches":%d,)"
      R"("batched_keys":%d,"evictions":%d,"items_swept":%d,"uptime_seconds":%.3f,"version":"%s","rebuilding":%s%s,)"
      R"("partitions":[%s]})",
      absl::CEscape(s.backend()), absl::CEscape(s.device()), s.keys(), s.load_factor(), s.table_bytes(),
      s.value_heap_bytes(), s.memory_limit_bytes(), s.rebuilds(), s.batches(), s.batched_keys(), s.evictions(),
      s.items_swept(), s.uptime_seconds(), absl::CEscape(s.version()), s.rebuilding() ? "true" : "false",
      s.has_data_dir() ? absl::StrCat(",\"data_dir\":", data_dir_json(s.data_dir())) : "", partitions);
}

// A line per partition, when there are several (the lines above are their totals).
std::string partitions_text(const gphkv::v1::StatsResponse& s) {
  if (s.partitions_size() < 2) return "";
  std::string out = absl::StrFormat("partitions         %d (keys placed by a hash of the key)\n", s.partitions_size());
  for (const auto& p : s.partitions()) {
    absl::StrAppend(&out, absl::StrFormat("partition %-8s %d keys, load_factor %.4f, table %d bytes, value heap %d "
                                          "bytes, limit %d bytes, %d batches%s\n",
                                          p.gpu() >= 0 ? absl::StrCat(p.partition(), " gpu ", p.gpu())
                                                       : absl::StrCat(p.partition()),
                                          p.keys(), p.load_factor(), p.table_bytes(), p.value_heap_bytes(),
                                          p.memory_limit_bytes(), p.batches(), p.rebuilding() ? ", rebuilding" : ""));
  }
  return out;
}

std::string stats_text(const gphkv::v1::StatsResponse& s) {
  return absl::StrFormat(
             "version            %s\nbackend            %s\ndevice             %s\nkeys               %d\n"
             "load_factor        %.4f\ntable_bytes        %d\nvalue_heap_bytes   %d\n"
             "memory_limit_bytes %d\nrebuilds           %d\nrebuilding         %s\nbatches            %d\n"
             "batched_keys       %d\nevictions          %d\nitems_swept        %d\nuptime_seconds     %.1f\n",
             s.version(), s.backend(), s.device(), s.keys(), s.load_factor(), s.table_bytes(), s.value_heap_bytes(),
             s.memory_limit_bytes(), s.rebuilds(), s.rebuilding() ? "yes" : "no", s.batches(), s.batched_keys(),
             s.evictions(), s.items_swept(), s.uptime_seconds()) +
         partitions_text(s) + (s.has_data_dir() ? data_dir_text(s.data_dir()) : "data_dir           (none)\n");
}

std::string shrink_json(const gphkv::v1::ShrinkResponse& s) {
  return absl::StrFormat(R"({"started":%s,"keys":%d,"table_bytes":%d,"new_table_bytes":%d})",
                         s.started() ? "true" : "false", s.keys(), s.table_bytes(), s.new_table_bytes());
}

std::string shrink_text(const gphkv::v1::ShrinkResponse& s) {
  if (s.started()) {
    return absl::StrFormat(
        "rebuild started: %d keys, table %d bytes -> %d bytes (swapped in between batches; "
        "`gphkv stats` shows it)\n",
        s.keys(), s.table_bytes(), s.new_table_bytes());
  }
  return absl::StrFormat("nothing to do: the %d-byte table already fits its %d keys\n", s.table_bytes(), s.keys());
}

// Every shard's answer to stats or shrink. One shard prints as a lone server
// always did; several print one block (text) or object (JSON) each, named.
// Exit 3 when a shard failed (its error on stderr), after printing the others.
template <class T, class Text, class Json>
int print_per_shard(const std::vector<gphkv::ShardAnswer<absl::StatusOr<T>>>& answers, bool json, Text text,
                    Json to_json) {
  if (answers.size() == 1) {
    const auto& a = answers[0].answer;
    if (!a.ok()) return rpc_error(a.status(), json);
    std::cout << (json ? to_json(*a) + "\n" : text(*a));
    return 0;
  }
  int rc = 0;
  if (json) std::cout << "{\"shards\":[";
  for (size_t i = 0; i < answers.size(); ++i) {
    const auto& [shard, a] = answers[i];
    if (!a.ok()) {
      std::cerr << "gphkv: shard " << shard << ": " << absl::StatusCodeToString(a.status().code()) << ": "
                << a.status().message() << "\n";
      rc = kExitRpc;
    }
    if (json) {
      std::cout << (i ? "," : "") << "{\"shard\":\"" << absl::CEscape(shard) << "\",";
      if (a.ok()) {
        std::cout << "\"answer\":" << to_json(*a) << "}";
      } else {
        std::cout << absl::StrFormat(R"("error":{"code":"%s","message":"%s"}})",
                                     absl::StatusCodeToString(a.status().code()), absl::CEscape(a.status().message()));
      }
    } else {
      std::cout << (i ? "\n" : "") << "shard              " << shard << "\n"
                << (a.ok() ? text(*a) : absl::StrCat("(failed: ", absl::StatusCodeToString(a.status().code()), ")\n"));
    }
  }
  if (json) std::cout << "]}\n";
  return rc;
}

int cmd_stats(gphkv::ShardedClient& client, bool json) {
  return print_per_shard(client.Stats(), json, stats_text, stats_json);
}

int cmd_shrink(gphkv::ShardedClient& client, bool json) {
  return print_per_shard(client.Shrink(), json, shrink_text, shrink_json);
}

// Exit 0 when every shard reports SERVING.
int cmd_health(gphkv::ShardedClient& client, bool json) {
  const auto answers = client.Health();
  bool all = true;
  for (const auto& a : answers) all &= a.answer.ok();
  if (json) {
    std::cout << "{\"serving\":" << (all ? "true" : "false");
    if (answers.size() == 1 && !all)
      std::cout << ",\"message\":\"" << absl::CEscape(answers[0].answer.message()) << "\"";
    if (answers.size() > 1) {
      std::cout << ",\"shards\":[";
      for (size_t i = 0; i < answers.size(); ++i) {
        const auto& [shard, s] = answers[i];
        std::cout << (i ? "," : "") << "{\"shard\":\"" << absl::CEscape(shard)
                  << "\",\"serving\":" << (s.ok() ? "true" : "false");
        if (!s.ok()) std::cout << ",\"message\":\"" << absl::CEscape(s.message()) << "\"";
        std::cout << "}";
      }
      std::cout << "]";
    }
    std::cout << "}\n";
  } else {
    for (const auto& [shard, s] : answers) {
      std::cout << (s.ok() ? std::string("SERVING") : absl::StrCat("NOT SERVING: ", s.message()))
                << (answers.size() > 1 ? absl::StrCat("\t", shard) : "") << "\n";
    }
  }
  return all ? 0 : kExitMissing;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> positional = gphkv::ParseProgramFlags(argc, argv, {"gphkv", kUsage, {"client/cli_main.cc"}});
  std::vector<std::string> args(positional.begin(), positional.end());
  if (args.size() < 2) return usage_error("no command given");
  const bool json = absl::GetFlag(FLAGS_json);

  gphkv::ClientOptions options;
  options.timeout = std::chrono::milliseconds(absl::ToInt64Milliseconds(absl::GetFlag(FLAGS_timeout)));
  // The CLI answers once; health probes want a prompt verdict, not retries.
  options.max_attempts = args[1] == "health" ? 1 : 3;
  auto tls = gphkv::LoadTlsFiles({absl::GetFlag(FLAGS_tls), absl::GetFlag(FLAGS_tls_ca), absl::GetFlag(FLAGS_tls_cert),
                                  absl::GetFlag(FLAGS_tls_key), absl::GetFlag(FLAGS_tls_server_name)});
  if (!tls.ok()) return usage_error(std::string(tls.status().message()));
  options.tls = std::move(*tls);
  auto connected = gphkv::ShardedClient::Connect(absl::GetFlag(FLAGS_server), options);
  if (!connected.ok()) {
    if (connected.status().code() == absl::StatusCode::kInvalidArgument) {
      return usage_error(absl::StrCat("--server: ", connected.status().message()));
    }
    return rpc_error(connected.status(), json);
  }
  std::unique_ptr<gphkv::ShardedClient> client = std::move(*connected);

  const std::string& cmd = args[1];
  if (cmd == "get") return cmd_get(*client, args, json);
  if (cmd == "put") return cmd_put(*client, args, json);
  if (cmd == "del" || cmd == "delete") return cmd_del(*client, args, json);
  if (cmd == "add") return cmd_write(*client, args, gphkv::v1::WRITE_MODE_ADD, json);
  if (cmd == "replace") return cmd_write(*client, args, gphkv::v1::WRITE_MODE_REPLACE, json);
  if (cmd == "append") return cmd_write(*client, args, gphkv::v1::WRITE_MODE_APPEND, json);
  if (cmd == "prepend") return cmd_write(*client, args, gphkv::v1::WRITE_MODE_PREPEND, json);
  if (cmd == "incr") return cmd_write(*client, args, gphkv::v1::WRITE_MODE_INCREMENT, json);
  if (cmd == "decr") return cmd_write(*client, args, gphkv::v1::WRITE_MODE_DECREMENT, json);
  if (cmd == "cas") return cmd_write(*client, args, gphkv::v1::WRITE_MODE_CAS, json);
  if (cmd == "gets") return cmd_items(*client, args, /*touch=*/false, json);
  if (cmd == "touch") return cmd_items(*client, args, /*touch=*/true, json);
  if (cmd == "stats") {
    if (args.size() != 2) return usage_error("stats takes no arguments");
    return cmd_stats(*client, json);
  }
  if (cmd == "shrink") {
    if (args.size() != 2) return usage_error("shrink takes no arguments");
    return cmd_shrink(*client, json);
  }
  if (cmd == "health") {
    if (args.size() != 2) return usage_error("health takes no arguments");
    return cmd_health(*client, json);
  }
  return usage_error("unknown command '" + cmd + "'");
}

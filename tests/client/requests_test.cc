// Building requests of either kind of key (gphkv/client/requests.h), and the
// calls gphkv::Client refuses before sending anything: no server needed.
#include "gphkv/client/requests.h"

#include <string>
#include <vector>

#include <grpc/grpc.h>

#include "gphkv/client/client.h"
#include "gtest/gtest.h"

namespace gphkv {
namespace {

// Clients come and go: keep gRPC's library up (tests/server/test_server.h says why).
const bool kGrpcKept = (grpc_init(), true);

// The byte keys a request carries, split back by key_lengths.
template <class Request>
std::vector<std::string> byte_keys(const Request& req) {
  std::vector<std::string> out;
  size_t at = 0;
  for (uint32_t n : req.key_lengths()) {
    out.push_back(req.key_bytes().substr(at, n));
    at += n;
  }
  EXPECT_EQ(at, req.key_bytes().size());
  return out;
}

TEST(Requests, Uint64KeysFillKeysOnly) {
  const std::vector<uint64_t> keys = {42, 0, ~uint64_t{0}};
  const v1::GetRequest get = make_get_request(keys);
  EXPECT_EQ(std::vector<uint64_t>(get.keys().begin(), get.keys().end()), keys);
  EXPECT_TRUE(get.key_bytes().empty());
  EXPECT_EQ(get.key_lengths_size(), 0);
  EXPECT_EQ(get.value_mode(), v1::VALUE_MODE_UNSPECIFIED);
  EXPECT_EQ(make_get_request(keys, /*exists_only=*/true).value_mode(), v1::VALUE_MODE_EXISTS);
  EXPECT_EQ(make_delete_request(keys).keys_size(), 3);
  EXPECT_EQ(key_count(make_delete_request(keys)), 3u);
}

// Byte keys are packed the way values are: any bytes (NUL included), up to
// and past 250 bytes (the server judges lengths), and never in `keys`.
TEST(Requests, ByteKeysArePackedWithTheirLengths) {
  const std::string nul("a\0b", 3), longest(250, '\xff');
  const std::vector<std::string> owned = {"user:42:profile", nul, "42", longest, std::string(4096, 'x')};
  const std::vector<std::string_view> keys(owned.begin(), owned.end());
  const v1::GetRequest get = make_get_request(keys, /*exists_only=*/true);
  EXPECT_EQ(get.keys_size(), 0);
  EXPECT_EQ(byte_keys(get), owned);
  EXPECT_EQ(get.value_mode(), v1::VALUE_MODE_EXISTS);
  EXPECT_EQ(key_count(get), owned.size());
  const v1::DeleteRequest del = make_delete_request(keys);
  EXPECT_EQ(del.keys_size(), 0);
  EXPECT_EQ(byte_keys(del), owned);
}

TEST(Requests, PutCarriesKeysAndValuesOfEitherKind) {
  const std::vector<std::string_view> values = {"one", "", std::string_view("\0\0", 2)};
  const v1::PutRequest by_number = make_put_request(std::vector<uint64_t>{1, 2, 3}, values);
  EXPECT_EQ(by_number.keys_size(), 3);
  EXPECT_EQ(by_number.key_lengths_size(), 0);
  EXPECT_EQ(by_number.values(), std::string("one\0\0", 5));
  const v1::PutRequest by_bytes = make_put_request(std::vector<std::string_view>{"k1", "k2", "k3"}, values);
  EXPECT_EQ(by_bytes.keys_size(), 0);
  EXPECT_EQ(byte_keys(by_bytes), (std::vector<std::string>{"k1", "k2", "k3"}));
  EXPECT_EQ(std::vector<uint32_t>(by_bytes.value_lengths().begin(), by_bytes.value_lengths().end()),
            (std::vector<uint32_t>{3, 0, 2}));
  EXPECT_EQ(by_bytes.values(), by_number.values());
}

// The coalescing client packs many gets into one request this way.
TEST(Requests, AppendingKeepsEarlierKeys) {
  v1::GetRequest packed;
  append_keys(&packed, std::vector<std::string_view>{"a", "bc"});
  append_keys(&packed, std::vector<std::string_view>{std::string_view("\0", 1)});
  EXPECT_EQ(byte_keys(packed), (std::vector<std::string>{"a", "bc", std::string("\0", 1)}));
  v1::GetRequest numbers;
  append_keys(&numbers, std::vector<uint64_t>{1});
  append_keys(&numbers, std::vector<uint64_t>{2, 3});
  EXPECT_EQ(key_count(numbers), 3u);
}

// A call with no keys is refused at once, with either kind of key and
// coalescing on or off (no server listens at the address: nothing is sent).
TEST(Requests, ClientRefusesCallsWithNoKeysBeforeSending) {
  for (bool coalesce : {true, false}) {
    ClientOptions o;
    o.coalesce.enabled = coalesce;
    auto client = Client::Connect("127.0.0.1:1", o);
    const absl::Span<const uint64_t> no_numbers;
    const absl::Span<const std::string_view> no_bytes, no_values;
    EXPECT_EQ(client->Get(no_numbers).status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(client->Get(no_bytes).status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(client->Put(no_numbers, no_values).status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(client->Put(no_bytes, no_values).status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(client->Delete(no_numbers).status().code(), absl::StatusCode::kInvalidArgument);
    auto r = client->Delete(no_bytes);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("no keys"), std::string::npos) << r.status();
    int answered = 0;
    client->GetAsync(no_bytes, false, [&](absl::StatusOr<GetResult> g) {
      EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
      ++answered;
    });
    client->PutAsync(no_bytes, no_values, [&](absl::StatusOr<std::vector<bool>> p) {
      EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
      ++answered;
    });
    client->DeleteAsync(no_bytes, [&](absl::StatusOr<std::vector<bool>> d) {
      EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
      ++answered;
    });
    EXPECT_EQ(answered, 3) << "refused on the calling thread";
    // A put whose keys and values differ in number, of byte keys.
    EXPECT_EQ(client->Put(std::vector<std::string_view>{"a"}, no_values).status().code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(client->coalesced_messages(), 0u);
  }
}

}  // namespace
}  // namespace gphkv

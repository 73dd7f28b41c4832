#include "gphkv/client/client.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/coalescer.h"
#include "client/thread_order.h"
#include "grpc/health/v1/health.grpc.pb.h"

namespace gphkv {
namespace {

absl::Status to_absl(const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

std::string seconds(std::chrono::milliseconds ms) {
  return absl::StrFormat("%.3fs", static_cast<double>(ms.count()) / 1000.0);
}

// The channel's retry policy: UNAVAILABLE only, exponential backoff. gRPC
// retries transparently (sync and async alike) and never past the deadline.
// The unary methods only: gRPC would also retry a Batches or Pipeline stream
// that fails before its first answer, replaying every message it had sent,
// and the server may have applied some of them already (a put applied
// twice answers created=false, a delete deleted=false).
std::string service_config(const ClientOptions& o) {
  const int attempts = std::max(1, std::min(o.max_attempts, 5));
  if (attempts == 1) return "{}";
  std::string names;
  for (const char* method : {"Get", "Put", "Delete", "Stats", "Shrink"}) {
    absl::StrAppend(&names, R"({"service":"gphkv.v1.KeyValue","method":")", method, R"("},)");
  }
  return absl::StrCat(R"({"methodConfig":[{"name":[)", names, R"({"service":"grpc.health.v1.Health"}],)",
                      R"("retryPolicy":{"maxAttempts":)", attempts, R"(,"initialBackoff":")",
                      seconds(o.initial_backoff), R"(","maxBackoff":")", seconds(o.max_backoff),
                      R"(","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}]})");
}

std::vector<bool> to_vector(const google::protobuf::RepeatedField<bool>& f) {
  return std::vector<bool>(f.begin(), f.end());
}

// A call with no keys is refused before it is sent: on the wire it would
// carry no key of either kind, and in a coalesced message an empty packed get
// would fail the packed gets of every request it rides with (the server
// refuses a get_counts entry of 0 for the whole array).
absl::Status no_keys(const char* call) {
  return absl::InvalidArgumentError(absl::StrCat(call, ": no keys; a call carries 1 or more"));
}

grpc::ChannelArguments channel_args(const ClientOptions& options) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(options.max_message_bytes);
  args.SetMaxSendMessageSize(options.max_message_bytes);
  args.SetServiceConfigJSON(service_config(options));
  // A failed dial is tried again after 100 ms, not gRPC's default 1 s: on a
  // loaded host a first connect can fail once, and the coalescer's first
  // stream waits for the connection (coalescer.cc, connect_wait) about 1 s.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  return args;
}

// A channel with a TCP connection of its own: gRPC otherwise shares one
// among all channels of a process with the same target and arguments.
std::shared_ptr<grpc::Channel> own_channel(const std::string& address, const ClientOptions& options) {
  static std::atomic<int> next{0};
  grpc::ChannelArguments args = channel_args(options);
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt("gphkv.client.connection", next.fetch_add(1));
  return MakeChannel(address, options.tls, args);
}

// Waits for one async answer (sync calls over the coalesced path).
template <class T>
class Waiter {
 public:
  void set(T value) {
    std::lock_guard<std::mutex> lock(mu_);
    value_.emplace(std::move(value));
    cv_.notify_one();  // under the lock: the waiter may return and free this at once
  }
  T wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return value_.has_value(); });
    return std::move(*value_);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<T> value_;
};

// A sync unary call's turn in its thread's order (client/thread_order.h),
// held for the RPC.
class InTurn {
 public:
  InTurn(detail::ThreadOrder* order, detail::ThreadOrder::Kind kind) : order_(order), ticket_(order->wait_turn(kind)) {}
  ~InTurn() { order_->finish(ticket_); }
  InTurn(const InTurn&) = delete;
  InTurn& operator=(const InTurn&) = delete;

 private:
  detail::ThreadOrder* order_;
  detail::ThreadOrder::Ticket ticket_;
};

}  // namespace

GetResult::GetResult(v1::GetResponse response) {
  auto shared = std::make_shared<const v1::GetResponse>(std::move(response));
  const auto keys = static_cast<uint32_t>(shared->found_size());
  *this = GetResult(std::move(shared), 0, keys, 0);
}

GetResult::GetResult(std::shared_ptr<const v1::GetResponse> response, uint32_t first_key, uint32_t keys,
                     uint64_t first_byte)
    : response_(std::move(response)), first_key_(first_key), keys_(keys), first_byte_(first_byte) {
  const auto& r = *response_;
  if (static_cast<uint64_t>(first_key) + keys >
      static_cast<uint64_t>(std::min(r.found_size(), r.value_lengths_size()))) {
    keys_ = 0;  // a response shorter than its keys: nothing to show
    return;
  }
  ends_.resize(keys);
  uint64_t end = 0;
  for (uint32_t i = 0; i < keys; ++i) {
    end += r.value_lengths(static_cast<int>(first_key + i));
    ends_[i] = static_cast<uint32_t>(end);
  }
  if (first_byte + end > r.values().size() || end > UINT32_MAX) ends_.clear();
}

std::string_view GetResult::value(size_t i) const {
  if (i >= ends_.size()) return {};
  const uint32_t begin = i == 0 ? 0 : ends_[i - 1];
  return std::string_view(response_->values()).substr(first_byte_ + begin, ends_[i] - begin);
}

std::unique_ptr<Client> Client::Connect(const std::string& address, ClientOptions options) {
  auto channel =
      options.own_connection ? own_channel(address, options) : MakeChannel(address, options.tls, channel_args(options));
  // Several coalescing streams each get a connection (spreading the
  // transport's work); one shares the client's.
  const bool lanes_own = options.coalesce.streams > 1;
  std::unique_ptr<Client> client(new Client(std::move(channel), options, Init::kLater));
  client->init([&](int) { return lanes_own ? own_channel(address, options) : client->channel_; });
  return client;
}

Client::Client(std::shared_ptr<grpc::Channel> channel, ClientOptions options)
    : Client(std::move(channel), options, Init::kLater) {
  init([this](int) { return channel_; });
}

Client::Client(std::shared_ptr<grpc::Channel> channel, ClientOptions options, Init)
    : options_(options), channel_(std::move(channel)), stub_(v1::KeyValue::NewStub(channel_)) {}

void Client::init(const std::function<std::shared_ptr<grpc::Channel>(int)>& lane_channel) {
  if (options_.coalesce.enabled) {
    coalescer_ = std::make_unique<detail::Coalescer>(lane_channel, options_);
  } else {
    order_ = std::make_unique<detail::ThreadOrder>();
  }
}

Client::~Client() = default;

uint64_t Client::coalesced_messages() const { return coalescer_ ? coalescer_->messages_sent() : 0; }
uint64_t Client::coalesced_requests() const { return coalescer_ ? coalescer_->operations_sent() : 0; }

void Client::prepare(grpc::ClientContext* ctx) const {
  if (options_.timeout.count() > 0) {
    ctx->set_deadline(std::chrono::system_clock::now() + options_.timeout);
  }
}

absl::StatusOr<GetResult> Client::Get(absl::Span<const uint64_t> keys, bool exists_only) {
  return get(keys, exists_only);
}
absl::StatusOr<GetResult> Client::Get(absl::Span<const std::string_view> keys, bool exists_only) {
  return get(keys, exists_only);
}
absl::StatusOr<std::vector<bool>> Client::Put(absl::Span<const uint64_t> keys,
                                              absl::Span<const std::string_view> values) {
  return put(keys, values);
}
absl::StatusOr<std::vector<bool>> Client::Put(absl::Span<const std::string_view> keys,
                                              absl::Span<const std::string_view> values) {
  return put(keys, values);
}
absl::StatusOr<std::vector<bool>> Client::Delete(absl::Span<const uint64_t> keys) { return remove(keys); }
absl::StatusOr<std::vector<bool>> Client::Delete(absl::Span<const std::string_view> keys) { return remove(keys); }

template <class Key>
absl::StatusOr<GetResult> Client::get(absl::Span<const Key> keys, bool exists_only) {
  if (keys.empty()) return no_keys("Get");
  if (coalescer_) {
    Waiter<absl::StatusOr<GetResult>> w;
    get_async(keys, exists_only, [&w](absl::StatusOr<GetResult> r) { w.set(std::move(r)); });
    return w.wait();
  }
  const v1::GetRequest req = make_get_request(keys, exists_only);
  v1::GetResponse resp;
  grpc::ClientContext ctx;
  prepare(&ctx);
  const InTurn turn(order_.get(), detail::ThreadOrder::Kind::kRead);
  if (auto s = to_absl(stub_->Get(&ctx, req, &resp)); !s.ok()) return s;
  return GetResult(std::move(resp));
}

template <class Key>
absl::StatusOr<std::vector<bool>> Client::put(absl::Span<const Key> keys, absl::Span<const std::string_view> values) {
  if (keys.size() != values.size()) {
    return absl::InvalidArgumentError(absl::StrCat("Put: ", keys.size(), " keys but ", values.size(), " values"));
  }
  if (keys.empty()) return no_keys("Put");
  if (coalescer_) {
    Waiter<absl::StatusOr<std::vector<bool>>> w;
    put_async(keys, values, [&w](absl::StatusOr<std::vector<bool>> r) { w.set(std::move(r)); });
    return w.wait();
  }
  v1::PutResponse resp;
  if (auto s = unary_put(make_put_request(keys, values), &resp); !s.ok()) return s;
  return to_vector(resp.created());
}

absl::Status Client::unary_put(const v1::PutRequest& req, v1::PutResponse* resp) {
  grpc::ClientContext ctx;
  prepare(&ctx);
  const InTurn turn(order_.get(), detail::ThreadOrder::Kind::kWrite);
  return to_absl(stub_->Put(&ctx, req, resp));
}

absl::StatusOr<v1::PutResponse> Client::Write(uint64_t key, std::string_view value, v1::WriteMode mode) {
  WriteOptions options;
  options.mode = mode;
  return write(key, value, options);
}
absl::StatusOr<v1::PutResponse> Client::Write(std::string_view key, std::string_view value, v1::WriteMode mode) {
  WriteOptions options;
  options.mode = mode;
  return write(key, value, options);
}
absl::StatusOr<v1::PutResponse> Client::Write(std::string_view key, std::string_view value,
                                              const WriteOptions& options) {
  return write(key, value, options);
}

absl::StatusOr<v1::GetResponse> Client::GetItems(absl::Span<const std::string_view> keys) {
  if (keys.empty()) return no_keys("GetItems");
  v1::GetRequest req = make_get_request(keys, /*exists_only=*/false);
  req.set_with_items(true);
  return get_message(std::move(req), /*in_write_order=*/false);
}

absl::StatusOr<v1::GetResponse> Client::Touch(absl::Span<const std::string_view> keys, int64_t exptime) {
  if (keys.empty()) return no_keys("Touch");
  v1::GetRequest req = make_get_request(keys, /*exists_only=*/false);
  req.set_with_items(true);
  req.set_touch(true);
  req.set_touch_exptime(exptime);
  return get_message(std::move(req), /*in_write_order=*/true);
}

absl::StatusOr<v1::GetResponse> Client::get_message(v1::GetRequest req, bool in_write_order) {
  if (coalescer_) {
    // An Operation, not the packed gets (which take no item fields), behind
    // the thread's earlier requests.
    v1::Operation op;
    *op.mutable_get() = std::move(req);
    Waiter<absl::StatusOr<v1::GetResponse>> w;
    coalescer_->submit(std::move(op), [&w](const absl::Status& s, v1::OperationResult* r) {
      if (s.ok()) {
        w.set(std::move(*r->mutable_get()));
      } else {
        w.set(s);
      }
    });
    return w.wait();
  }
  v1::GetResponse resp;
  grpc::ClientContext ctx;
  prepare(&ctx);
  const InTurn turn(order_.get(),
                    in_write_order ? detail::ThreadOrder::Kind::kWrite : detail::ThreadOrder::Kind::kRead);
  if (auto s = to_absl(stub_->Get(&ctx, req, &resp)); !s.ok()) return s;
  return resp;
}

template <class Key>
absl::StatusOr<v1::PutResponse> Client::write(Key key, std::string_view value, const WriteOptions& options) {
  v1::PutRequest req = make_put_request(absl::Span<const Key>(&key, 1), absl::Span<const std::string_view>(&value, 1));
  req.set_mode(options.mode);
  req.set_flags(options.flags);
  req.set_exptime(options.exptime);
  req.set_cas(options.cas);
  if (coalescer_) {
    // Through the thread's coalescing stream, behind its earlier requests.
    v1::Operation op;
    *op.mutable_put() = std::move(req);
    Waiter<absl::StatusOr<v1::PutResponse>> w;
    coalescer_->submit(std::move(op), [&w](const absl::Status& s, v1::OperationResult* r) {
      if (s.ok()) {
        w.set(std::move(*r->mutable_put()));
      } else {
        w.set(s);
      }
    });
    return w.wait();
  }
  v1::PutResponse resp;
  if (auto s = unary_put(req, &resp); !s.ok()) return s;
  return resp;
}

template <class Key>
absl::StatusOr<std::vector<bool>> Client::remove(absl::Span<const Key> keys) {
  if (keys.empty()) return no_keys("Delete");
  if (coalescer_) {
    Waiter<absl::StatusOr<std::vector<bool>>> w;
    delete_async(keys, [&w](absl::StatusOr<std::vector<bool>> r) { w.set(std::move(r)); });
    return w.wait();
  }
  const v1::DeleteRequest req = make_delete_request(keys);
  v1::DeleteResponse resp;
  grpc::ClientContext ctx;
  prepare(&ctx);
  const InTurn turn(order_.get(), detail::ThreadOrder::Kind::kWrite);
  if (auto s = to_absl(stub_->Delete(&ctx, req, &resp)); !s.ok()) return s;
  return to_vector(resp.deleted());
}

absl::StatusOr<v1::StatsResponse> Client::Stats() {
  v1::StatsResponse resp;
  grpc::ClientContext ctx;
  prepare(&ctx);
  if (auto s = to_absl(stub_->Stats(&ctx, v1::StatsRequest(), &resp)); !s.ok()) return s;
  return resp;
}

absl::StatusOr<v1::ShrinkResponse> Client::Shrink() {
  v1::ShrinkResponse resp;
  grpc::ClientContext ctx;
  prepare(&ctx);
  if (auto s = to_absl(stub_->Shrink(&ctx, v1::ShrinkRequest(), &resp)); !s.ok()) return s;
  return resp;
}

absl::Status Client::Health() {
  auto health = grpc::health::v1::Health::NewStub(channel_);
  grpc::health::v1::HealthCheckRequest req;  // service "": the server as a whole
  grpc::health::v1::HealthCheckResponse resp;
  grpc::ClientContext ctx;
  prepare(&ctx);
  if (auto s = to_absl(health->Check(&ctx, req, &resp)); !s.ok()) return s;
  if (resp.status() != grpc::health::v1::HealthCheckResponse::SERVING) {
    return absl::UnavailableError(
        absl::StrCat("server reports ", grpc::health::v1::HealthCheckResponse::ServingStatus_Name(resp.status())));
  }
  return absl::OkStatus();
}

namespace {

// One async unary call's state, freed when its callback has run.
template <typename Req, typename Resp>
struct AsyncCall {
  grpc::ClientContext ctx;
  Req req;
  Resp resp;
};

// Starts `call` through `rpc` (a stub's async method) in its thread's order:
// at once, or once the thread's earlier requests allow (thread_order.h).
// `answer(status, call)` runs when it is answered, after the order let the
// next request go.
template <typename Req, typename Resp, typename Rpc, typename Answer>
void start_in_order(detail::ThreadOrder* order, detail::ThreadOrder::Kind kind,
                    std::unique_ptr<AsyncCall<Req, Resp>> call, Rpc rpc, Answer answer) {
  order->issue(kind, [order, call = std::move(call), rpc,
                      answer = std::move(answer)](detail::ThreadOrder::Ticket ticket) mutable {
    AsyncCall<Req, Resp>* c = call.release();
    rpc(&c->ctx, &c->req, &c->resp, [order, c, ticket, answer = std::move(answer)](grpc::Status s) mutable {
      std::unique_ptr<AsyncCall<Req, Resp>> owned(c);
      order->finish(ticket);
      answer(s, *owned);
    });
  });
}

}  // namespace

void Client::GetAsync(absl::Span<const uint64_t> keys, bool exists_only,
                      std::function<void(absl::StatusOr<GetResult>)> done) {
  get_async(keys, exists_only, std::move(done));
}
void Client::GetAsync(absl::Span<const std::string_view> keys, bool exists_only,
                      std::function<void(absl::StatusOr<GetResult>)> done) {
  get_async(keys, exists_only, std::move(done));
}
void Client::PutAsync(absl::Span<const uint64_t> keys, absl::Span<const std::string_view> values,
                      std::function<void(absl::StatusOr<std::vector<bool>>)> done) {
  put_async(keys, values, std::move(done));
}
void Client::PutAsync(absl::Span<const std::string_view> keys, absl::Span<const std::string_view> values,
                      std::function<void(absl::StatusOr<std::vector<bool>>)> done) {
  put_async(keys, values, std::move(done));
}
void Client::DeleteAsync(absl::Span<const uint64_t> keys, std::function<void(absl::StatusOr<std::vector<bool>>)> done) {
  delete_async(keys, std::move(done));
}
void Client::DeleteAsync(absl::Span<const std::string_view> keys,
                         std::function<void(absl::StatusOr<std::vector<bool>>)> done) {
  delete_async(keys, std::move(done));
}

template <class Key>
void Client::get_async(absl::Span<const Key> keys, bool exists_only,
                       std::function<void(absl::StatusOr<GetResult>)> done) {
  if (keys.empty()) {
    done(no_keys("GetAsync"));
    return;
  }
  if (coalescer_ && !exists_only) {
    // The common case: packed with the other gets of its message.
    coalescer_->submit_get(keys, std::move(done));
    return;
  }
  if (coalescer_) {
    v1::Operation op;
    *op.mutable_get() = make_get_request(keys, exists_only);
    coalescer_->submit(std::move(op), [done = std::move(done)](const absl::Status& s, v1::OperationResult* r) {
      if (s.ok()) {
        done(GetResult(std::move(*r->mutable_get())));
      } else {
        done(s);
      }
    });
    return;
  }
  auto call = std::make_unique<AsyncCall<v1::GetRequest, v1::GetResponse>>();
  call->req = make_get_request(keys, exists_only);
  prepare(&call->ctx);
  start_in_order(
      order_.get(), detail::ThreadOrder::Kind::kRead, std::move(call),
      [stub = stub_.get()](auto... a) { stub->async()->Get(a...); },
      [done = std::move(done)](const grpc::Status& s, AsyncCall<v1::GetRequest, v1::GetResponse>& c) {
        if (!s.ok()) {
          done(to_absl(s));
        } else {
          done(GetResult(std::move(c.resp)));
        }
      });
}

template <class Key>
void Client::put_async(absl::Span<const Key> keys, absl::Span<const std::string_view> values,
                       std::function<void(absl::StatusOr<std::vector<bool>>)> done) {
  if (keys.size() != values.size()) {
    done(absl::InvalidArgumentError(absl::StrCat("PutAsync: ", keys.size(), " keys but ", values.size(), " values")));
    return;
  }
  if (keys.empty()) {
    done(no_keys("PutAsync"));
    return;
  }
  if (coalescer_) {
    v1::Operation op;
    *op.mutable_put() = make_put_request(keys, values);
    coalescer_->submit(std::move(op), [done = std::move(done)](const absl::Status& s, v1::OperationResult* r) {
      if (s.ok()) {
        done(to_vector(r->put().created()));
      } else {
        done(s);
      }
    });
    return;
  }
  auto call = std::make_unique<AsyncCall<v1::PutRequest, v1::PutResponse>>();
  call->req = make_put_request(keys, values);
  prepare(&call->ctx);
  start_in_order(
      order_.get(), detail::ThreadOrder::Kind::kWrite, std::move(call),
      [stub = stub_.get()](auto... a) { stub->async()->Put(a...); },
      [done = std::move(done)](const grpc::Status& s, AsyncCall<v1::PutRequest, v1::PutResponse>& c) {
        if (!s.ok()) {
          done(to_absl(s));
        } else {
          done(to_vector(c.resp.created()));
        }
      });
}

template <class Key>
void Client::delete_async(absl::Span<const Key> keys, std::function<void(absl::StatusOr<std::vector<bool>>)> done) {
  if (keys.empty()) {
    done(no_keys("DeleteAsync"));
    return;
  }
  if (coalescer_) {
    v1::Operation op;
    *op.mutable_delete_() = make_delete_request(keys);
    coalescer_->submit(std::move(op), [done = std::move(done)](const absl::Status& s, v1::OperationResult* r) {
      if (s.ok()) {
        done(to_vector(r->delete_().deleted()));
      } else {
        done(s);
      }
    });
    return;
  }
  auto call = std::make_unique<AsyncCall<v1::DeleteRequest, v1::DeleteResponse>>();
  call->req = make_delete_request(keys);
  prepare(&call->ctx);
  start_in_order(
      order_.get(), detail::ThreadOrder::Kind::kWrite, std::move(call),
      [stub = stub_.get()](auto... a) { stub->async()->Delete(a...); },
      [done = std::move(done)](const grpc::Status& s, AsyncCall<v1::DeleteRequest, v1::DeleteResponse>& c) {
        if (!s.ok()) {
          done(to_absl(s));
        } else {
          done(to_vector(c.resp.deleted()));
        }
      });
}

// --- PipelineStream ---------------------------------------------------------

struct PipelineStream::State {
  grpc::ClientContext ctx;
  std::unique_ptr<grpc::ClientReaderWriter<v1::PipelineRequest, v1::PipelineResponse>> rw;
  std::mutex write_mu;  // Write and WritesDone are not safe to call concurrently
  bool writes_done = false;
  std::atomic<uint64_t> next_id{1};
  bool closed = false;
};

PipelineStream::PipelineStream(std::unique_ptr<State> state) : state_(std::move(state)) {}

PipelineStream::~PipelineStream() {
  if (state_ && !state_->closed) {
    state_->ctx.TryCancel();
    (void)Close();
  }
}

std::unique_ptr<PipelineStream> Client::OpenPipeline() {
  auto state = std::make_unique<PipelineStream::State>();
  state->rw = stub_->Pipeline(&state->ctx);
  return std::unique_ptr<PipelineStream>(new PipelineStream(std::move(state)));
}

absl::StatusOr<uint64_t> PipelineStream::send(v1::PipelineRequest* req) {
  const uint64_t id = state_->next_id.fetch_add(1);
  req->set_id(id);
  std::lock_guard<std::mutex> lock(state_->write_mu);
  if (state_->writes_done) return absl::FailedPreconditionError("pipeline stream already closed");
  if (!state_->rw->Write(*req)) {
    return absl::UnavailableError("pipeline stream broke; Close() returns the reason");
  }
  return id;
}

namespace {

// A Pipeline operation's request, for either kind of key.
template <class Key>
v1::PipelineRequest pipeline_get(absl::Span<const Key> keys, bool exists_only) {
  v1::PipelineRequest req;
  *req.mutable_get() = make_get_request(keys, exists_only);
  return req;
}
template <class Key>
absl::StatusOr<v1::PipelineRequest> pipeline_put(absl::Span<const Key> keys,
                                                 absl::Span<const std::string_view> values) {
  if (keys.size() != values.size()) {
    return absl::InvalidArgumentError(absl::StrCat("SendPut: ", keys.size(), " keys but ", values.size(), " values"));
  }
  v1::PipelineRequest req;
  *req.mutable_put() = make_put_request(keys, values);
  return req;
}
template <class Key>
v1::PipelineRequest pipeline_delete(absl::Span<const Key> keys) {
  v1::PipelineRequest req;
  *req.mutable_delete_() = make_delete_request(keys);
  return req;
}

}  // namespace

absl::StatusOr<uint64_t> PipelineStream::SendGet(absl::Span<const uint64_t> keys, bool exists_only) {
  v1::PipelineRequest req = pipeline_get(keys, exists_only);
  return send(&req);
}
absl::StatusOr<uint64_t> PipelineStream::SendGet(absl::Span<const std::string_view> keys, bool exists_only) {
  v1::PipelineRequest req = pipeline_get(keys, exists_only);
  return send(&req);
}
absl::StatusOr<uint64_t> PipelineStream::SendPut(absl::Span<const uint64_t> keys,
                                                 absl::Span<const std::string_view> values) {
  auto req = pipeline_put(keys, values);
  if (!req.ok()) return req.status();
  return send(&*req);
}
absl::StatusOr<uint64_t> PipelineStream::SendPut(absl::Span<const std::string_view> keys,
                                                 absl::Span<const std::string_view> values) {
  auto req = pipeline_put(keys, values);
  if (!req.ok()) return req.status();
  return send(&*req);
}
absl::StatusOr<uint64_t> PipelineStream::SendDelete(absl::Span<const uint64_t> keys) {
  v1::PipelineRequest req = pipeline_delete(keys);
  return send(&req);
}
absl::StatusOr<uint64_t> PipelineStream::SendDelete(absl::Span<const std::string_view> keys) {
  v1::PipelineRequest req = pipeline_delete(keys);
  return send(&req);
}

absl::StatusOr<v1::PipelineResponse> PipelineStream::Receive() {
  v1::PipelineResponse resp;
  if (!state_->rw->Read(&resp)) return absl::NotFoundError("pipeline stream ended");
  return resp;
}

absl::Status PipelineStream::Close() {
  if (state_->closed) return absl::FailedPreconditionError("pipeline stream already closed");
  {
    std::lock_guard<std::mutex> lock(state_->write_mu);
    if (!state_->writes_done) {
      state_->writes_done = true;
      state_->rw->WritesDone();
    }
  }
  v1::PipelineResponse drain;
  while (state_->rw->Read(&drain)) {
  }
  state_->closed = true;
  return to_absl(state_->rw->Finish());
}

}  // namespace gphkv

// null_server: a gphkv.v1.KeyValue server with no table and no batching. It
// answers every Get at once with nothing found, every Put as created, every
// Delete as not deleted, and the Pipeline and Batches streams likewise, so a
// load test against it measures what gRPC and the client cost alone: the
// ceiling of the front end beside every service figure (docs/performance.md,
// "The front end's ceiling").
//
//   null_server --address=127.0.0.1:50061 --api=async --threads=4
//
// --api=async serves unary calls through gphkv-server's own completion-queue
// front end (server/grpc/unary_front_end.h), the same code the store runs;
// --api=callback through gRPC's callback API, for comparison. Streams are on
// the callback API in both, as in gphkv-server. SIGTERM/SIGINT stop it.
//
// --memcached_address adds memcached's text protocol on gphkv-server's own
// listener (its loops, parser and replies) over no table: every get key
// found with a value from a fixed set (bench/null_memcached.h), the
// transport's ceiling beside gphkv's memcached port and memcached itself.
//
//   null_server --address=127.0.0.1:50061 --memcached_address=127.0.0.1:21411 --memcached_threads=4
#include <signal.h>

#include <cstdio>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/flags/flag.h"
#include "bench/null_memcached.h"
#include "flags/malloc_tuning.h"
#include "flags/program_flags.h"
#include "gphkv/v1/gphkv.grpc.pb.h"
#include "server/grpc/message_stream.h"
#include "server/grpc/unary_front_end.h"
#include "server/grpc/wire.h"
#include "server/memcache/listener.h"

ABSL_FLAG(std::string, address, "127.0.0.1:50061", "host:port to serve on");
ABSL_FLAG(uint64_t, malloc_trim_threshold_mib, 0, "gphkv-server's --malloc_trim_threshold_mib (flags/malloc_tuning.h)");
ABSL_FLAG(uint64_t, malloc_mmap_threshold_mib, 0, "gphkv-server's --malloc_mmap_threshold_mib (flags/malloc_tuning.h)");
ABSL_FLAG(std::string, api, "async", "unary calls on: async (gphkv-server's completion-queue front end) or callback");
ABSL_FLAG(int32_t, threads, 4, "--api=async: completion queues, each with its own thread");
ABSL_FLAG(int32_t, posted, 64, "--api=async: calls of each method asked for ahead, per queue");
ABSL_FLAG(std::string, memcached_address, "",
          "IP:PORT to answer memcached's text protocol on too (gphkv-server's listener over no table); empty: off");
ABSL_FLAG(uint32_t, memcached_threads, 4, "event loops of the memcached port (gphkv-server's --memcached_threads)");
ABSL_FLAG(bool, memcached_pack_gets, true,
          "a loop queues a round's plain gets as one call, as gphkv-server's --memcached_pack_gets does");
ABSL_FLAG(uint32_t, value_bytes, 0,
          "0: every get finds nothing; N: every key is found with an N-byte value (the transport's ceiling "
          "for gets that carry values, which a server with nothing found does not measure)");

namespace {

namespace v1 = gphkv::v1;
namespace grpcfe = gphkv::server::grpcfe;
namespace wire = gphkv::server::wire;

// --value_bytes, read once at start.
uint32_t g_value_bytes = 0;

// The answers: one entry per key, nothing stored anywhere (or, with
// --value_bytes, every key found with that many bytes of filler).
void null_answer(const v1::GetRequest& req, v1::GetResponse* resp) {
  const int n = req.keys_size();
  const bool with_values = g_value_bytes > 0 && req.value_mode() != v1::VALUE_MODE_EXISTS;
  resp->mutable_found()->Resize(n, g_value_bytes > 0);
  resp->mutable_value_lengths()->Resize(n, with_values ? g_value_bytes : 0);
  if (with_values) resp->mutable_values()->assign(static_cast<size_t>(n) * g_value_bytes, 'v');
}
void null_answer(const v1::PutRequest& req, v1::PutResponse* resp) {
  resp->mutable_created()->Resize(req.keys_size(), true);
}
void null_answer(const v1::DeleteRequest& req, v1::DeleteResponse* resp) {
  resp->mutable_deleted()->Resize(req.keys_size(), false);
}

// Parses `bytes` as Req and serializes the null answer into `out`.
template <class Req, class Resp>
grpc::Status answer_bytes(const grpc::ByteBuffer& bytes, grpc::ByteBuffer* out) {
  Req req;
  if (absl::Status s = wire::parse(bytes, &req); !s.ok()) return wire::to_grpc(s);
  Resp resp;
  null_answer(req, &resp);
  *out = wire::serialize(resp);
  return grpc::Status::OK;
}

class NullPipeline final : public grpcfe::MessageStream {
 public:
  explicit NullPipeline(grpc::CallbackServerContext* ctx) : MessageStream(ctx) { start(); }

 private:
  int on_message(grpc::ByteBuffer& bytes) override {
    v1::PipelineRequest req;
    if (absl::Status s = wire::parse(bytes, &req); !s.ok()) {
      fail(wire::to_grpc(s));
      return 0;
    }
    v1::PipelineResponse resp;
    resp.set_id(req.id());
    switch (req.op_case()) {
      case v1::PipelineRequest::kGet: null_answer(req.get(), resp.mutable_get()); break;
      case v1::PipelineRequest::kPut: null_answer(req.put(), resp.mutable_put()); break;
      case v1::PipelineRequest::kDelete: null_answer(req.delete_(), resp.mutable_delete_()); break;
      default: resp.set_code(grpc::StatusCode::INVALID_ARGUMENT); break;
    }
    send(wire::serialize(resp));
    return 0;
  }
  void on_finish(uint64_t, double) override {}
};

class NullBatches final : public grpcfe::MessageStream {
 public:
  explicit NullBatches(grpc::CallbackServerContext* ctx) : MessageStream(ctx) { start(); }

 private:
  int on_message(grpc::ByteBuffer& bytes) override {
    v1::BatchRequest req;
    if (absl::Status s = wire::parse(bytes, &req); !s.ok()) {
      fail(wire::to_grpc(s));
      return 0;
    }
    v1::BatchResponse resp;
    resp.set_id(req.id());
    for (const v1::Operation& op : req.ops()) {
      v1::OperationResult* r = resp.add_results();
      switch (op.op_case()) {
        case v1::Operation::kGet: null_answer(op.get(), r->mutable_get()); break;
        case v1::Operation::kPut: null_answer(op.put(), r->mutable_put()); break;
        case v1::Operation::kDelete: null_answer(op.delete_(), r->mutable_delete_()); break;
        default: r->set_code(grpc::StatusCode::INVALID_ARGUMENT); break;
      }
    }
    if (req.get_counts_size() > 0) null_answer(req.gets(), resp.mutable_gets()->mutable_get());
    send(wire::serialize(resp));
    return 0;
  }
  void on_finish(uint64_t, double) override {}
};

// Stats (the load generator's readiness probe), Shrink and the streams,
// shared by both variants.
template <class Base>
class NullCommon : public Base {
 public:
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Pipeline(grpc::CallbackServerContext* ctx) override {
    return new NullPipeline(ctx);
  }
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Batches(grpc::CallbackServerContext* ctx) override {
    return new NullBatches(ctx);
  }
  grpc::ServerUnaryReactor* Stats(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer*,
                                  grpc::ByteBuffer* resp) override {
    v1::StatsResponse out;
    out.set_backend("null");
    *resp = wire::serialize(out);
    grpc::ServerUnaryReactor* r = ctx->DefaultReactor();
    r->Finish(grpc::Status::OK);
    return r;
  }
  grpc::ServerUnaryReactor* Shrink(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer*,
                                   grpc::ByteBuffer* resp) override {
    *resp = wire::serialize(v1::ShrinkResponse());
    grpc::ServerUnaryReactor* r = ctx->DefaultReactor();
    r->Finish(grpc::Status::OK);
    return r;
  }
};

using StreamsRaw = v1::KeyValue::WithRawCallbackMethod_Pipeline<v1::KeyValue::WithRawCallbackMethod_Batches<
    v1::KeyValue::WithRawCallbackMethod_Stats<v1::KeyValue::WithRawCallbackMethod_Shrink<v1::KeyValue::Service>>>>;

// Unary calls through gphkv-server's completion-queue front end, answered on
// the queue's thread.
class AsyncNullService final : public NullCommon<v1::KeyValue::WithRawMethod_Get<
                                   v1::KeyValue::WithRawMethod_Put<v1::KeyValue::WithRawMethod_Delete<StreamsRaw>>>>,
                               public grpcfe::UnaryRequester,
                               public grpcfe::UnaryHandler {
 public:
  void request(grpcfe::UnaryMethod method, grpc::ServerContext* ctx, grpc::ByteBuffer* request,
               grpc::ServerAsyncResponseWriter<grpc::ByteBuffer>* writer, grpc::ServerCompletionQueue* cq,
               void* tag) override {
    switch (method) {
      case grpcfe::UnaryMethod::kGet: RequestGet(ctx, request, writer, cq, cq, tag); break;
      case grpcfe::UnaryMethod::kPut: RequestPut(ctx, request, writer, cq, cq, tag); break;
      case grpcfe::UnaryMethod::kDelete: RequestDelete(ctx, request, writer, cq, cq, tag); break;
    }
  }
  void handle(grpcfe::UnaryCall* call) override {
    grpc::ByteBuffer out;
    grpc::Status s;
    switch (call->method()) {
      case grpcfe::UnaryMethod::kGet: s = answer_bytes<v1::GetRequest, v1::GetResponse>(call->request(), &out); break;
      case grpcfe::UnaryMethod::kPut: s = answer_bytes<v1::PutRequest, v1::PutResponse>(call->request(), &out); break;
      case grpcfe::UnaryMethod::kDelete:
        s = answer_bytes<v1::DeleteRequest, v1::DeleteResponse>(call->request(), &out);
        break;
    }
    call->finish(out, s);
  }
};

// Unary calls on gRPC's callback API, answered inline.
class CallbackNullService final
    : public NullCommon<v1::KeyValue::WithRawCallbackMethod_Get<
          v1::KeyValue::WithRawCallbackMethod_Put<v1::KeyValue::WithRawCallbackMethod_Delete<StreamsRaw>>>> {
 public:
  grpc::ServerUnaryReactor* Get(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* req,
                                grpc::ByteBuffer* resp) override {
    return finish(ctx, answer_bytes<v1::GetRequest, v1::GetResponse>(*req, resp));
  }
  grpc::ServerUnaryReactor* Put(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* req,
                                grpc::ByteBuffer* resp) override {
    return finish(ctx, answer_bytes<v1::PutRequest, v1::PutResponse>(*req, resp));
  }
  grpc::ServerUnaryReactor* Delete(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* req,
                                   grpc::ByteBuffer* resp) override {
    return finish(ctx, answer_bytes<v1::DeleteRequest, v1::DeleteResponse>(*req, resp));
  }

 private:
  static grpc::ServerUnaryReactor* finish(grpc::CallbackServerContext* ctx, const grpc::Status& s) {
    grpc::ServerUnaryReactor* r = ctx->DefaultReactor();
    r->Finish(s);
    return r;
  }
};

}  // namespace

int main(int argc, char** argv) {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  gphkv::ParseProgramFlags(argc, argv,
                           {"null_server",
                            "gphkv.v1.KeyValue and a memcached port with no table (the front end's ceiling).\n"
                            "Usage: null_server [--flags]; SIGTERM/SIGINT stops it.",
                            {"bench/null_server.cc"}});
  if (absl::Status s = gphkv::tune_malloc(
          {absl::GetFlag(FLAGS_malloc_trim_threshold_mib), absl::GetFlag(FLAGS_malloc_mmap_threshold_mib)});
      absl::IsInvalidArgument(s)) {
    std::fprintf(stderr, "null_server: --malloc_*: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  g_value_bytes = absl::GetFlag(FLAGS_value_bytes);
  const std::string api = absl::GetFlag(FLAGS_api);
  if (api != "async" && api != "callback") {
    std::fprintf(stderr, "null_server: --api must be async or callback\n");
    return 2;
  }
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(absl::GetFlag(FLAGS_address), grpc::InsecureServerCredentials(), &port);
  builder.SetMaxReceiveMessageSize(-1);
  builder.SetMaxSendMessageSize(-1);
  AsyncNullService async_service;
  CallbackNullService callback_service;
  grpcfe::UnaryFrontEndOptions fe;
  fe.threads = absl::GetFlag(FLAGS_threads);
  fe.posted = absl::GetFlag(FLAGS_posted);
  grpcfe::UnaryFrontEnd front_end(&async_service, &async_service, fe);
  if (api == "async") {
    builder.RegisterService(&async_service);
    front_end.add_queues(builder);
  } else {
    builder.RegisterService(&callback_service);
  }
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    std::fprintf(stderr, "null_server: cannot listen on %s\n", absl::GetFlag(FLAGS_address).c_str());
    return 1;
  }
  if (api == "async") front_end.start();
  std::printf("null_server: %s API (%d threads) on port %d\n", api.c_str(), api == "async" ? fe.threads : 0, port);
  gphkv::bench::NullMemcachedSink memcached_sink;
  std::unique_ptr<gphkv::server::memcache::Listener> memcached;
  if (const std::string mc_address = absl::GetFlag(FLAGS_memcached_address); !mc_address.empty()) {
    gphkv::server::memcache::ListenerOptions mc;
    mc.address = mc_address;
    mc.threads = absl::GetFlag(FLAGS_memcached_threads);
    // gphkv-server's bound with its default limits (a 256 MiB answer, 1 MiB values).
    if (absl::GetFlag(FLAGS_memcached_pack_gets))
      mc.pack_max_keys = gphkv::server::memcache::pack_max_keys_for(256u << 20, 1u << 20, 65536);
    mc.version = std::string(gphkv::server::memcache::kProtocolVersion) + " gphkv-null";
    auto listener = gphkv::server::memcache::Listener::start(&memcached_sink, std::move(mc));
    if (!listener.ok()) {
      std::fprintf(stderr, "null_server: %s\n", listener.status().ToString().c_str());
      return 1;
    }
    memcached = std::move(*listener);
    std::printf("null_server: memcached's text protocol (%u loops) on port %d\n",
                absl::GetFlag(FLAGS_memcached_threads), memcached->port());
  }
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop, &sig);
  if (memcached) memcached->stop(std::chrono::milliseconds(1000));
  server->Shutdown();
  front_end.stop();
  return 0;
}

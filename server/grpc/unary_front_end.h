// Unary RPCs on gRPC's completion-queue API, with the request and the
// response as raw bytes. `threads` completion queues, each polled by a thread
// of its own, each with `posted` calls of every served method asked for
// ahead, so arriving calls never wait for a thread to ask. A call's bytes go
// to the handler on its queue's thread; the handler answers from any thread,
// once, with UnaryCall::finish. No lock is shared between the queues.
//
// Why not the callback API: on the same host the callback API's null server
// served fewer calls per second than this one (docs/performance.md, "The
// front end's ceiling", from bench/null_server).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <grpcpp/server_builder.h>
#include <grpcpp/server_context.h>
#include <grpcpp/support/async_unary_call.h>
#include <grpcpp/support/byte_buffer.h>

namespace gphkv::server::grpcfe {

using Clock = std::chrono::steady_clock;

enum class UnaryMethod : uint8_t { kGet = 0, kPut = 1, kDelete = 2 };
constexpr int kUnaryMethods = 3;

// One unary call, from its arrival to its answer having been sent.
class UnaryCall {
 public:
  grpc::ServerContext& context() { return ctx_; }
  const grpc::ByteBuffer& request() const { return request_; }
  UnaryMethod method() const { return method_; }
  Clock::time_point arrived() const { return arrived_; }

  // Sends `response` when `status` is OK, else the status alone. Any thread,
  // exactly once; the call belongs to the front end again afterwards.
  void finish(const grpc::ByteBuffer& response, const grpc::Status& status);

 private:
  friend class UnaryFrontEnd;
  enum class State : uint8_t { kAsked, kAnswering };
  UnaryCall(UnaryMethod method, int queue) : method_(method), queue_(queue) {}

  grpc::ServerContext ctx_;
  grpc::ByteBuffer request_;
  grpc::ServerAsyncResponseWriter<grpc::ByteBuffer> writer_{&ctx_};
  const UnaryMethod method_;
  const int queue_;
  State state_ = State::kAsked;
  Clock::time_point arrived_{};
};

// Asks gRPC for the next call of a method (the generated service's
// RequestGet etc., with the raw-bytes signature).
class UnaryRequester {
 public:
  virtual ~UnaryRequester() = default;
  virtual void request(UnaryMethod method, grpc::ServerContext* ctx, grpc::ByteBuffer* request,
                       grpc::ServerAsyncResponseWriter<grpc::ByteBuffer>* writer, grpc::ServerCompletionQueue* cq,
                       void* tag) = 0;
};

class UnaryHandler {
 public:
  virtual ~UnaryHandler() = default;
  // Runs on the call's queue thread; must lead to exactly one call->finish().
  virtual void handle(UnaryCall* call) = 0;
};

struct UnaryFrontEndOptions {
  int threads = 4;
  // Calls of each method asked for ahead, per queue.
  int posted = 64;
};

class UnaryFrontEnd {
 public:
  UnaryFrontEnd(UnaryRequester* requester, UnaryHandler* handler, UnaryFrontEndOptions options);
  ~UnaryFrontEnd();

  // Before grpc::ServerBuilder::BuildAndStart: adds the completion queues.
  void add_queues(grpc::ServerBuilder& builder);
  // After BuildAndStart: asks for calls and starts the threads.
  void start();
  // After grpc::Server::Shutdown has returned (every started call answered):
  // shuts the queues down, drains them and joins the threads. Idempotent.
  void stop();

 private:
  void ask(UnaryMethod method, int queue);
  void poll(int queue);

  UnaryRequester* requester_;
  UnaryHandler* handler_;
  const UnaryFrontEndOptions options_;
  struct Queue {
    std::unique_ptr<grpc::ServerCompletionQueue> cq;
    std::mutex mu;      // asks vs the queue's shutdown
    bool shut = false;  // under mu
    std::thread thread;
  };
  std::vector<std::unique_ptr<Queue>> queues_;
  bool stopped_ = false;
};

}  // namespace gphkv::server::grpcfe

#include "server/grpc/unary_front_end.h"

#include "server/thread_name.h"

namespace gphkv::server::grpcfe {

void UnaryCall::finish(const grpc::ByteBuffer& response, const grpc::Status& status) {
  if (status.ok()) {
    writer_.Finish(response, status, this);
  } else {
    writer_.FinishWithError(status, this);
  }
}

UnaryFrontEnd::UnaryFrontEnd(UnaryRequester* requester, UnaryHandler* handler, UnaryFrontEndOptions options)
    : requester_(requester), handler_(handler), options_(options) {}

UnaryFrontEnd::~UnaryFrontEnd() { stop(); }

void UnaryFrontEnd::add_queues(grpc::ServerBuilder& builder) {
  for (int i = 0; i < std::max(1, options_.threads); ++i) {
    queues_.push_back(std::make_unique<Queue>());
    queues_.back()->cq = builder.AddCompletionQueue();
  }
}

void UnaryFrontEnd::ask(UnaryMethod method, int queue) {
  // Asking on a queue that was shut down is an error in gRPC: stop() takes
  // the same lock to shut it.
  Queue& q = *queues_[queue];
  std::lock_guard<std::mutex> lock(q.mu);
  if (q.shut) return;
  auto* call = new UnaryCall(method, queue);
  requester_->request(method, &call->ctx_, &call->request_, &call->writer_, q.cq.get(), call);
}

void UnaryFrontEnd::start() {
  for (int q = 0; q < static_cast<int>(queues_.size()); ++q) {
    for (int m = 0; m < kUnaryMethods; ++m) {
      for (int i = 0; i < options_.posted; ++i) ask(static_cast<UnaryMethod>(m), q);
    }
  }
  for (int q = 0; q < static_cast<int>(queues_.size()); ++q) {
    queues_[q]->thread = std::thread([this, q] {
      name_this_thread("gphkv-unary-cq");
      poll(q);
    });
  }
}

void UnaryFrontEnd::poll(int queue) {
  void* tag = nullptr;
  bool ok = false;
  while (queues_[queue]->cq->Next(&tag, &ok)) {
    auto* call = static_cast<UnaryCall*>(tag);
    if (call->state_ == UnaryCall::State::kAnswering || !ok) {
      // Answered (or an ask cancelled by shutdown): the call is over.
      delete call;
      continue;
    }
    call->arrived_ = Clock::now();
    // Ask for the next call of this method first, so one is always waiting.
    ask(call->method_, queue);
    // Set before the handler may finish it: its completion can only be taken
    // by this thread, after handle() returns.
    call->state_ = UnaryCall::State::kAnswering;
    handler_->handle(call);
  }
}

void UnaryFrontEnd::stop() {
  if (stopped_) return;
  stopped_ = true;
  for (auto& q : queues_) {
    std::lock_guard<std::mutex> lock(q->mu);
    q->shut = true;
    q->cq->Shutdown();
  }
  for (auto& q : queues_) {
    if (q->thread.joinable()) {
      q->thread.join();
    } else {
      // Never polled (start() not called): drain it here.
      void* tag = nullptr;
      bool ok = false;
      while (q->cq->Next(&tag, &ok)) delete static_cast<UnaryCall*>(tag);
    }
  }
}

}  // namespace gphkv::server::grpcfe

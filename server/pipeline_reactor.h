// One Pipeline stream: reads operations, queues each as its own call (in the
// order read, so a stream's operations take effect in the order sent), and
// writes each answer, tagged with its id, as soon as it is ready. At most
// kMaxInFlight operations per stream are outstanding: past that the reactor
// stops reading, so a fast sender is slowed by flow control instead of
// growing server memory.
#pragma once

#include <deque>
#include <memory>
#include <mutex>

#include "gphkv/v1/gphkv.grpc.pb.h"
#include "server/call.h"

namespace gphkv::server {

class KeyValueService;

class PipelineReactor final
    : public grpc::ServerBidiReactor<v1::PipelineRequest, v1::PipelineResponse> {
 public:
  static constexpr int kMaxInFlight = 1024;

  PipelineReactor(KeyValueService* service, grpc::CallbackServerContext* ctx);

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnDone() override;

 private:
  struct Op {
    v1::PipelineRequest req;
    v1::PipelineResponse resp;
    Clock::time_point t0;
    uint64_t keys = 0;
    int kind = 0;  // OpLabel of the inner op
  };

  void start_read();
  // Queues an answered op for writing (called from the executor or inline).
  void complete(Op* op, const absl::Status& s);
  // Under mu_: true (once) when reading ended and nothing is pending.
  bool ready_to_finish();
  // Outside mu_, as the caller's last touch of `this`: OnDone may delete the
  // reactor as soon as Finish is called.
  void finish_stream();

  KeyValueService* service_;
  grpc::CallbackServerContext* ctx_;
  Clock::time_point started_;
  std::unique_ptr<Op> reading_;

  std::mutex mu_;
  std::deque<std::unique_ptr<Op>> writes_;  // front is being written when writing_
  bool writing_ = false;
  bool write_failed_ = false;  // the client is gone: answers are dropped
  bool reads_done_ = false;
  bool read_paused_ = false;
  bool finished_ = false;
  int in_flight_ = 0;  // queued in the batcher, not yet answered
  uint64_t ops_ = 0;
};

}  // namespace gphkv::server

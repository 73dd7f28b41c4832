// One Batches stream: each message carries many operations (the requests of
// many application threads, merged by the client), and gets packed into one
// key array. The operations are checked one by one and the valid ones queued
// together, in order, as consecutive calls, the packed gets after them as
// one more; the message is answered by one BatchResponse once all of them
// are done, serialized by the thread that finished the last one.
#pragma once

#include "server/grpc/message_stream.h"
#include "server/intake.h"
#include "server/service_metrics.h"

namespace gphkv::server::grpcfe {

class BatchStream final : public MessageStream {
 public:
  BatchStream(grpc::CallbackServerContext* ctx, const Intake* intake, ServiceMetrics* metrics);

 private:
  struct Message;
  int on_message(grpc::ByteBuffer& bytes) override;
  void on_finish(uint64_t operations, double seconds) override;
  void on_written(double seconds) override;
  // Which part of a message settle() is told of: an operation's index,
  // the packed gets, or on_message's own share.
  static constexpr int kPackedGets = -1;
  static constexpr int kNone = -2;
  // One part of `m` is answered (s: its outcome); the last one sends the
  // message's response.
  void settle(Message* m, int index, const absl::Status& s);

  const Intake* intake_;
  ServiceMetrics* metrics_;
  uint64_t messages_ = 0;  // read so far (to name a malformed one)
};

}  // namespace gphkv::server::grpcfe

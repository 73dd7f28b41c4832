// One Pipeline stream: each message is one get, put or delete, queued as its
// own call in the order read (so a stream's operations take effect in the
// order sent) and answered, tagged with its id, as soon as it is done.
#pragma once

#include "server/grpc/message_stream.h"
#include "server/intake.h"
#include "server/service_metrics.h"

namespace gphkv::server::grpcfe {

class PipelineStream final : public MessageStream {
 public:
  PipelineStream(grpc::CallbackServerContext* ctx, const Intake* intake, ServiceMetrics* metrics);

 private:
  struct Op;
  int on_message(grpc::ByteBuffer& bytes) override;
  void on_finish(uint64_t operations, double seconds) override;
  // Answers `op` (frees it); `queued`: it was counted as outstanding.
  void answer(Op* op, const absl::Status& s, bool queued);

  const Intake* intake_;
  ServiceMetrics* metrics_;
  uint64_t messages_ = 0;  // read so far (to name a malformed one)
};

}  // namespace gphkv::server::grpcfe

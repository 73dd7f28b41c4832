// An Op as gphkv.v1 request messages, and an answer as an OpResult: what the
// unary and pipeline sessions share, so both count hits, bytes and errors
// the same way.
#pragma once

#include <cstdint>

#include "absl/types/span.h"
#include "gphkv/v1/gphkv.pb.h"
#include "loadgen/key_format.h"
#include "loadgen/target.h"

namespace gphkv::loadgen {

// Gets ask for the values (VALUE_MODE_VALUES), so value bytes travel as they
// do with memcached. With `names`, the op's ids go out as the byte keys they
// name (--key_format=bytes|tao), packed in key_bytes and key_lengths.
void FillGetRequest(const Op& op, v1::GetRequest* request, const ByteKeyNames* names = nullptr);
// Returns the value bytes the request carries (stamped with op.version).
uint64_t FillPutRequest(const Op& op, const ValuePool& values, v1::PutRequest* request,
                        const ByteKeyNames* names = nullptr);
void FillDeleteRequest(const Op& op, v1::DeleteRequest* request, const ByteKeyNames* names = nullptr);

// `keys`: the op's ids, in the request's order. With `inspect`, every value
// found is read back into OpResult::seen (read_check.h).
OpResult GetOpResult(const v1::GetResponse& response, absl::Span<const uint64_t> keys, const ValuePool* inspect);
OpResult PutOpResult(const v1::PutResponse& response, uint64_t sent_bytes);
OpResult DeleteOpResult(const v1::DeleteResponse& response);
// A call or operation refused with gRPC status `code`.
OpResult FailedOp(int code);

}  // namespace gphkv::loadgen

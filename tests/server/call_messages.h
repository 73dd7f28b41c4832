// A test's own request and response of each unary operation, for the Calls
// (server/call.h) it builds to point into; they must outlive the calls.
#pragma once

#include "gphkv/v1/gphkv.pb.h"

namespace gphkv::server::testing {

struct CallMessages {
  v1::GetRequest get;
  v1::GetResponse get_out;
  v1::PutRequest put;
  v1::PutResponse put_out;
  v1::DeleteRequest del;
  v1::DeleteResponse del_out;
};

}  // namespace gphkv::server::testing

// --api=unary (the default): every op is one Get, Put or Delete RPC on the
// generated stubs' async (completion-queue) API. Each session (driver
// thread) owns one completion queue and its `connections` channels, one TCP
// connection each, and polls completions itself with the deadline of its
// next scheduled send.
#pragma once

#include <memory>
#include <string>

#include "loadgen/target.h"

namespace gphkv::loadgen {

std::unique_ptr<Session> MakeGphkvUnarySession(const std::string& address, size_t connections,
                                               const ValuePool* values);

}  // namespace gphkv::loadgen

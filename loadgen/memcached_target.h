// memcached over its text protocol, written here on plain non-blocking TCP
// sockets: a batched get is one multi-get line (`get k1 k2 ...`), a batched
// put or delete is that many pipelined `set`/`delete` commands. Keys are the
// 64-bit keys in decimal. memcached answers each connection in order, so a
// connection keeps a FIFO of the calls whose answers it is still reading.
#pragma once

#include <memory>
#include <string>

#include "loadgen/target.h"

namespace gphkv::loadgen {

// `inspect_reads`: fill OpResult::seen for gets.
std::unique_ptr<Target> MakeMemcachedTarget(const std::string& address, const ValuePool* values, bool inspect_reads);

}  // namespace gphkv::loadgen

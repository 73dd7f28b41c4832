# Every dependency comes from Debian 12's packages (see .ci/install-deps).
find_package(Threads REQUIRED)
find_package(absl CONFIG REQUIRED)
find_package(Protobuf REQUIRED)
find_package(gRPC CONFIG REQUIRED)
find_package(spdlog CONFIG REQUIRED)
# The metrics registry (core) and its HTTP endpoint (pull: civetweb).
find_package(prometheus-cpp CONFIG REQUIRED)
if(GPHKV_BUILD_TESTS)
  find_package(GTest CONFIG REQUIRED)
endif()
if(GPHKV_BUILD_BENCH)
  find_package(benchmark CONFIG REQUIRED)
endif()

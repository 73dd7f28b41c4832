# gphkv_grpc_library(NAME proto...): a static library of the protobuf and gRPC
# code generated from the given .proto files (paths relative to the calling
# folder, which is also the import root), with the generated headers public.
function(gphkv_grpc_library name)
  add_library(${name} STATIC ${ARGN})
  target_link_libraries(${name} PUBLIC protobuf::libprotobuf gRPC::grpc++)
  set(gen ${CMAKE_CURRENT_BINARY_DIR}/gen)
  file(MAKE_DIRECTORY ${gen})
  target_include_directories(${name} PUBLIC ${gen})
  protobuf_generate(TARGET ${name} LANGUAGE cpp
    IMPORT_DIRS ${CMAKE_CURRENT_SOURCE_DIR} PROTOC_OUT_DIR ${gen})
  protobuf_generate(TARGET ${name} LANGUAGE grpc
    GENERATE_EXTENSIONS .grpc.pb.h .grpc.pb.cc
    PLUGIN "protoc-gen-grpc=\$<TARGET_FILE:gRPC::grpc_cpp_plugin>"
    IMPORT_DIRS ${CMAKE_CURRENT_SOURCE_DIR} PROTOC_OUT_DIR ${gen})
endfunction()

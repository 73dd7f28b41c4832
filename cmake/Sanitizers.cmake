# Sanitizer and fuzzing builds (scripts/sanitize.sh, scripts/fuzz.sh), each in
# a build folder of its own, CPU backend only.
#
# GPHKV_SANITIZE: "address,undefined" or "thread". Every report ends the
# process (ASan halts by default, UBSan with -fno-sanitize-recover, TSan with
# halt_on_error in scripts/sanitize.sh), so a report fails its test.
set(GPHKV_SANITIZE "" CACHE STRING "Sanitizers for every target: address,undefined or thread (empty: none)")
# GPHKV_FUZZ: the libFuzzer targets (tests/fuzz/), clang only; every target
# gets coverage instrumentation plus ASan and UBSan.
option(GPHKV_FUZZ "Build the libFuzzer targets (clang)" OFF)

if(GPHKV_SANITIZE)
  if(GPHKV_HAVE_CUDA)
    message(FATAL_ERROR "gphkv: GPHKV_SANITIZE needs -DGPHKV_CUDA=OFF (nvcc code is not instrumented)")
  endif()
  add_compile_options(-fsanitize=${GPHKV_SANITIZE} -fno-sanitize-recover=all -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${GPHKV_SANITIZE})
  message(STATUS "gphkv: sanitizers ${GPHKV_SANITIZE}")
endif()

if(GPHKV_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "gphkv: GPHKV_FUZZ needs clang (libFuzzer): -DCMAKE_CXX_COMPILER=clang++")
  endif()
  if(GPHKV_HAVE_CUDA)
    message(FATAL_ERROR "gphkv: GPHKV_FUZZ needs -DGPHKV_CUDA=OFF")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
  message(STATUS "gphkv: libFuzzer targets with ASan and UBSan")
endif()

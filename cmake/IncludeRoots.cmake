# Include roots that each hold one folder of the source tree.
#
# Code includes its own folder's headers by their path from the project root
# ("server/store.h", "tests/server/read_your_writes.h"). With the project root
# itself on a target's include path, "engine/cuda/cuda_table.h" would compile
# there as well, and the engine's private headers would be private in name
# only. So a target that includes "DIR/..." gets, instead of the project root,
# a root in the build tree whose only entry is a link to DIR: a stray include
# of another folder's header fails to compile.
function(gphkv_include_folder target scope dir)
  set(root ${PROJECT_BINARY_DIR}/include_roots/${dir})
  if(NOT IS_SYMLINK ${root}/${dir})
    file(MAKE_DIRECTORY ${root})
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${dir} ${root}/${dir} SYMBOLIC)
  endif()
  target_include_directories(${target} ${scope} ${root})
endfunction()

# Unity builds: most of a file's compile time is CAF's, gRPC's, CLI11's and
# GoogleTest's headers and templates, instantiated anew in every file. A
# target compiled as a few "unity" translation units, each including several
# of its files, builds in far less (actor_tests: 101 s -> 39 s on 2 cores).
# A developer changing one file may prefer per-file builds:
# -DTINYBROKER_UNITY_BUILD=OFF.
option(TINYBROKER_UNITY_BUILD
  "Compile the bigger targets as a few unity translation units" ON)

# tb_unity_build(<target> [BATCH <n>]) compiles `target`'s files n at a time
# (default 6) when TINYBROKER_UNITY_BUILD is on. Files that share a name in
# an anonymous namespace cannot share a unity translation unit.
function(tb_unity_build target)
  cmake_parse_arguments(arg "" "BATCH" "" ${ARGN})
  if(NOT arg_BATCH)
    set(arg_BATCH 6)
  endif()
  if(TINYBROKER_UNITY_BUILD)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON
      UNITY_BUILD_BATCH_SIZE ${arg_BATCH})
    # GCC takes every file but the unity one for a header, and warns when a
    # lambda or class there holds a type from its own anonymous namespace:
    # true of a header, not of a source file included once.
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
      target_compile_options(${target} PRIVATE -Wno-subobject-linkage)
    endif()
  endif()
endfunction()

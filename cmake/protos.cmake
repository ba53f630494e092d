# Generates C++ code for proto/tinybroker.proto and, for clients and tests,
# for the standard gRPC health and reflection protos.
set(TB_GEN_DIR ${CMAKE_CURRENT_BINARY_DIR}/gen)
file(MAKE_DIRECTORY ${TB_GEN_DIR})

# tb_generate(<out-var> <proto-dir> <relative proto path>) adds the codegen
# command and appends the generated .cc files to <out-var>.
function(tb_generate out_var proto_dir proto_rel)
  string(REGEX REPLACE "\\.proto$" "" stem ${proto_rel})
  set(outputs
    ${TB_GEN_DIR}/${stem}.pb.cc ${TB_GEN_DIR}/${stem}.pb.h
    ${TB_GEN_DIR}/${stem}.grpc.pb.cc ${TB_GEN_DIR}/${stem}.grpc.pb.h)
  add_custom_command(OUTPUT ${outputs}
    COMMAND protobuf::protoc
    ARGS --proto_path=${proto_dir} --cpp_out=${TB_GEN_DIR}
         --grpc_out=${TB_GEN_DIR}
         --plugin=protoc-gen-grpc=$<TARGET_FILE:gRPC::grpc_cpp_plugin>
         ${proto_dir}/${proto_rel}
    DEPENDS ${proto_dir}/${proto_rel}
    COMMENT "Generating C++ for ${proto_rel}")
  set(${out_var} ${${out_var}} ${TB_GEN_DIR}/${stem}.pb.cc
    ${TB_GEN_DIR}/${stem}.grpc.pb.cc PARENT_SCOPE)
endfunction()

set(TB_PROTO_SRCS)
tb_generate(TB_PROTO_SRCS ${PROJECT_SOURCE_DIR}/proto tinybroker.proto)
add_library(tb_proto STATIC ${TB_PROTO_SRCS})
# Installed, the generated headers sit in include/tinybroker (cmake/install.cmake).
target_include_directories(tb_proto SYSTEM PUBLIC
  $<BUILD_INTERFACE:${TB_GEN_DIR}>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/tinybroker>)
target_link_libraries(tb_proto PUBLIC protobuf::libprotobuf gRPC::grpc++)
# Under ThreadSanitizer every program with gRPC gets the hooks that show
# TSan gRPC's absl::Mutex (tests/tsan/absl_mutex_hooks.cpp); -rdynamic
# exports them so that they take libabsl_synchronization's place.
if(tb_sanitize STREQUAL "thread")
  target_sources(tb_proto INTERFACE
    ${PROJECT_SOURCE_DIR}/tests/tsan/absl_mutex_hooks.cpp)
  target_link_options(tb_proto INTERFACE -rdynamic)
  target_link_libraries(tb_proto INTERFACE ${CMAKE_DL_LIBS})
endif()

set(TB_STD_PROTO_SRCS)
tb_generate(TB_STD_PROTO_SRCS ${GRPC_STD_PROTO_DIR} grpc/health/v1/health.proto)
tb_generate(TB_STD_PROTO_SRCS ${GRPC_STD_PROTO_DIR}
  grpc/reflection/v1alpha/reflection.proto)
add_library(tb_std_protos STATIC ${TB_STD_PROTO_SRCS})
target_include_directories(tb_std_protos SYSTEM PUBLIC ${TB_GEN_DIR})
target_link_libraries(tb_std_protos PUBLIC protobuf::libprotobuf gRPC::grpc++)

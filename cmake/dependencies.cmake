# Finds the Debian 12 packages tinybroker builds on (see scripts/setup.sh).
find_package(Threads REQUIRED)
find_package(OpenSSL REQUIRED)
find_package(Protobuf REQUIRED)
find_package(gRPC CONFIG REQUIRED)
find_package(toml11 CONFIG REQUIRED)
find_package(GTest REQUIRED)

# cpp-httplib (Debian libcpp-httplib-dev) serves the metrics endpoint. It is
# a compiled library whose classes change with its feature macros, so its
# header must see the ones the library was built with
# (CPPHTTPLIB_OPENSSL_SUPPORT, ...): they come from its pkg-config file.
find_package(PkgConfig REQUIRED)
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)

# libsystemd (Debian libsystemd-dev): the broker tells systemd when it is
# ready (sd_notify, net/systemd_notify.hpp).
pkg_check_modules(SYSTEMD REQUIRED IMPORTED_TARGET libsystemd)

# OpenSSL (Debian libssl-dev): the broker checks its TLS files with it and
# sets up the metrics listener's HTTPS context (docs/security.md).
find_package(OpenSSL REQUIRED)

# jemalloc (Debian libjemalloc-dev) for the broker programs, unless off.
if(TINYBROKER_JEMALLOC)
  find_library(JEMALLOC_LIB jemalloc REQUIRED)
endif()

# Links the broker program `target` with the broker's allocator (jemalloc
# when TINYBROKER_JEMALLOC is on) and says which one it is.
function(tb_use_broker_allocator target)
  if(TINYBROKER_JEMALLOC)
    target_link_libraries(${target} PRIVATE ${JEMALLOC_LIB})
  endif()
endfunction()

# CAF 0.17 ships no CMake package config: find it by hand.
find_path(CAF_INCLUDE_DIR caf/all.hpp REQUIRED)
find_library(CAF_CORE_LIB caf_core REQUIRED)
add_library(caf_core INTERFACE)
# SYSTEM keeps CAF's own warnings out of -Wall -Wextra.
target_include_directories(caf_core SYSTEM INTERFACE ${CAF_INCLUDE_DIR})
target_link_libraries(caf_core INTERFACE ${CAF_CORE_LIB} Threads::Threads)
add_library(CAF::core ALIAS caf_core)
# The network layer and its TLS, for a cluster of nodes (docs/cluster.md);
# a single node loads neither at run time.
find_library(CAF_IO_LIB caf_io REQUIRED)
find_library(CAF_OPENSSL_LIB caf_openssl REQUIRED)
add_library(caf_io INTERFACE)
target_link_libraries(caf_io INTERFACE ${CAF_IO_LIB} caf_core)
add_library(CAF::io ALIAS caf_io)
add_library(caf_openssl INTERFACE)
target_link_libraries(caf_openssl INTERFACE ${CAF_OPENSSL_LIB} caf_io)
add_library(CAF::openssl ALIAS caf_openssl)
# Under ThreadSanitizer every program with CAF gets the mailbox hooks that
# show TSan CAF's message hand-over (tests/tsan/caf_mailbox_hooks.cpp);
# -rdynamic exports them so that they take libcaf_core's place.
if(tb_sanitize STREQUAL "thread")
  target_sources(caf_core INTERFACE
    ${PROJECT_SOURCE_DIR}/tests/tsan/caf_mailbox_hooks.cpp)
  target_link_options(caf_core INTERFACE -rdynamic)
  target_link_libraries(caf_core INTERFACE ${CMAKE_DL_LIBS})
endif()

# The standard gRPC health and reflection protos (Debian package grpc-proto).
find_path(GRPC_STD_PROTO_DIR grpc/health/v1/health.proto
  PATHS /usr/share/grpc-proto REQUIRED)

# NATS's C client (Debian libnats-dev), for tinybroker-nats-bench only: the
# nats form of scripts/cq_floor.py. Optional; setup.sh installs it.
pkg_check_modules(LIBNATS IMPORTED_TARGET libnats)

# What `cmake --install` puts where, and the .debs that `cpack -G DEB` makes
# from it (docs/client.md, docs/operations.md "Running as a service").
#
# Three components, each its own .deb (tinybroker, tinybroker-dev,
# python3-tinybroker):
#   broker  the programs, the systemd unit and the config the unit starts
#   client  the C++ client library, its headers, the generated protobuf
#           headers, a CMake package config (find_package(tinybroker) gives
#           tinybroker::client), a pkg-config file and the proto file
#   python  the Python client package (python/, with its generated gRPC
#           code) in lib/python3/dist-packages
# `cmake --install build --component client` installs the client alone.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(TB_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/tinybroker)
set(TB_INSTALL_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR}/tinybroker)

# -- the broker ----------------------------------------------------------------

install(TARGETS tinybroker tinybroker-cli tinybroker-bench tinybroker-relay
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT broker)

# Where the config and the unit's paths go is decided when installing, not
# when configuring: `cpack` installs with the prefix /usr, whose config
# belongs in /etc (not /usr/etc), while a build configured for /usr/local
# installs under /usr/local/etc.
install(CODE "
  if(CMAKE_INSTALL_PREFIX STREQUAL \"/usr\")
    set(TB_ETC_DIR /etc/tinybroker)
  else()
    set(TB_ETC_DIR \"\${CMAKE_INSTALL_PREFIX}/etc/tinybroker\")
  endif()
  # The config the service starts with.
  file(INSTALL DESTINATION \"\${TB_ETC_DIR}\" TYPE FILE
    FILES \"${PROJECT_SOURCE_DIR}/config/tinybroker.toml\")
" COMPONENT broker)

# The commented example of every key.
install(FILES ${PROJECT_SOURCE_DIR}/config/tinybroker.example.toml
  DESTINATION ${CMAKE_INSTALL_DATADIR}/tinybroker COMPONENT broker)

# The systemd unit (Type=notify: the broker says READY=1 once its port is
# bound), made at install time with the installed paths. Units live under
# lib/systemd/system of the prefix (/usr/lib/... for the package).
install(CODE "
  set(TB_UNIT_BINARY \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/tinybroker\")
  set(TB_UNIT_CONFIG \"\${TB_ETC_DIR}/tinybroker.toml\")
  configure_file(\"${PROJECT_SOURCE_DIR}/config/tinybroker.service.in\"
    \"${PROJECT_BINARY_DIR}/tinybroker.service\" @ONLY)
" COMPONENT broker)
install(FILES ${PROJECT_BINARY_DIR}/tinybroker.service
  DESTINATION lib/systemd/system COMPONENT broker)

# -- the C++ client ------------------------------------------------------------

set_target_properties(tinybroker_client PROPERTIES EXPORT_NAME client
  POSITION_INDEPENDENT_CODE ON)
set_target_properties(tb_proto PROPERTIES EXPORT_NAME proto
  OUTPUT_NAME tinybroker_proto POSITION_INDEPENDENT_CODE ON)
install(TARGETS tinybroker_client tb_proto EXPORT tinybrokerTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT client)
# install(TARGETS) strips programs only: a stripping install (`cpack`, whose
# CPACK_STRIP_FILES sets CMAKE_INSTALL_DO_STRIP, or `cmake --install
# --strip`) drops the static libraries' debug information too (12 MB each
# in a RelWithDebInfo build), keeping their symbols.
install(CODE "
  if(CMAKE_INSTALL_DO_STRIP)
    foreach(lib tinybroker_client tinybroker_proto)
      set(path \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/lib\${lib}.a\")
      execute_process(COMMAND \"${CMAKE_STRIP}\" --strip-debug
        --enable-deterministic-archives \"\${path}\" RESULT_VARIABLE rc)
      if(NOT rc EQUAL 0)
        message(FATAL_ERROR \"strip --strip-debug \${path} failed\")
      endif()
    endforeach()
  endif()
" COMPONENT client)

# The public headers: async_client.hpp and what it includes. client/detail/
# and the .cpp files stay private.
file(GLOB tb_client_headers ${PROJECT_SOURCE_DIR}/client/*.hpp)
install(FILES ${tb_client_headers}
  DESTINATION ${TB_INSTALL_INCLUDEDIR}/client COMPONENT client)
install(FILES ${TB_GEN_DIR}/tinybroker.pb.h ${TB_GEN_DIR}/tinybroker.grpc.pb.h
  DESTINATION ${TB_INSTALL_INCLUDEDIR} COMPONENT client)
install(FILES ${PROJECT_SOURCE_DIR}/proto/tinybroker.proto
  DESTINATION ${CMAKE_INSTALL_DATADIR}/tinybroker/proto COMPONENT client)

install(EXPORT tinybrokerTargets NAMESPACE tinybroker::
  DESTINATION ${TB_INSTALL_CMAKEDIR} COMPONENT client)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tinybrokerConfig.cmake.in
  ${PROJECT_BINARY_DIR}/tinybrokerConfig.cmake
  INSTALL_DESTINATION ${TB_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/tinybrokerConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/tinybrokerConfig.cmake
  ${PROJECT_BINARY_DIR}/tinybrokerConfigVersion.cmake
  DESTINATION ${TB_INSTALL_CMAKEDIR} COMPONENT client)

# pkg-config: `pkg-config --cflags --libs tinybroker`. The paths are relative
# to the file's own place, so the installed tree can move.
file(RELATIVE_PATH TB_PC_TO_PREFIX
  /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
configure_file(${PROJECT_SOURCE_DIR}/cmake/tinybroker.pc.in
  ${PROJECT_BINARY_DIR}/tinybroker.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/tinybroker.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT client)

# -- the Python client -------------------------------------------------------

# The package as the `python_example` target (examples/CMakeLists.txt, built
# by `all`) lays it out in the build tree: python/tinybroker and its
# generated _proto modules. lib/python3/dist-packages is where Debian's
# python3 looks under /usr (the .deb); it does not look there under
# /usr/local, so another prefix needs PYTHONPATH.
install(DIRECTORY ${PROJECT_BINARY_DIR}/examples/python/tinybroker
  DESTINATION lib/python3/dist-packages COMPONENT python
  PATTERN __pycache__ EXCLUDE PATTERN *.pyc EXCLUDE)

# -- the .debs -----------------------------------------------------------------
# `cpack -G DEB` in the build directory makes one package per component,
# clean under lintian (tests/install/deb_test.sh):
#   tinybroker          the broker component (programs, unit, config)
#   tinybroker-dev      the client component; depends on the gRPC and
#                       protobuf development files a program built on it needs
#   python3-tinybroker  the python component (architecture all)
# Their dependencies on shared libraries come from dpkg-shlibdeps, programs
# and libraries are stripped. Each carries the copyright file and changelog
# Debian wants in /usr/share/doc/PACKAGE, and lintian overrides explaining
# the warnings that stay (cmake/deb/).
set(CPACK_PACKAGE_NAME tinybroker)
set(CPACK_PACKAGE_VENDOR "tinybroker")
# example.org: the project has no list address yet; set it when building
# packages for others (-DCPACK_PACKAGE_CONTACT=...).
set(CPACK_PACKAGE_CONTACT "tinybroker maintainers <tinybroker@example.org>"
  CACHE STRING "the Maintainer of the .debs")
# No CPACK_PACKAGE_DESCRIPTION_SUMMARY: CPack would make it every package's
# synopsis; the first line of each CPACK_DEBIAN_<COMPONENT>_DESCRIPTION is.
set(CPACK_PACKAGE_INSTALL_DIRECTORY tinybroker)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# Install with DESTDIR and the real prefix, so that the config goes to /etc
# and the unit names /usr/bin/tinybroker.
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL broker client python)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_COMPRESSION_TYPE gzip)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

set(CPACK_DEBIAN_BROKER_PACKAGE_NAME tinybroker)
set(CPACK_DEBIAN_BROKER_PACKAGE_SECTION net)
# No Depends on systemd: the broker runs without it (a container, another
# init); libsystemd0 (sd_notify) comes from dpkg-shlibdeps.
set(CPACK_DEBIAN_BROKER_PACKAGE_SUGGESTS "python3-tinybroker, tinybroker-dev")
set(CPACK_DEBIAN_BROKER_DESCRIPTION
  "in-memory message broker with consumer groups, wildcard topics and acks
A single-node broker with a gRPC API: wildcard topic patterns, consumer
groups that give each message to one worker of a pool, and acks with
redelivery. Everything is held in memory. This package has the broker, its
command-line client, load generator and relay, a systemd unit (not enabled
on install) and the config in /etc/tinybroker.")

set(CPACK_DEBIAN_CLIENT_PACKAGE_NAME tinybroker-dev)
set(CPACK_DEBIAN_CLIENT_PACKAGE_SECTION libdevel)
# What a program built on the client needs (docs/client.md).
set(CPACK_DEBIAN_CLIENT_PACKAGE_DEPENDS "libgrpc++-dev, libprotobuf-dev")
set(CPACK_DEBIAN_CLIENT_DESCRIPTION
  "C++ client library for the tinybroker message broker
The static client library of tinybroker, its headers, the generated
protobuf and gRPC code, a CMake package (find_package(tinybroker)), a
pkg-config file and the protocol file.")

set(CPACK_DEBIAN_PYTHON_PACKAGE_NAME python3-tinybroker)
set(CPACK_DEBIAN_PYTHON_PACKAGE_SECTION python)
set(CPACK_DEBIAN_PYTHON_PACKAGE_ARCHITECTURE all)
set(CPACK_DEBIAN_PYTHON_PACKAGE_DEPENDS
  "python3:any, python3-grpcio, python3-protobuf")
set(CPACK_DEBIAN_PYTHON_DESCRIPTION
  "Python client for the tinybroker message broker
The tinybroker package for Debian's python3: a threaded client and an
asyncio one (tinybroker.aio) over python3-grpcio.")

# The files Debian wants in each package's /usr/share/doc and the lintian
# overrides; the changelog compressed as lintian asks (gzip -9n).
configure_file(${PROJECT_SOURCE_DIR}/cmake/deb/changelog.in
  ${PROJECT_BINARY_DIR}/deb/changelog @ONLY)
execute_process(COMMAND gzip -9nc ${PROJECT_BINARY_DIR}/deb/changelog
  OUTPUT_FILE ${PROJECT_BINARY_DIR}/deb/changelog.gz)
foreach(pair broker:tinybroker client:tinybroker-dev python:python3-tinybroker)
  string(REPLACE ":" ";" pair ${pair})
  list(GET pair 0 component)
  list(GET pair 1 package)
  install(FILES ${PROJECT_SOURCE_DIR}/cmake/deb/copyright
    ${PROJECT_BINARY_DIR}/deb/changelog.gz
    DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/${package} COMPONENT ${component})
  if(EXISTS ${PROJECT_SOURCE_DIR}/cmake/deb/${package}.lintian-overrides)
    install(FILES ${PROJECT_SOURCE_DIR}/cmake/deb/${package}.lintian-overrides
      DESTINATION ${CMAKE_INSTALL_DATADIR}/lintian/overrides
      RENAME ${package} COMPONENT ${component})
  endif()
endforeach()

# The maintainer scripts (cmake/deb/*.in). The config in /etc is the
# admin's: dpkg keeps their edits on upgrade.
file(WRITE ${PROJECT_BINARY_DIR}/deb/broker/conffiles
  "/etc/tinybroker/tinybroker.toml\n")
set(tb_deb_script_permissions FILE_PERMISSIONS OWNER_READ OWNER_WRITE
  OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
foreach(script postinst prerm postrm)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/deb/${script}.in
    ${PROJECT_BINARY_DIR}/deb/broker/${script} @ONLY ${tb_deb_script_permissions})
  list(APPEND CPACK_DEBIAN_BROKER_PACKAGE_CONTROL_EXTRA
    ${PROJECT_BINARY_DIR}/deb/broker/${script})
endforeach()
list(APPEND CPACK_DEBIAN_BROKER_PACKAGE_CONTROL_EXTRA
  ${PROJECT_BINARY_DIR}/deb/broker/conffiles)
configure_file(${PROJECT_SOURCE_DIR}/cmake/deb/python-prerm.in
  ${PROJECT_BINARY_DIR}/deb/python/prerm @ONLY ${tb_deb_script_permissions})
set(CPACK_DEBIAN_PYTHON_PACKAGE_CONTROL_EXTRA ${PROJECT_BINARY_DIR}/deb/python/prerm)
include(CPack)

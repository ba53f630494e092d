# What `cmake --install` puts where, and the .deb that `cpack -G DEB` makes
# from it (docs/client.md, docs/operations.md "Running as a service").
#
# Three components:
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

# -- the .deb ------------------------------------------------------------------
# `cpack -G DEB` in the build directory; one package with all components,
# its dependencies found by dpkg-shlibdeps, binaries stripped.
set(CPACK_PACKAGE_NAME tinybroker)
set(CPACK_PACKAGE_VENDOR "tinybroker")
set(CPACK_PACKAGE_CONTACT "tinybroker maintainers <tinybroker@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "in-memory message broker with consumer groups, wildcard topics and acks")
set(CPACK_PACKAGE_INSTALL_DIRECTORY tinybroker)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# Install with DESTDIR and the real prefix, so that the config goes to /etc
# and the unit names /usr/bin/tinybroker.
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "systemd")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "libgrpc++-dev, libprotobuf-dev")
# What `import tinybroker` needs.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3-grpcio, python3-protobuf")
set(CPACK_DEBIAN_COMPRESSION_TYPE gzip)
# The config in /etc is the admin's: dpkg keeps their edits on upgrade.
file(WRITE ${PROJECT_BINARY_DIR}/deb/conffiles
  "/etc/tinybroker/tinybroker.toml\n")
foreach(script postinst prerm)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/deb-${script}.in
    ${PROJECT_BINARY_DIR}/deb/${script} @ONLY
    FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ
    GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
endforeach()
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${PROJECT_BINARY_DIR}/deb/conffiles
  ${PROJECT_BINARY_DIR}/deb/postinst ${PROJECT_BINARY_DIR}/deb/prerm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)

# The console's page (issue 27), served by the broker at `/` on its metrics
# listener: the files under console/ become a generated source of the
# broker (cmake/embed_console.cmake), so that the page needs no file and no
# network at run time, and no tool but CMake at build time.
set(TB_CONSOLE_FILES index.html console.js charts.js console.css)
set(TB_CONSOLE_SOURCE ${CMAKE_CURRENT_BINARY_DIR}/gen/console_assets.cpp)
set(tb_console_inputs "")
foreach(name IN LISTS TB_CONSOLE_FILES)
  list(APPEND tb_console_inputs ${PROJECT_SOURCE_DIR}/console/${name})
endforeach()
string(REPLACE ";" "," tb_console_list "${TB_CONSOLE_FILES}")
add_custom_command(OUTPUT ${TB_CONSOLE_SOURCE}
  COMMAND ${CMAKE_COMMAND} -DOUT=${TB_CONSOLE_SOURCE}
          -DDIR=${PROJECT_SOURCE_DIR}/console -DFILES=${tb_console_list}
          -P ${PROJECT_SOURCE_DIR}/cmake/embed_console.cmake
  DEPENDS ${tb_console_inputs} ${PROJECT_SOURCE_DIR}/cmake/embed_console.cmake
  COMMENT "Embedding the console's page"
  VERBATIM)

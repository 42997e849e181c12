# mold_add_plugin(NAME SOURCES src... [LIBRARIES lib...] [DATA file...]
#                 [OUTPUT_DIRECTORY dir] [NO_INSTALL])
#
# Builds a mold plugin: a module library NAME.so (no "lib" prefix) with hidden symbols
# (only MOLD_PLUGIN's entry point is exported), linked to mold::core. Each DATA file
# (e.g. calibration.toml) is copied beside the library as NAME.<file name>
# (NAME.calibration.toml), where the plugin finds it with registrar.data_file("calibration.toml").
# A plugin that uses tensors (a Backend, a model) passes mold::torch in LIBRARIES (and finds
# mold with COMPONENTS torch).
# Installs all into MOLD_PLUGIN_INSTALL_DIR (lib/mold/plugins) unless NO_INSTALL (or, inside
# mold's own build, MOLD_INSTALL is off).
function(mold_add_plugin name)
  cmake_parse_arguments(ARG "NO_INSTALL" "OUTPUT_DIRECTORY" "SOURCES;LIBRARIES;DATA"
                        ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "mold_add_plugin(${name}): give SOURCES")
  endif()
  if(NOT ARG_OUTPUT_DIRECTORY)
    if(DEFINED MOLD_PLUGIN_OUTPUT_DIR)
      set(ARG_OUTPUT_DIRECTORY ${MOLD_PLUGIN_OUTPUT_DIR})
    else()
      set(ARG_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
    endif()
  endif()
  if(NOT DEFINED MOLD_PLUGIN_INSTALL_DIR)
    set(MOLD_PLUGIN_INSTALL_DIR lib/mold/plugins)
  endif()
  set(install TRUE)
  if(ARG_NO_INSTALL OR (DEFINED MOLD_INSTALL AND NOT MOLD_INSTALL))
    set(install FALSE)
  endif()

  add_library(${name} MODULE ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE mold::core ${ARG_LIBRARIES})
  target_compile_features(${name} PRIVATE cxx_std_17)
  set_target_properties(${name} PROPERTIES
    PREFIX ""
    LIBRARY_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIRECTORY}
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    INSTALL_RPATH "$ORIGIN/../..")
  if(install)
    install(TARGETS ${name} LIBRARY DESTINATION ${MOLD_PLUGIN_INSTALL_DIR})
  endif()

  set(copies)
  foreach(file IN LISTS ARG_DATA)
    get_filename_component(source ${file} ABSOLUTE)
    get_filename_component(file_name ${file} NAME)
    set(copied ${ARG_OUTPUT_DIRECTORY}/${name}.${file_name})
    add_custom_command(OUTPUT ${copied}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${ARG_OUTPUT_DIRECTORY}
      COMMAND ${CMAKE_COMMAND} -E copy_if_different ${source} ${copied}
      DEPENDS ${source} COMMENT "Copying ${name}.${file_name}")
    list(APPEND copies ${copied})
    if(install)
      install(FILES ${source} DESTINATION ${MOLD_PLUGIN_INSTALL_DIR} RENAME ${name}.${file_name})
    endif()
  endforeach()
  if(copies)
    add_custom_target(${name}_data ALL DEPENDS ${copies})
    add_dependencies(${name} ${name}_data)
  endif()
endfunction()

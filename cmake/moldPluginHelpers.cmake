# mold_add_plugin(NAME SOURCES src... [LIBRARIES lib...] [DATA file...]
#                 [COMPANION_SOURCES src... [COMPANION_LIBRARIES lib...]
#                  [SHARED_SOURCES src...]]
#                 [OUTPUT_DIRECTORY dir] [NO_INSTALL])
#
# Builds a mold plugin: a module library NAME.so (no "lib" prefix) with hidden symbols
# (only MOLD_PLUGIN's entry point is exported), linked to mold::core. Each DATA file
# (e.g. calibration.toml) is copied beside the library as NAME.<file name>
# (NAME.calibration.toml), where the plugin finds it with registrar.data_file("calibration.toml").
# A plugin that uses tensors (a Backend, a model) passes mold::torch in LIBRARIES (and finds
# mold with COMPONENTS torch).
# COMPANION_SOURCES: the plugin's companion (mold/plugin/companion.hpp), a module library
# NAME/torch.so beside the plugin, linked to mold::core and COMPANION_LIBRARIES (mold::torch),
# which the plugin loads the first time one of its factories is called: the plugin itself
# then links no libtorch. SHARED_SOURCES are compiled once into both (e.g. the estimators
# and architectures, which the plugin registers and the companion's pipelines use).
# Installs all into MOLD_PLUGIN_INSTALL_DIR (lib/mold/plugins) unless NO_INSTALL (or, inside
# mold's own build, MOLD_INSTALL is off).
function(mold_add_plugin name)
  cmake_parse_arguments(ARG "NO_INSTALL" "OUTPUT_DIRECTORY"
                        "SOURCES;LIBRARIES;DATA;COMPANION_SOURCES;COMPANION_LIBRARIES;SHARED_SOURCES"
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

  set(parts ${name})
  if(ARG_COMPANION_SOURCES)
    add_library(${name}_companion MODULE ${ARG_COMPANION_SOURCES})
    target_link_libraries(${name}_companion PRIVATE mold::core ${ARG_LIBRARIES}
                                                     ${ARG_COMPANION_LIBRARIES})
    target_compile_features(${name}_companion PRIVATE cxx_std_17)
    set_target_properties(${name}_companion PROPERTIES
      PREFIX ""
      OUTPUT_NAME torch
      LIBRARY_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIRECTORY}/${name}
      CXX_VISIBILITY_PRESET hidden
      VISIBILITY_INLINES_HIDDEN ON
      INSTALL_RPATH "$ORIGIN/../../..")
    # Building the plugin builds the library it loads.
    add_dependencies(${name} ${name}_companion)
    list(APPEND parts ${name}_companion)
    if(install)
      install(TARGETS ${name}_companion LIBRARY DESTINATION ${MOLD_PLUGIN_INSTALL_DIR}/${name})
    endif()
  endif()
  if(ARG_SHARED_SOURCES)
    add_library(${name}_shared OBJECT ${ARG_SHARED_SOURCES})
    target_link_libraries(${name}_shared PRIVATE mold::core ${ARG_LIBRARIES})
    target_compile_features(${name}_shared PRIVATE cxx_std_17)
    set_target_properties(${name}_shared PROPERTIES
      POSITION_INDEPENDENT_CODE ON
      CXX_VISIBILITY_PRESET hidden
      VISIBILITY_INLINES_HIDDEN ON)
    foreach(part IN LISTS parts)
      target_sources(${part} PRIVATE $<TARGET_OBJECTS:${name}_shared>)
    endforeach()
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

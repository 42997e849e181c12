# libtorch's <ATen/ATen.h>, precompiled for the translation units of mold's tree that
# include it. Measured on the 2-core machine (GCC 12, -O2 -g): a unit that includes ATen
# costs 24-31 s of CPU without the precompiled header and 7-8 s with it; a unit that does
# not include ATen costs 2.8 s alone and 5.4 s with it (loading the 336 MB header), so
# only the units that reach ATen use it.
#
#   mold_precompile_aten(TARGET [REUSE_FROM DONOR] [WITH HEADER...])
#
# WITH: headers precompiled with ATen (<catch2/catch.hpp> for the test tiers), and alone
# when MOLD_PRECOMPILE_HEADERS is OFF. REUSE_FROM: TARGET uses DONOR's precompiled header
# instead of making its own. A precompiled header is valid only under the flags it was
# made with (-fPIC for shared libraries and plugins, PIE for executables and static
# libraries, the plugins' hidden visibility), so targets share one only within such a
# group. Both compilers accept a -D flag that the using target adds, but GCC refuses a
# header made under a -D flag the user lacks: the libraries' <TARGET>_EXPORTS, which
# mold's code does not use, is not defined for them (DEFINE_SYMBOL).
option(MOLD_PRECOMPILE_HEADERS "Precompile libtorch's ATen header" ON)

# Where the quoted and <mold/...> includes of mold's sources are found.
set(MOLD_INCLUDE_ROOTS
    ${PROJECT_SOURCE_DIR}/core/include ${PROJECT_SOURCE_DIR}/core/src
    ${PROJECT_SOURCE_DIR}/torch/include ${PROJECT_SOURCE_DIR}/torch/src
    ${PROJECT_SOURCE_DIR}/net/include ${PROJECT_SOURCE_DIR}/net/src
    ${PROJECT_SOURCE_DIR}/tools ${PROJECT_SOURCE_DIR}/tests ${PROJECT_SOURCE_DIR})

# mold_reaches_aten(FILE RESULT): whether FILE includes <ATen/...> or <torch/...>, itself
# or through the headers of mold's tree it includes (found beside it or under
# MOLD_INCLUDE_ROOTS). Remembered per file for the whole configure run.
function(mold_reaches_aten file result)
  get_property(known GLOBAL PROPERTY "mold_reaches_aten:${file}" SET)
  if(known)
    get_property(value GLOBAL PROPERTY "mold_reaches_aten:${file}")
    set(${result} ${value} PARENT_SCOPE)
    return()
  endif()
  set_property(GLOBAL PROPERTY "mold_reaches_aten:${file}" FALSE)  # an include cycle ends
  set(value FALSE)
  get_filename_component(dir ${file} DIRECTORY)
  file(STRINGS ${file} includes REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]")
  foreach(line IN LISTS includes)
    if(line MATCHES "<(ATen|torch)/")
      set(value TRUE)
      break()
    endif()
    if(NOT line MATCHES "[<\"]([^>\"]+)[>\"]")
      continue()
    endif()
    set(name ${CMAKE_MATCH_1})
    foreach(root ${dir} ${MOLD_INCLUDE_ROOTS})
      if(EXISTS ${root}/${name} AND NOT IS_DIRECTORY ${root}/${name})
        get_filename_component(header ${root}/${name} ABSOLUTE)
        mold_reaches_aten(${header} reaches)
        if(reaches)
          set(value TRUE)
        endif()
        break()
      endif()
    endforeach()
    if(value)
      break()
    endif()
  endforeach()
  set_property(GLOBAL PROPERTY "mold_reaches_aten:${file}" ${value})
  set(${result} ${value} PARENT_SCOPE)
endfunction()

function(mold_precompile_aten target)
  cmake_parse_arguments(ARG "" "REUSE_FROM" "WITH" ${ARGN})
  if(NOT MOLD_PRECOMPILE_HEADERS)
    if(ARG_WITH)
      target_precompile_headers(${target} PRIVATE ${ARG_WITH})
    endif()
    return()
  endif()
  get_target_property(type ${target} TYPE)
  if(type MATCHES "SHARED_LIBRARY|MODULE_LIBRARY")
    set_target_properties(${target} PROPERTIES DEFINE_SYMBOL "")
  endif()
  if(ARG_REUSE_FROM)
    target_precompile_headers(${target} REUSE_FROM ${ARG_REUSE_FROM})
  else()
    target_precompile_headers(${target} PRIVATE <ATen/ATen.h> ${ARG_WITH})
  endif()
  get_target_property(sources ${target} SOURCES)
  get_target_property(source_dir ${target} SOURCE_DIR)
  foreach(source IN LISTS sources)
    if(source MATCHES "^\\$<")  # a generator expression (objects of another target)
      continue()
    endif()
    get_filename_component(path ${source} ABSOLUTE BASE_DIR ${source_dir})
    mold_reaches_aten(${path} reaches)
    if(NOT reaches)
      set_source_files_properties(${source} TARGET_DIRECTORY ${target}
                                  PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
    endif()
  endforeach()
endfunction()

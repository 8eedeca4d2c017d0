# pybind11's headers at a path that does not change between builds.
#
# pip builds every `pip install .` in an isolated environment at a new temporary path
# (/tmp/pip-build-env-XXXX), where it installs pybind11 afresh; pybind11's targets point the
# compiler at the headers there. scikit-build-core keeps its build folder (build/{wheel_tag}),
# but each new include path changes every translation unit's command line, and the old one
# is gone: ninja recompiled the whole core on every install (`pip install .` and then
# `pip install ".[test]"` built it twice). Here the headers are copied into the build folder,
# each file only when its content differs (its timestamp kept otherwise), and the targets
# point there: a second build with the same pybind11 compiles nothing. The folder is named
# after pybind11's version, so another version is a new folder and a full build.
#
# file(COPY_FILE ... ONLY_IF_DIFFERENT) needs CMake 3.21; an older CMake keeps pybind11's own
# path (correct, only slower).
if(CMAKE_VERSION VERSION_LESS 3.21 OR NOT IS_DIRECTORY "${pybind11_INCLUDE_DIR}/pybind11")
  return()
endif()
set(_pb_src "${pybind11_INCLUDE_DIR}")
set(_pb_dst "${CMAKE_BINARY_DIR}/_deps/pybind11-${pybind11_VERSION}/include")
if(_pb_src STREQUAL _pb_dst)
  return()
endif()
get_filename_component(_pb_src_real "${_pb_src}" REALPATH)
file(GLOB_RECURSE _pb_headers RELATIVE "${_pb_src}" "${_pb_src}/pybind11/*")
foreach(_h IN LISTS _pb_headers)
  get_filename_component(_d "${_pb_dst}/${_h}" DIRECTORY)
  file(MAKE_DIRECTORY "${_d}")
  file(COPY_FILE "${_pb_src}/${_h}" "${_pb_dst}/${_h}" ONLY_IF_DIFFERENT)
endforeach()
foreach(_t pybind11::pybind11_headers pybind11::headers pybind11::pybind11)
  if(TARGET ${_t})
    get_target_property(_inc ${_t} INTERFACE_INCLUDE_DIRECTORIES)
    if(_inc)
      set(_new "")
      foreach(_dir IN LISTS _inc)
        get_filename_component(_real "${_dir}" REALPATH)
        if(_real STREQUAL _pb_src_real)
          set(_dir "${_pb_dst}")
        endif()
        list(APPEND _new "${_dir}")
      endforeach()
      set_target_properties(${_t} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_new}")
    endif()
  endif()
endforeach()
set(pybind11_INCLUDE_DIR "${_pb_dst}")
message(STATUS "chrono_engine: pybind11 ${pybind11_VERSION} headers copied to ${_pb_dst} (a path that stays put between isolated builds)")

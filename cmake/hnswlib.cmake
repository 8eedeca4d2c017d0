# hnswlib 0.8.0 headers, fetched at configure time, never committed.
#
# Resolution order:
#   1. CHRONO_HNSWLIB_INCLUDE_DIR (CMake cache variable or environment variable): a directory
#      that contains hnswlib/hnswlib.h (offline builds);
#   2. CHRONO_HNSWLIB_SDIST (cache or environment): a path to hnswlib-0.8.0.tar.gz;
#   3. a tarball already in the build tree or in ~/.cache/chrono_engine;
#   4. `python -m pip download --no-deps --no-binary hnswlib hnswlib==0.8.0`.
# The tarball's SHA-256 is checked, and headers without BaseFilterFunctor (hnswlib < 0.7,
# e.g. Debian's 0.6.2) are refused.
set(CHRONO_HNSWLIB_VERSION "0.8.0")
set(CHRONO_HNSWLIB_SHA256 "cb6d037eedebb34a7134e7dc78966441dfd04c9cf5ee93911be911ced951c44c")
set(CHRONO_HNSWLIB_INCLUDE_DIR "$ENV{CHRONO_HNSWLIB_INCLUDE_DIR}" CACHE PATH "directory holding hnswlib/hnswlib.h (skips the download)")
set(CHRONO_HNSWLIB_SDIST "$ENV{CHRONO_HNSWLIB_SDIST}" CACHE FILEPATH "path to hnswlib-${CHRONO_HNSWLIB_VERSION}.tar.gz")
# An environment variable set now wins over the cache: a build that failed offline cached
# the empty value, and `set(... CACHE ...)` never replaces a cached one.
if(NOT "$ENV{CHRONO_HNSWLIB_INCLUDE_DIR}" STREQUAL "")
  set(CHRONO_HNSWLIB_INCLUDE_DIR "$ENV{CHRONO_HNSWLIB_INCLUDE_DIR}" CACHE PATH "directory holding hnswlib/hnswlib.h (skips the download)" FORCE)
endif()
if(NOT "$ENV{CHRONO_HNSWLIB_SDIST}" STREQUAL "")
  set(CHRONO_HNSWLIB_SDIST "$ENV{CHRONO_HNSWLIB_SDIST}" CACHE FILEPATH "path to hnswlib-${CHRONO_HNSWLIB_VERSION}.tar.gz" FORCE)
endif()

set(_tarname "hnswlib-${CHRONO_HNSWLIB_VERSION}.tar.gz")
if(NOT CHRONO_HNSWLIB_INCLUDE_DIR)
  set(_deps "${CMAKE_BINARY_DIR}/_deps")
  set(_user_cache "$ENV{HOME}/.cache/chrono_engine")
  set(_tar "")
  foreach(_cand "${CHRONO_HNSWLIB_SDIST}" "${_deps}/${_tarname}" "${_user_cache}/${_tarname}")
    if(_cand AND EXISTS "${_cand}")
      file(SHA256 "${_cand}" _sum)
      if(_sum STREQUAL CHRONO_HNSWLIB_SHA256)
        set(_tar "${_cand}")
        break()
      else()
        message(WARNING "ignoring ${_cand}: SHA-256 ${_sum} is not the pinned ${CHRONO_HNSWLIB_SHA256}")
      endif()
    endif()
  endforeach()
  if(NOT _tar)
    message(STATUS "chrono_engine: downloading hnswlib==${CHRONO_HNSWLIB_VERSION} (sdist) with pip")
    file(MAKE_DIRECTORY "${_deps}")
    execute_process(
      COMMAND "${Python_EXECUTABLE}" -m pip download --no-deps --no-binary hnswlib
              "hnswlib==${CHRONO_HNSWLIB_VERSION}" -d "${_deps}" --disable-pip-version-check -q
      RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
    if(NOT _rc EQUAL 0 OR NOT EXISTS "${_deps}/${_tarname}")
      message(FATAL_ERROR "could not download hnswlib==${CHRONO_HNSWLIB_VERSION} with pip (${_rc}): ${_err}\n"
                          "Offline? Set CHRONO_HNSWLIB_INCLUDE_DIR to a directory holding hnswlib/hnswlib.h, "
                          "or CHRONO_HNSWLIB_SDIST to the sdist tarball.")
    endif()
    file(SHA256 "${_deps}/${_tarname}" _sum)
    if(NOT _sum STREQUAL CHRONO_HNSWLIB_SHA256)
      message(FATAL_ERROR "hnswlib sdist checksum mismatch: got ${_sum}, pinned ${CHRONO_HNSWLIB_SHA256}")
    endif()
    set(_tar "${_deps}/${_tarname}")
    # keep a copy for later (isolated) builds on this machine; failure to do so is harmless
    file(MAKE_DIRECTORY "${_user_cache}")
    file(COPY "${_tar}" DESTINATION "${_user_cache}")
  endif()
  set(_src "${_deps}/hnswlib-${CHRONO_HNSWLIB_VERSION}")
  if(NOT EXISTS "${_src}/hnswlib/hnswlib.h")
    file(ARCHIVE_EXTRACT INPUT "${_tar}" DESTINATION "${_deps}"
         PATTERNS "hnswlib-${CHRONO_HNSWLIB_VERSION}/hnswlib/*.h" "hnswlib-${CHRONO_HNSWLIB_VERSION}/LICENSE")
  endif()
  set(CHRONO_HNSWLIB_INCLUDE_DIR "${_src}" CACHE PATH "directory holding hnswlib/hnswlib.h (skips the download)" FORCE)
endif()

if(NOT EXISTS "${CHRONO_HNSWLIB_INCLUDE_DIR}/hnswlib/hnswlib.h")
  message(FATAL_ERROR "CHRONO_HNSWLIB_INCLUDE_DIR=${CHRONO_HNSWLIB_INCLUDE_DIR} has no hnswlib/hnswlib.h")
endif()
file(READ "${CHRONO_HNSWLIB_INCLUDE_DIR}/hnswlib/hnswlib.h" _hnsw_h)
string(FIND "${_hnsw_h}" "BaseFilterFunctor" _has_filter)
if(_has_filter EQUAL -1)
  message(FATAL_ERROR "hnswlib headers in ${CHRONO_HNSWLIB_INCLUDE_DIR} lack BaseFilterFunctor (need >= 0.7; pinned ${CHRONO_HNSWLIB_VERSION})")
endif()
add_library(chrono_hnswlib INTERFACE)
target_include_directories(chrono_hnswlib SYSTEM INTERFACE "${CHRONO_HNSWLIB_INCLUDE_DIR}")
message(STATUS "chrono_engine: hnswlib headers from ${CHRONO_HNSWLIB_INCLUDE_DIR}")

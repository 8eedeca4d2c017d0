# CMake toolchain file: the core cross-compiled for 64-bit Arm Linux (aarch64) on an x86-64
# Debian host, with Debian's cross compiler (apt: g++-aarch64-linux-gnu). Used by
# scripts/aarch64_qemu.sh, which also gives the arm64 Python (its headers and, run under
# qemu-user, its interpreter):
#
#   cmake -S . -B build/aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
#         -DCHRONO_AARCH64_ROOT=<an unpacked arm64 root holding usr/include/python3.11> ...
#
# No -march: the compiler's default for aarch64 is Armv8-A with NEON (Advanced SIMD), which
# every 64-bit Arm CPU has; GCC auto-vectorises the kernels with it at -O3. The baseline's
# name (build_info()["baseline"]) is CMAKE_SYSTEM_PROCESSOR, "aarch64" (CMakeLists.txt).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CHRONO_CROSS_PREFIX "aarch64-linux-gnu-" CACHE STRING "prefix of the cross compiler's commands")
set(CMAKE_CXX_COMPILER "${CHRONO_CROSS_PREFIX}g++")
set(CMAKE_C_COMPILER "${CHRONO_CROSS_PREFIX}gcc")

# try_compile projects see these variables too
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES CHRONO_AARCH64_ROOT CHRONO_CROSS_PREFIX)

if(CHRONO_AARCH64_ROOT)
  # Debian's Python headers: usr/include/python3.11/pyconfig.h includes
  # <aarch64-linux-gnu/python3.11/pyconfig.h>, so the root's usr/include is searched, after
  # the cross compiler's own C library headers (the root holds no other headers)
  string(APPEND CMAKE_CXX_FLAGS_INIT " -idirafter ${CHRONO_AARCH64_ROOT}/usr/include")
  set(CMAKE_FIND_ROOT_PATH "${CHRONO_AARCH64_ROOT}")
  # run target programs (the arm64 interpreter that FindPython asks) under qemu-user
  find_program(CHRONO_QEMU_AARCH64 NAMES qemu-aarch64-static qemu-aarch64)
  if(CHRONO_QEMU_AARCH64)
    set(CMAKE_CROSSCOMPILING_EMULATOR "${CHRONO_QEMU_AARCH64};-L;${CHRONO_AARCH64_ROOT}")
  endif()
endif()
# host programs (the compiler, pip) from the host; libraries and headers from the root only;
# CMake packages (pybind11's config) from either
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)

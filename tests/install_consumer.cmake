# The install_consumer test (cmake -P): install the build tree into a fresh prefix, then configure,
# build and run tests/install_consumer against it alone, with the parent build's generator, make
# program, compiler and build type so that a pass here means the same toolchain works for a user.
# Inputs (-D): BUILD_DIR, CONSUMER_DIR, WORK_DIR, GENERATOR, MAKE_PROGRAM, CXX_COMPILER, BUILD_TYPE,
# LIBDIR (the parent's CMAKE_INSTALL_LIBDIR), PREFIX_PATH (the parent's CMAKE_PREFIX_PATH with '|'
# for ';', so that it survives add_test).
foreach(v BUILD_DIR CONSUMER_DIR WORK_DIR GENERATOR CXX_COMPILER LIBDIR)
  if(NOT DEFINED ${v} OR "${${v}}" STREQUAL "")
    message(FATAL_ERROR "install_consumer.cmake: -D${v}=... is required")
  endif()
endforeach()

function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install_consumer: ${what} failed (${rc})\n${out}\n${err}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

# A fresh prefix each time: a stale header or config file from an earlier run must not hide a
# missing install rule.
set(prefix "${WORK_DIR}/prefix")
set(build "${WORK_DIR}/build")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

set(config)
set(build_type)
if(BUILD_TYPE)
  set(config --config "${BUILD_TYPE}")
  set(build_type "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}")
endif()
step("cmake --install" ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}" ${config})
foreach(f include/dbsparse/dbsparse.hpp ${LIBDIR}/libdbsparse.a ${LIBDIR}/cmake/dbsparse/dbsparseConfig.cmake
          ${LIBDIR}/cmake/dbsparse/dbsparseConfigVersion.cmake ${LIBDIR}/cmake/dbsparse/dbsparseTargets.cmake
          bin/dbsparse bin/dbtune)
  if(NOT EXISTS "${prefix}/${f}")
    message(FATAL_ERROR "install_consumer: ${prefix}/${f} was not installed")
  endif()
endforeach()

# Installed binaries carry no debug info and no symbol table, whatever the build type.
find_program(READELF readelf)
if(READELF)
  foreach(exe dbsparse dbtune)
    step("readelf ${exe}" ${READELF} -S --wide "${prefix}/bin/${exe}")
    if(step_output MATCHES "\\.debug_info|\\.symtab")
      message(FATAL_ERROR "install_consumer: bin/${exe} was installed unstripped")
    endif()
  endforeach()
endif()

string(REPLACE "|" ";" prefix_path "${PREFIX_PATH}")
list(PREPEND prefix_path "${prefix}")
# Through an initial cache, because a list would be split on its ';' on a command line.
set(init_cache "${WORK_DIR}/init-cache.cmake")
file(WRITE "${init_cache}" "set(CMAKE_PREFIX_PATH [==[${prefix_path}]==] CACHE STRING \"\")\n")
set(make_program)
if(MAKE_PROGRAM)
  set(make_program "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()
step("configuring the consumer"
  ${CMAKE_COMMAND} -S "${CONSUMER_DIR}" -B "${build}" -G "${GENERATOR}" ${make_program}
  "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}" ${build_type}
  -C "${init_cache}"
  # Only the installed copy may be found, not the build tree through the user package registry.
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
file(STRINGS "${build}/CMakeCache.txt" found_dir REGEX "^dbsparse_DIR:")
string(FIND "${found_dir}" "=${prefix}/" at)
if(at EQUAL -1)
  message(FATAL_ERROR "install_consumer: found ${found_dir}, not the copy installed in ${prefix}")
endif()
step("building the consumer" ${CMAKE_COMMAND} --build "${build}" ${config})
step("running the consumer" "${build}/consumer")
message("${step_output}")
if(NOT step_output MATCHES "consumer ok")
  message(FATAL_ERROR "install_consumer: the consumer did not report success")
endif()
file(REMOVE_RECURSE "${WORK_DIR}")

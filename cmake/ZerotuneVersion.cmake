# Version and git revision baked into the binary (shown by `zerotune env`).
find_package(Git QUIET)
set(ZT_GIT_REVISION "unknown")
if(GIT_FOUND AND EXISTS ${CMAKE_SOURCE_DIR}/.git)
  execute_process(COMMAND ${GIT_EXECUTABLE} describe --always --dirty --abbrev=12
                  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
                  OUTPUT_VARIABLE ZT_GIT_REVISION OUTPUT_STRIP_TRAILING_WHITESPACE
                  ERROR_QUIET)
  if(NOT ZT_GIT_REVISION)
    set(ZT_GIT_REVISION "unknown")
  endif()
endif()
set(ZT_GENERATED_DIR ${CMAKE_BINARY_DIR}/generated)
configure_file(${CMAKE_SOURCE_DIR}/runtime/build_info.h.in ${ZT_GENERATED_DIR}/zerotune/build_info.h @ONLY)

# zt_add_layer(name DEPS ...): one static library per top-level folder, built from
# every .cpp/.cu file in it and its mechanism subfolders, so adding a file needs no CMake
# edit. A layer that has only headers so far becomes an interface library.
function(zt_add_layer name)
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  file(GLOB_RECURSE _sources CONFIGURE_DEPENDS
       ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp ${CMAKE_CURRENT_SOURCE_DIR}/*.cu)
  if(_sources)
    add_library(zt_${name} STATIC ${_sources})
    target_include_directories(zt_${name} PUBLIC ${CMAKE_SOURCE_DIR} ${ZT_GENERATED_DIR})
    target_link_libraries(zt_${name} PUBLIC ${ARG_DEPS})
    target_compile_options(zt_${name} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr -lineinfo>)
  else()
    add_library(zt_${name} INTERFACE)
    target_include_directories(zt_${name} INTERFACE ${CMAKE_SOURCE_DIR} ${ZT_GENERATED_DIR})
    target_link_libraries(zt_${name} INTERFACE ${ARG_DEPS})
  endif()
endfunction()

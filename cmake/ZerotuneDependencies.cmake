# System libraries zerotune links against. CUDA's runtime is linked statically;
# cuBLAS(Lt), NCCL and cuDNN are shared system libraries found here.
find_package(CUDAToolkit REQUIRED)
find_package(nlohmann_json 3.9 REQUIRED)
find_package(Threads REQUIRED)

# zt_optional_dependency(<target> <HAVE variable> FOUND <found variables...> LIBS <libraries...>
#                        WARNING <text>): an interface target that links the libraries and
# defines HAVE=1 when every found variable is true; otherwise an empty one, HAVE off, and the
# warning.
function(zt_optional_dependency target have)
  cmake_parse_arguments(PARSE_ARGV 2 arg "" "WARNING" "FOUND;LIBS")
  add_library(${target} INTERFACE)
  foreach(found IN LISTS arg_FOUND)
    if(NOT ${found})
      set(${have} OFF PARENT_SCOPE)
      message(WARNING "${arg_WARNING}")
      return()
    endif()
  endforeach()
  set(${have} ON PARENT_SCOPE)
  target_link_libraries(${target} INTERFACE ${arg_LIBS})
  target_compile_definitions(${target} INTERFACE ${have}=1)
endfunction()

set(_zt_lib_hints ${CUDAToolkit_LIBRARY_DIR} /usr/lib/x86_64-linux-gnu /usr/local/cuda/lib64)
set(_zt_inc_hints ${CUDAToolkit_INCLUDE_DIRS} /usr/include /usr/local/cuda/include)

find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${_zt_inc_hints} REQUIRED)
find_library(NCCL_LIBRARY nccl HINTS ${_zt_lib_hints} REQUIRED)
add_library(zt_nccl INTERFACE)
target_include_directories(zt_nccl INTERFACE ${NCCL_INCLUDE_DIR})
target_link_libraries(zt_nccl INTERFACE ${NCCL_LIBRARY})

find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS ${_zt_inc_hints} REQUIRED)
find_library(CUDNN_LIBRARY cudnn HINTS ${_zt_lib_hints} REQUIRED)
add_library(zt_cudnn INTERFACE)
target_include_directories(zt_cudnn INTERFACE ${CUDNN_INCLUDE_DIR})
target_link_libraries(zt_cudnn INTERFACE ${CUDNN_LIBRARY})

# Text processing for the tokenizers: PCRE2 runs the pre-tokenizer regexes, utf8proc
# normalises, sentencepiece reads ChatGLM's tokenizer.model. scripts/setup.sh installs them;
# a machine without them still builds everything else, with the tokenizers left out.
find_package(PkgConfig REQUIRED)
pkg_check_modules(PCRE2 IMPORTED_TARGET libpcre2-8)
pkg_check_modules(UTF8PROC IMPORTED_TARGET libutf8proc)
pkg_check_modules(SENTENCEPIECE IMPORTED_TARGET sentencepiece)
zt_optional_dependency(zt_text_deps ZT_HAVE_TEXT
  FOUND PCRE2_FOUND UTF8PROC_FOUND SENTENCEPIECE_FOUND
  LIBS PkgConfig::PCRE2 PkgConfig::UTF8PROC PkgConfig::SENTENCEPIECE
  WARNING "PCRE2, utf8proc or sentencepiece not found: building without the tokenizers. Install libpcre2-dev libutf8proc-dev libsentencepiece-dev (scripts/setup.sh does).")

# libcurl downloads the models a hub id names (models/hub/) and OpenSSL's libcrypto checks
# their sha256. scripts/setup.sh installs libcurl4-openssl-dev, which brings libssl-dev; a
# machine without them still builds everything else, and a hub id that is not in the local
# cache is then an error that says how to download the model by hand.
pkg_check_modules(CURL IMPORTED_TARGET libcurl)
pkg_check_modules(LIBCRYPTO IMPORTED_TARGET libcrypto)
zt_optional_dependency(zt_downloader_deps ZT_HAVE_DOWNLOADER
  FOUND CURL_FOUND LIBCRYPTO_FOUND
  LIBS PkgConfig::CURL PkgConfig::LIBCRYPTO
  WARNING "libcurl or libcrypto not found: building without the model downloader (hub ids resolve from the local cache only). Install libcurl4-openssl-dev and libssl-dev (scripts/setup.sh does).")

# Gloo runs the collectives of multi-process training on the CPU, where NCCL cannot, so the
# launchers and ZeRO across processes are tested on machines without a GPU. scripts/setup.sh
# installs Debian's libgloo-dev; a machine without it still builds everything else, and
# multi-process training on the CPU then says it needs Gloo.
find_package(Gloo CONFIG QUIET)
zt_optional_dependency(zt_gloo ZT_HAVE_GLOO
  FOUND Gloo_FOUND
  LIBS gloo
  WARNING "Gloo not found: building without multi-process training on the CPU. Install libgloo-dev (scripts/setup.sh does).")

# cpp-httplib serves the OpenAI API of `zerotune serve`: small, a thread per connection
# (the generation itself is queued to one engine thread), server-sent events through chunked
# content providers. Debian's libcpp-httplib-dev ships it as a shared library; scripts/setup.sh
# installs it. A machine without it still builds everything else, and `serve` then says so.
pkg_check_modules(CPP_HTTPLIB IMPORTED_TARGET cpp-httplib)
zt_optional_dependency(zt_httplib ZT_HAVE_HTTPLIB
  FOUND CPP_HTTPLIB_FOUND
  LIBS PkgConfig::CPP_HTTPLIB
  WARNING "cpp-httplib not found: building without `zerotune serve`. Install libcpp-httplib-dev (scripts/setup.sh does).")

# libpng (with zlib) encodes the loss-curve images. Linked statically, like zerotune's own
# libraries, so the binary needs no shared library beyond the CUDA ones and the C/C++
# runtime. scripts/setup.sh installs libpng-dev and zlib1g-dev.
find_path(PNG_INCLUDE_DIR png.h)
find_library(PNG_STATIC_LIBRARY NAMES libpng16.a libpng.a)
find_library(ZLIB_STATIC_LIBRARY NAMES libz.a)
if(NOT PNG_INCLUDE_DIR OR NOT PNG_STATIC_LIBRARY OR NOT ZLIB_STATIC_LIBRARY)
  message(FATAL_ERROR "libpng or zlib (static libraries) not found: install libpng-dev and zlib1g-dev "
                      "(scripts/setup.sh does), or point PNG_INCLUDE_DIR, PNG_STATIC_LIBRARY and "
                      "ZLIB_STATIC_LIBRARY at them.")
endif()
add_library(zt_png INTERFACE)
target_include_directories(zt_png INTERFACE ${PNG_INCLUDE_DIR})
target_link_libraries(zt_png INTERFACE ${PNG_STATIC_LIBRARY} ${ZLIB_STATIC_LIBRARY} m)

# libyaml reads YAML arguments files (`zerotune train args.yaml`), statically like libpng.
# scripts/setup.sh installs libyaml-dev.
find_path(YAML_INCLUDE_DIR yaml.h)
find_library(YAML_STATIC_LIBRARY NAMES libyaml.a)
if(NOT YAML_INCLUDE_DIR OR NOT YAML_STATIC_LIBRARY)
  message(FATAL_ERROR "libyaml (static library) not found: install libyaml-dev (scripts/setup.sh does), or "
                      "point YAML_INCLUDE_DIR and YAML_STATIC_LIBRARY at it.")
endif()
add_library(zt_yaml INTERFACE)
target_include_directories(zt_yaml INTERFACE ${YAML_INCLUDE_DIR})
target_link_libraries(zt_yaml INTERFACE ${YAML_STATIC_LIBRARY})

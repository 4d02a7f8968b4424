# Passed to llama-cpp-python's build by `make setup` (Makefile: LLAMA_CMAKE_ARGS, -DCMAKE_PROJECT_INCLUDE=<this file>).
# CMake runs this file after every project() call. llama-cpp-python's CMakeLists forces LLAMA_BUILD_COMMON ON just
# before it adds llama.cpp, so `-DLLAMA_BUILD_COMMON=OFF` alone is overwritten; this switches it off again after
# llama.cpp's project() call. libllama-common (with cpp-httplib) serves llama.cpp's own command-line tools and
# server; the Python bindings load only libllama and libggml*. It was over half of the compile time (README).
if(PROJECT_NAME STREQUAL "llama.cpp")
  set(LLAMA_BUILD_COMMON OFF CACHE BOOL "llama: build common utils library (not used by the Python bindings)" FORCE)
endif()

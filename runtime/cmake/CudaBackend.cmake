# What the CUDA backend (libfsdprt_cuda) needs: the CUDA toolkit (runtime API,
# cuBLAS, and ptxas and fatbinary for fsdpc --target=cuda) and NCCL 2.18 or
# newer (ncclCommSplit), cuDNN 9 and the cudnn-frontend headers (fused
# attention; scripts/setup.sh installs them from PyPI's nvidia-cudnn-frontend,
# whose wheel puts them in site-packages/include). Sets, as cache entries the parent project sees:
#
#   FSDPRT_CUDA_FOUND        ON when the CUDA backend is built, else OFF
#   FSDPRT_CUDA_MISSING      why it is not built (empty when it is)
#   FSDPRT_CUDA_TOOLKIT_DIR  the toolkit root, holding bin/ptxas and bin/fatbinary
#   FSDPRT_CUDA_LINK_FLAGS   what a trainer's link line needs after
#                            libfsdprt_cuda_main.a and libfsdprt_cuda.a
#
# and, for this directory, FSDPRT_NCCL_INCLUDE_DIR, FSDPRT_NCCL_LIBRARY,
# FSDPRT_CUDNN_INCLUDE_DIR, FSDPRT_CUDNN_LIBRARY and FSDPRT_CUDNN_FRONTEND_DIR.

if(FSDP_ENABLE_CUDA)
  find_package(CUDAToolkit QUIET)
endif()

# The first thing missing, or "" once everything is found.
function(fsdprt_find_cuda_backend out)
  if(NOT FSDP_ENABLE_CUDA)
    set(${out} "FSDP_ENABLE_CUDA is OFF" PARENT_SCOPE)
    return()
  endif()
  if(NOT CUDAToolkit_FOUND)
    set(${out} "the CUDA toolkit was not found (set CUDAToolkit_ROOT to its directory)" PARENT_SCOPE)
    return()
  endif()
  # nvrtc: the cudnn-frontend compiles some of its engines at run time.
  foreach(library cudart cublas cublasLt nvrtc)
    if(NOT CUDA_${library}_LIBRARY)
      set(${out} "lib${library} not found in ${CUDAToolkit_LIBRARY_DIR}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  foreach(tool ptxas fatbinary)
    if(NOT EXISTS "${CUDAToolkit_BIN_DIR}/${tool}")
      set(${out} "${tool} not found in ${CUDAToolkit_BIN_DIR}" PARENT_SCOPE)
      return()
    endif()
  endforeach()

  get_filename_component(root "${CUDAToolkit_BIN_DIR}" DIRECTORY)
  set(hints ${CUDAToolkit_LIBRARY_DIR} ${root}/lib ${root}/lib64 /usr/local/cuda/lib
            /usr/local/cuda/lib64 $ENV{NCCL_ROOT} $ENV{NCCL_HOME})
  if(CUDAToolkit_LIBRARY_ROOT)
    list(APPEND hints ${CUDAToolkit_LIBRARY_ROOT}/lib ${CUDAToolkit_LIBRARY_ROOT}/lib64)
  endif()
  find_path(FSDPRT_NCCL_INCLUDE_DIR nccl.h
    HINTS ${CUDAToolkit_INCLUDE_DIRS} $ENV{NCCL_ROOT} $ENV{NCCL_HOME} PATH_SUFFIXES include)
  find_library(FSDPRT_NCCL_LIBRARY nccl HINTS ${hints} PATH_SUFFIXES lib lib64)
  if(NOT FSDPRT_NCCL_INCLUDE_DIR)
    set(${out} "nccl.h not found (set NCCL_ROOT)" PARENT_SCOPE)
    return()
  endif()
  if(NOT FSDPRT_NCCL_LIBRARY)
    set(${out} "libnccl not found (set NCCL_ROOT)" PARENT_SCOPE)
    return()
  endif()
  file(STRINGS "${FSDPRT_NCCL_INCLUDE_DIR}/nccl.h" version REGEX "^#define NCCL_(MAJOR|MINOR) ")
  string(REGEX REPLACE ".*NCCL_MAJOR ([0-9]+).*NCCL_MINOR ([0-9]+).*" "\\1.\\2" version "${version}")
  if(version VERSION_LESS 2.18)
    set(${out} "NCCL ${version} in ${FSDPRT_NCCL_INCLUDE_DIR} is older than 2.18 (ncclCommSplit)"
        PARENT_SCOPE)
    return()
  endif()
  set(FSDPRT_NCCL_VERSION ${version} PARENT_SCOPE)

  find_path(FSDPRT_CUDNN_INCLUDE_DIR cudnn_version.h
    HINTS ${CUDAToolkit_INCLUDE_DIRS} $ENV{CUDNN_ROOT} PATH_SUFFIXES include)
  find_library(FSDPRT_CUDNN_LIBRARY cudnn HINTS ${hints} $ENV{CUDNN_ROOT} PATH_SUFFIXES lib lib64)
  if(NOT FSDPRT_CUDNN_INCLUDE_DIR OR NOT FSDPRT_CUDNN_LIBRARY)
    set(${out} "cuDNN (cudnn_version.h and libcudnn) not found (set CUDNN_ROOT)" PARENT_SCOPE)
    return()
  endif()
  file(STRINGS "${FSDPRT_CUDNN_INCLUDE_DIR}/cudnn_version.h" version REGEX "^#define CUDNN_MAJOR ")
  if(NOT version MATCHES "CUDNN_MAJOR 9$")
    set(${out} "cuDNN in ${FSDPRT_CUDNN_INCLUDE_DIR} is not version 9" PARENT_SCOPE)
    return()
  endif()
  execute_process(COMMAND python3 -c "import sysconfig; print(sysconfig.get_paths()['purelib'])"
                  OUTPUT_VARIABLE purelib OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  find_path(FSDPRT_CUDNN_FRONTEND_DIR cudnn_frontend.h
    HINTS $ENV{CUDNN_FRONTEND_ROOT} ${purelib} PATH_SUFFIXES include)
  if(NOT FSDPRT_CUDNN_FRONTEND_DIR)
    set(${out} "the cudnn-frontend headers (cudnn_frontend.h) were not found: "
               "pip install nvidia-cudnn-frontend, or set CUDNN_FRONTEND_ROOT" PARENT_SCOPE)
    return()
  endif()
  set(${out} "" PARENT_SCOPE)
endfunction()

fsdprt_find_cuda_backend(FSDPRT_CUDA_MISSING)
if(FSDPRT_CUDA_MISSING STREQUAL "")
  set(FSDPRT_CUDA_FOUND ON)
  get_filename_component(FSDPRT_CUDA_TOOLKIT_DIR "${CUDAToolkit_BIN_DIR}" DIRECTORY)
  # The shared libraries by absolute path, and where a trainer finds them
  # when it runs.
  set(libraries ${CUDA_cudart_LIBRARY} ${CUDA_cublas_LIBRARY} ${CUDA_cublasLt_LIBRARY}
                ${CUDA_nvrtc_LIBRARY} ${FSDPRT_NCCL_LIBRARY} ${FSDPRT_CUDNN_LIBRARY})
  set(directories "")
  foreach(library ${libraries})
    get_filename_component(directory "${library}" DIRECTORY)
    list(APPEND directories "${directory}")
  endforeach()
  list(REMOVE_DUPLICATES directories)
  list(JOIN libraries " " FSDPRT_CUDA_LINK_FLAGS)
  list(JOIN directories ":" rpath)
  string(APPEND FSDPRT_CUDA_LINK_FLAGS " ${FSDPRT_MPI_LINK_FLAGS} -Wl,-rpath,${rpath} -lm")
  message(STATUS "fsdprt: CUDA backend: CUDA ${CUDAToolkit_VERSION} in ${FSDPRT_CUDA_TOOLKIT_DIR}, "
                 "NCCL ${FSDPRT_NCCL_VERSION} (${FSDPRT_NCCL_LIBRARY}), cuDNN (${FSDPRT_CUDNN_LIBRARY}), "
                 "cudnn-frontend (${FSDPRT_CUDNN_FRONTEND_DIR})")
else()
  set(FSDPRT_CUDA_FOUND OFF)
  set(FSDPRT_CUDA_TOOLKIT_DIR "")
  set(FSDPRT_CUDA_LINK_FLAGS "")
  message(STATUS "fsdprt: CUDA backend skipped (no libfsdprt_cuda, no --target=cuda): "
                 "${FSDPRT_CUDA_MISSING}")
endif()
set(FSDPRT_CUDA_FOUND ${FSDPRT_CUDA_FOUND} CACHE INTERNAL "Whether libfsdprt_cuda is built")
set(FSDPRT_CUDA_MISSING "${FSDPRT_CUDA_MISSING}" CACHE INTERNAL
    "Why libfsdprt_cuda is not built")
set(FSDPRT_CUDA_TOOLKIT_DIR "${FSDPRT_CUDA_TOOLKIT_DIR}" CACHE INTERNAL
    "The CUDA toolkit root (bin/ptxas, bin/fatbinary)")
set(FSDPRT_CUDA_LINK_FLAGS "${FSDPRT_CUDA_LINK_FLAGS}" CACHE INTERNAL
    "What a CUDA trainer links with after libfsdprt_cuda_main and libfsdprt_cuda")

#pragma once
// Stand-in for the header a CUDA build of LibTorch generates (c10/cuda/impl/
// cuda_cmake_macros.h), used only by `make cuda-check` against a LibTorch without CUDA,
// which ships c10/cuda's other headers but not this one. Its one setting: c10_cuda is a
// shared library, as in every LibTorch distribution.
#define C10_CUDA_BUILD_SHARED_LIBS

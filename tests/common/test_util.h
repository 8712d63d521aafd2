// Shared test helpers.
#pragma once

#include <gtest/gtest.h>

#include "runtime/device.h"

// GPU tests skip only when no GPU is present, and say why.
#define ZT_SKIP_WITHOUT_GPU()                                                                        \
  do {                                                                                               \
    if (!::zt::cuda_available()) GTEST_SKIP() << "no CUDA GPU: " << ::zt::cuda_unavailable_reason(); \
  } while (0)

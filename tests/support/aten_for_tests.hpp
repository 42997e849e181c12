#pragma once
// libtorch for tests. Debian's libtorch pulls in glog, whose CHECK macro
// replaces Catch's: a failing check would then abort instead of being reported.
// Include this instead of <ATen/ATen.h> in tests: it restores Catch's CHECK.

#include <ATen/ATen.h>

#include <catch2/catch.hpp>

#undef CHECK
#define CHECK(...)                                                          \
  INTERNAL_CATCH_TEST("CHECK", Catch::ResultDisposition::ContinueOnFailure, \
                      __VA_ARGS__)

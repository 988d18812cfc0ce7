#pragma once
// XTGRAD_UNDER_ASAN: 1 where the suite is built under AddressSanitizer, else 0. GCC defines
// __SANITIZE_ADDRESS__; Clang answers __has_feature(address_sanitizer) instead. The suite checks
// less there (a fraction of the time: tests/test_util.hpp's model_gradcheck, among others), and the
// library turns its block cache off (autograd/array_allocator.cpp asks the same two questions).
#if defined(__SANITIZE_ADDRESS__)
#define XTGRAD_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define XTGRAD_UNDER_ASAN 1
#endif
#endif
#ifndef XTGRAD_UNDER_ASAN
#define XTGRAD_UNDER_ASAN 0
#endif

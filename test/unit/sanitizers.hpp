// Which sanitizer this test build runs under, said once (g++ defines __SANITIZE_*__, clang has __has_feature):
// TOOL_EFFECTS_TEST_TSAN and TOOL_EFFECTS_TEST_ASAN are 0 or 1, for the preprocessor and for code.
#ifndef TOOL_EFFECTS_TEST_SANITIZERS_HPP
#define TOOL_EFFECTS_TEST_SANITIZERS_HPP

#if defined(__SANITIZE_THREAD__)
#define TOOL_EFFECTS_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TOOL_EFFECTS_TEST_TSAN 1
#endif
#endif
#ifndef TOOL_EFFECTS_TEST_TSAN
#define TOOL_EFFECTS_TEST_TSAN 0
#endif

#if defined(__SANITIZE_ADDRESS__)
#define TOOL_EFFECTS_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TOOL_EFFECTS_TEST_ASAN 1
#endif
#endif
#ifndef TOOL_EFFECTS_TEST_ASAN
#define TOOL_EFFECTS_TEST_ASAN 0
#endif

#endif  // TOOL_EFFECTS_TEST_SANITIZERS_HPP

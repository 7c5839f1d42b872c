// Harness self-test (compile_fail.selftest.no_expectation, WILL_FAIL): the case fails to compile as intended
// but states no expectation, so the harness must FAIL it ("no expectation").
template <class T>
struct byte_only {
  static_assert(sizeof(T) == 1, "selftest: T must be exactly one byte");
};

#ifndef TOOL_EFFECTS_COMPILE_FAIL_CONTROL
byte_only<int> bad;
#endif

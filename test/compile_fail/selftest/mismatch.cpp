// Harness self-test (compile_fail.selftest.mismatch, WILL_FAIL): the case fails to compile, but not with the
// stated diagnostic, so the harness must FAIL it ("diagnostic mismatch").
//
// expected-error: this text appears in no diagnostic
template <class T>
struct byte_only {
  static_assert(sizeof(T) == 1, "selftest: T must be exactly one byte");
};

#ifndef TOOL_EFFECTS_COMPILE_FAIL_CONTROL
byte_only<int> bad;
#endif

// Harness self-test (compile_fail.selftest.partial_mismatch, WILL_FAIL): one expectation matches, the other
// does not; every applicable expectation must match, so the harness must FAIL it ("diagnostic mismatch").
//
// expected-error: selftest: T must be exactly one byte
// expected-error: this text appears in no diagnostic
template <class T>
struct byte_only {
  static_assert(sizeof(T) == 1, "selftest: T must be exactly one byte");
};

#ifndef TOOL_EFFECTS_COMPILE_FAIL_CONTROL
byte_only<int> bad;
#endif

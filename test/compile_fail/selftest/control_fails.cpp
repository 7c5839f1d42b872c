// Harness self-test (compile_fail.selftest.control_fails, WILL_FAIL): the stated error does come, but from
// code outside the #ifndef guard, so the control build fails too and the harness must FAIL it
// ("control build failed").
//
// expected-error: selftest: T must be exactly one byte
template <class T>
struct byte_only {
  static_assert(sizeof(T) == 1, "selftest: T must be exactly one byte");
};

byte_only<int> unguarded;

#ifndef TOOL_EFFECTS_COMPILE_FAIL_CONTROL
byte_only<long> bad;
#endif

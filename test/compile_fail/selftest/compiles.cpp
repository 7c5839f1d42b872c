// Harness self-test (compile_fail.selftest.compiles, WILL_FAIL): the case compiles even without
// TOOL_EFFECTS_COMPILE_FAIL_CONTROL, so the harness must FAIL it ("compiled").
//
// expected-error: .
int answer() { return 42; }

#ifndef TOOL_EFFECTS_COMPILE_FAIL_CONTROL
int also_fine() { return answer(); }
#endif

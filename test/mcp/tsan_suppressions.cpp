// The ThreadSanitizer suppression of the mcp tests (see test/unit/mcp_test_support.hpp), defined once in their
// executable.
extern "C" const char* __tsan_default_suppressions();
extern "C" const char* __tsan_default_suppressions() {
  return "race:std::__exception_ptr::exception_ptr::_M_release\n";
}

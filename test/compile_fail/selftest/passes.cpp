// Harness self-test (compile_fail.selftest.passes): a correct case; the harness must PASS it.
// Independent of the library. Exercises: an all-compiler regex, per-compiler regexes, a versioned one that
// replaces its family's lines on that version only (clang 19 says "static assertion failed"), a regex spanning an
// error and its note (newlines become spaces), and ';' / '[' ']' inside a regex.
//
// expected-error: selftest: T must be exactly one byte
// expected-error: byte_only<int>[;' ]
// expected-error(gcc): In instantiation of 'struct byte_only<int>'.*static assertion failed
// expected-error(clang): static_assert failed.*in instantiation of template class 'byte_only<int>' requested here
// expected-error(clang19): static assertion failed.*in instantiation of template class 'byte_only<int>' requested here
#include <cstddef>

template <class T>
struct byte_only {
  static_assert(sizeof(T) == 1, "selftest: T must be exactly one byte");
  T value;
};

byte_only<char> fine{};

#ifndef TOOL_EFFECTS_COMPILE_FAIL_CONTROL
byte_only<int> bad{};
#endif

int main() { return fine.value; }

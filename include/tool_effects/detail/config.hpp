// tool_effects/detail/config.hpp — the library's compiler, standard-library and Boost workarounds, in one
// place (as Boost.MP11's detail/config.hpp). Every other header names the macro, not the compiler.
#ifndef TOOL_EFFECTS_DETAIL_CONFIG_HPP
#define TOOL_EFFECTS_DETAIL_CONFIG_HPP

#include <version>

// g++ (not clang, which also defines __GNUC__).
#if defined(__GNUC__) && !defined(__clang__)
#define TOOL_EFFECTS_GCC 1
#else
#define TOOL_EFFECTS_GCC 0
#endif

// std::stop_token: libc++ 19 keeps it behind -fexperimental-library; without it the overloads that take a
// std::stop_token are absent and the library uses a token that is never stopped.
#if defined(__cpp_lib_jthread)
#define TOOL_EFFECTS_HAS_STOP_TOKEN 1
#else
#define TOOL_EFFECTS_HAS_STOP_TOKEN 0
#endif

// getentropy(3), the C library's access to the kernel's random generator (glibc >= 2.25, musl, macOS, the
// BSDs): detail/entropy.hpp uses it where it is declared, else std::random_device (<random>, which costs every
// dispatching translation unit about as much as the rest of <tool_effects/retry_policy.hpp>).
#if !defined(_WIN32) && defined(__has_include)
#if __has_include(<sys/random.h>)
#define TOOL_EFFECTS_HAS_GETENTROPY 1
#endif
#endif
#ifndef TOOL_EFFECTS_HAS_GETENTROPY
#define TOOL_EFFECTS_HAS_GETENTROPY 0
#endif

// A function that must not be inlined into its callers: g++ 12 -O2 reports a false -Warray-bounds on
// std::string's move constructor when a function returning a string is inlined into a caller that moves it
// ("forming offset [32, 52] is out of the bounds [0, 32]"; GCC meta-bug 56456).
#if defined(__GNUC__)
#define TOOL_EFFECTS_NOINLINE [[gnu::noinline]]
#else
#define TOOL_EFFECTS_NOINLINE
#endif

// parse_untrusted_json reads text with the library's one-pass lexer (json/detail/fast_parse.hpp; anything it
// does not admit is parsed again by nlohmann, whose errors are reported). 0: nlohmann's lexer only, the
// reference the differential test WireParse.* compares with and benchmarks measure against.
#ifndef TOOL_EFFECTS_JSON_FAST_PARSER
#define TOOL_EFFECTS_JSON_FAST_PARSER 1
#endif

// Boost.Process v2 of Boost 1.81 otherwise needs the compiled Boost.Filesystem (the target
// tool_effects::mcp defines it too).
#ifndef BOOST_PROCESS_USE_STD_FS
#define BOOST_PROCESS_USE_STD_FS 1
#endif

// TLS (OpenSSL) — the one place the TLS switches are read. TOOL_EFFECTS_MCP_TLS=1 lets the MCP client reach
// https:// servers (and OAuth's https endpoints), TOOL_EFFECTS_ETCD_TLS=1 the etcd client https:// endpoints;
// either needs OpenSSL linked (the CMake targets do both where OpenSSL is found). TOOL_EFFECTS_NET_TLS is 1
// when either is: the network layer (net/) then compiles its TLS part. No type's layout depends on these
// (net/http_client.hpp keeps the TLS stream behind a pointer in both configurations).
#if defined(TOOL_EFFECTS_MCP_TLS) && TOOL_EFFECTS_MCP_TLS
#define TOOL_EFFECTS_MCP_HAS_TLS 1
#else
#define TOOL_EFFECTS_MCP_HAS_TLS 0
#endif
#if defined(TOOL_EFFECTS_ETCD_TLS) && TOOL_EFFECTS_ETCD_TLS
#define TOOL_EFFECTS_ETCD_HAS_TLS 1
#else
#define TOOL_EFFECTS_ETCD_HAS_TLS 0
#endif
#if TOOL_EFFECTS_MCP_HAS_TLS || TOOL_EFFECTS_ETCD_HAS_TLS
#define TOOL_EFFECTS_NET_TLS 1
#else
#define TOOL_EFFECTS_NET_TLS 0
#endif

// Separate compilation (as Boost.Asio's BOOST_ASIO_SEPARATE_COMPILATION). By default the library is header-only:
// TOOL_EFFECTS_DECL is `inline` and the headers include their definitions (impl/*.ipp). With
// TOOL_EFFECTS_SEPARATE_COMPILATION defined in EVERY translation unit of a program, the dataflow engine, the
// recovery drivers, the approver's erasure and the failure records are declared only, and defined once, in
// the one translation unit that includes <tool_effects/impl/src.hpp> (CMake: link tool_effects::compiled,
// which does both). See docs/benchmarks.md for what it saves.
#if defined(TOOL_EFFECTS_SEPARATE_COMPILATION)
#define TOOL_EFFECTS_HEADER_ONLY 0
#define TOOL_EFFECTS_DECL
#else
#define TOOL_EFFECTS_HEADER_ONLY 1
#define TOOL_EFFECTS_DECL inline
#endif

#endif  // TOOL_EFFECTS_DETAIL_CONFIG_HPP

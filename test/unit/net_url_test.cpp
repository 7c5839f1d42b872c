// net::url — the library's one URL type (issue 27): RFC 3986's reference resolution examples (section 5.4),
// and the parse cases the three former parsers (the MCP endpoint's, OAuth's splitter, etcd's endpoints)
// accepted or refused.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <tool_effects/net/url.hpp>

namespace net_url_test_ns {

namespace net = tool_effects::net;

namespace {

std::string resolved(std::string_view ref) {
  static const net::url base = net::parse_uri_reference("http://a/b/c/d;p?q");
  return net::resolve(base, net::parse_uri_reference(ref)).text();
}

std::string reason_of(std::string_view u) {
  try {
    (void)net::parse_http_url(u);
  } catch (const net::url_error& e) {
    return std::string(e.reason());
  }
  return "accepted";
}

}  // namespace

// RFC 3986 section 5.4.1, every normal example, against the base "http://a/b/c/d;p?q".
TEST(NetUrl, Rfc3986NormalExamples) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {"g:h", "g:h"},           {"g", "http://a/b/c/g"},       {"./g", "http://a/b/c/g"},
      {"g/", "http://a/b/c/g/"}, {"/g", "http://a/g"},          {"//g", "http://g"},
      {"?y", "http://a/b/c/d;p?y"}, {"g?y", "http://a/b/c/g?y"}, {"#s", "http://a/b/c/d;p?q#s"},
      {"g#s", "http://a/b/c/g#s"}, {"g?y#s", "http://a/b/c/g?y#s"}, {";x", "http://a/b/c/;x"},
      {"g;x", "http://a/b/c/g;x"}, {"g;x?y#s", "http://a/b/c/g;x?y#s"}, {"", "http://a/b/c/d;p?q"},
      {".", "http://a/b/c/"},     {"./", "http://a/b/c/"},       {"..", "http://a/b/"},
      {"../", "http://a/b/"},     {"../g", "http://a/b/g"},      {"../..", "http://a/"},
      {"../../", "http://a/"},    {"../../g", "http://a/g"},
  };
  for (const auto& [ref, want] : cases) EXPECT_EQ(resolved(ref), want) << ref;
}

// RFC 3986 section 5.4.2, every abnormal example (strict parsing: "http:g" is "http:g").
TEST(NetUrl, Rfc3986AbnormalExamples) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {"../../../g", "http://a/g"},  {"../../../../g", "http://a/g"}, {"/./g", "http://a/g"},
      {"/../g", "http://a/g"},       {"g.", "http://a/b/c/g."},       {".g", "http://a/b/c/.g"},
      {"g..", "http://a/b/c/g.."},   {"..g", "http://a/b/c/..g"},     {"./../g", "http://a/b/g"},
      {"./g/.", "http://a/b/c/g/"},  {"g/./h", "http://a/b/c/g/h"},   {"g/../h", "http://a/b/c/h"},
      {"g;x=1/./y", "http://a/b/c/g;x=1/y"}, {"g;x=1/../y", "http://a/b/c/y"},
      {"g?y/./x", "http://a/b/c/g?y/./x"},   {"g?y/../x", "http://a/b/c/g?y/../x"},
      {"g#s/./x", "http://a/b/c/g#s/./x"},   {"g#s/../x", "http://a/b/c/g#s/../x"},
      {"http:g", "http:g"},
  };
  for (const auto& [ref, want] : cases) EXPECT_EQ(resolved(ref), want) << ref;
}

// What the MCP endpoint parser accepted, read the same way.
TEST(NetUrl, HttpUrlsSplitAsTheFormerParsersDid) {
  const auto u = net::parse_http_url("http://[::1]:8080/a/b?c=d#frag");
  EXPECT_EQ(*u.host, "::1");
  EXPECT_EQ(u.port_or_default(), "8080");
  EXPECT_EQ(u.target(), "/a/b?c=d");  // the fragment is never sent
  EXPECT_EQ(u.authority(), "[::1]:8080");
  EXPECT_EQ(u.origin(), "http://[::1]:8080");
  const auto v = net::parse_http_url("http://example.org?x=1");
  EXPECT_EQ(v.port_or_default(), "80");
  EXPECT_EQ(v.target(), "/?x=1");
  const auto w = net::parse_http_url("HTTPS://Example.ORG/Path");  // scheme and host case-insensitive
  EXPECT_TRUE(w.is_https());
  EXPECT_EQ(w.origin(), "https://example.org:443");
  EXPECT_EQ(w.target(), "/Path");  // the path is not
  EXPECT_EQ(net::parse_http_url("http://127.0.0.1:2379").target(), "/");  // an etcd endpoint
  EXPECT_EQ(net::parse_http_url("http://h:/x").port_or_default(), "80");   // an empty port is the default
}

// What the former parsers refused, refused with a stable reason; and what none of them checked (a byte that
// would end a request line or a header: space, CR, LF, NUL, non-ASCII) refused too.
TEST(NetUrl, RefusalsNameAStableReason) {
  const std::vector<std::pair<std::string, const char*>> cases = {
      {"example.org/mcp", "no_scheme"},
      {"ftp://example.org/", "not_http"},
      {"http://", "no_host"},
      {"http:/x", "no_host"},
      {"http://user@host/", "user_information"},
      {"http://user:pw@host/", "user_information"},
      {"http://h:port/", "bad_port"},
      {"http://h:123456/", "bad_port"},
      {"http://h:65536/", "bad_port"},
      {"http://[::1/", "bad_host"},
      {"http://[::1]x/", "bad_host"},
      {"http://[zz]/", "bad_host"},
      {"http://h/a b", "bad_character"},
      {"http://h/a\r\nX-Injected: 1", "bad_character"},
      {std::string("http://h/\0", 10), "bad_character"},
      {"http://h/\xc3\xa9", "bad_character"},
      {"http://h\"/", "bad_character"},
      {"http://h/%zz", "bad_percent"},
      {"http://h/%4", "bad_percent"},
      {"1http://h/", "bad_scheme"},
      {"http://h/" + std::string(9000, 'a'), "too_long"},
  };
  for (const auto& [u, why] : cases) EXPECT_EQ(reason_of(u), why) << u;
  EXPECT_EQ(reason_of("http://h:65535/%41?a=%20#f"), "accepted");
}

// An error names the URL without what may be a secret (user information, query) and without raw control bytes.
TEST(NetUrl, ErrorsQuoteThePrintableUrlOnly) {
  try {
    (void)net::parse_http_url("http://alice:s3cret@h/p\n?token=abc");
    FAIL() << "accepted";
  } catch (const net::url_error& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.find("s3cret"), std::string::npos) << m;
    EXPECT_EQ(m.find("token"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    EXPECT_NE(m.find("http://h/p\\x0a"), std::string::npos) << m;
  }
}

TEST(NetUrl, RecomposesWhatItParsed) {
  for (const char* u : {"http://a/b/c/d;p?q", "https://[::1]:8443/x?#", "g:h", "//g", "?y", "#s", "mailto:a@b",
                        "http://h?", "http://h#"})
    EXPECT_EQ(net::parse_uri_reference(u).text(), u);
}

}  // namespace net_url_test_ns

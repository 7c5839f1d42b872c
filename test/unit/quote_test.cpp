// detail/quote.hpp: the one helper that quotes a peer's text into an error message (issue 27 point 4).
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include <tool_effects/detail/quote.hpp>
#include <tool_effects/detail/utf8.hpp>

namespace quote_test_ns {

namespace {

using tool_effects::detail::quote_text;
using tool_effects::detail::utf8_excerpt;
using tool_effects::detail::valid_utf8;

// n times 'a', then "..." (built with append: g++ 12 warns falsely on `std::string(n, c) + "..."` at -O1).
std::string cut_text(std::size_t n) {
  std::string s(n, 'a');
  s.append("...");
  return s;
}

TEST(QuoteText, ShortPrintableTextIsUnchanged) {
  EXPECT_EQ(quote_text("connection refused"), "connection refused");
  EXPECT_EQ(quote_text(""), "");
}

TEST(QuoteText, ControlCharactersAreEscapedSoNoLineCanBeForged) {
  EXPECT_EQ(quote_text("a\r\nX-Injected: 1\tb\x7f"), "a\\x0d\\x0aX-Injected: 1\\x09b\\x7f");
  EXPECT_EQ(quote_text(std::string_view("\0z", 2)), "\\x00z");
}

TEST(QuoteText, ACutNeverSplitsACharacter) {
  // "é" is two bytes (C3 A9): a cut after 300 bytes would fall between them at an odd offset.
  std::string s(299, 'a');
  s += "\xc3\xa9tail";
  const std::string q = quote_text(s);
  EXPECT_EQ(q, cut_text(299));
  EXPECT_EQ(valid_utf8(q), q);
  // Every cut point of a text of multi-byte characters gives valid UTF-8.
  std::string many;
  for (int i = 0; i < 40; ++i) many += "\xe2\x82\xac\xf0\x9f\x98\x80";  // euro sign, emoji
  for (std::size_t max = 0; max < 60; ++max) {
    const std::string cut = quote_text(many, max);
    EXPECT_EQ(valid_utf8(cut), cut) << max;
    EXPECT_LE(cut.size(), max + 3) << max;
  }
}

TEST(QuoteText, InvalidBytesBecomeTheReplacementCharacter) {
  EXPECT_EQ(quote_text("ok\xff\xc3"), "ok\xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_EQ(quote_text("\xed\xa0\x80"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");  // a surrogate, byte by byte
}

TEST(QuoteText, TheBoundIsStatedInBytes) {
  EXPECT_EQ(quote_text(std::string(300, 'x')), std::string(300, 'x'));
  EXPECT_EQ(quote_text(std::string(301, 'a')), cut_text(300));
  EXPECT_EQ(quote_text("abcdef", 3), "abc...");
}

TEST(Utf8Excerpt, CutsLikeQuoteTextButDoesNotEscape) {
  EXPECT_EQ(utf8_excerpt("line\nnext", 100), "line\nnext");
  std::string s(9, 'a');
  s += "\xc3\xa9";
  EXPECT_EQ(utf8_excerpt(s, 10), cut_text(9));
}

}  // namespace

}  // namespace quote_test_ns

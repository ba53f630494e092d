// The project's one UTF-8 validator (log/utf8.hpp), used by the logger, the
// config loader, the CLI and the C++ client: RFC 3629 well-formedness and
// the offset of the first byte that breaks it.

#include <string>

#include <gtest/gtest.h>

#include "log/utf8.hpp"

namespace {

using tb::first_invalid_utf8;
using tb::is_utf8;
using tb::utf8_sequence_length;

TEST(Utf8, AsciiAndWellFormedSequencesAreUtf8) {
  EXPECT_TRUE(is_utf8(""));
  EXPECT_TRUE(is_utf8("orders.eu.created"));
  EXPECT_TRUE(is_utf8("caf\xc3\xa9"));          // U+00E9
  EXPECT_TRUE(is_utf8("\xe2\x82\xac"));         // U+20AC
  EXPECT_TRUE(is_utf8("\xf0\x9f\x93\xa6"));     // U+1F4E6
  EXPECT_TRUE(is_utf8("\xf4\x8f\xbf\xbf"));     // U+10FFFF, the last
  EXPECT_TRUE(is_utf8(std::string("a\0b", 3))); // NUL is UTF-8
  EXPECT_EQ(utf8_sequence_length("\xe2\x82\xac!"), 3u);
  EXPECT_EQ(utf8_sequence_length("x"), 1u);
  EXPECT_EQ(utf8_sequence_length(""), 0u);
}

TEST(Utf8, FirstInvalidByteIsFoundAtItsOffset) {
  EXPECT_EQ(first_invalid_utf8("x.\xff"), 2u);
  EXPECT_EQ(first_invalid_utf8("\xff"), 0u);
  // é, then a lead byte without its continuation at the end.
  EXPECT_EQ(first_invalid_utf8("\xc3\xa9t\xc3"), 3u);
  // A lead byte followed by ASCII instead of a continuation byte.
  EXPECT_EQ(first_invalid_utf8("ab\xc3\x28"), 2u);
  // A continuation byte with no lead byte.
  EXPECT_EQ(first_invalid_utf8("ab\x80"), 2u);
  EXPECT_EQ(first_invalid_utf8("valid"), 5u);
}

TEST(Utf8, OverlongFormsSurrogatesAndBeyondU10FFFFAreRefused) {
  EXPECT_FALSE(is_utf8("\xc0\xaf"));         // overlong '/'
  EXPECT_FALSE(is_utf8("\xc1\xbf"));         // overlong
  EXPECT_FALSE(is_utf8("\xe0\x80\xaf"));     // overlong, three bytes
  EXPECT_FALSE(is_utf8("\xf0\x80\x80\xaf")); // overlong, four bytes
  EXPECT_FALSE(is_utf8("\xed\xa0\x80"));     // U+D800, a surrogate
  EXPECT_FALSE(is_utf8("\xed\xbf\xbf"));     // U+DFFF
  EXPECT_TRUE(is_utf8("\xed\x9f\xbf"));      // U+D7FF, just below
  EXPECT_FALSE(is_utf8("\xf4\x90\x80\x80")); // U+110000
  EXPECT_FALSE(is_utf8("\xf5\x80\x80\x80")); // no such lead byte
  EXPECT_FALSE(is_utf8("\xf0\x9f\x93"));     // cut short
}

} // namespace

// Log lines: text and JSON formatting, escaping, levels and formats, and
// the writer the other tests capture lines with.

#include <chrono>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>

#include "log/log.hpp"
#include "tests/log/log_capture.hpp"

namespace tb::log {
namespace {

constexpr std::string_view ts = "2026-12-03T09:00:00.123Z";

TEST(LogLine, TextLineHasTimestampLevelMessageAndFields) {
  auto line = format_line(format::text, ts, level::info, "session opened",
                          {{"peer", "ipv4:127.0.0.1:5000"},
                           {"published", uint64_t{3}},
                           {"delta", -2},
                           {"clean", true}});
  EXPECT_EQ(line, "2026-12-03T09:00:00.123Z INFO  session opened "
                  "peer=ipv4:127.0.0.1:5000 published=3 delta=-2 clean=true");
}

TEST(LogLine, TextValuesWithSpacesQuotesOrEqualsAreQuoted) {
  auto line = format_line(format::text, ts, level::warn, "request refused",
                          {{"error", "the limit is 3"},
                           {"q", "say \"hi\""},
                           {"eq", "a=b"},
                           {"empty", ""},
                           {"slash", "a\\b"},
                           {"plain", "orders.>"}});
  EXPECT_EQ(line, "2026-12-03T09:00:00.123Z WARN  request refused "
                  "error=\"the limit is 3\" q=\"say \\\"hi\\\"\" eq=\"a=b\" "
                  "empty=\"\" slash=\"a\\\\b\" plain=orders.>");
}

TEST(LogLine, TextLineIsOneLineWhateverTheInput) {
  auto line = format_line(format::text, ts, level::error, "two\nlines\r",
                          {{"v", "tab\there\nnext"}, {"bin", "\x01\x7f"}});
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_EQ(line.find('\r'), std::string::npos);
  EXPECT_NE(line.find("two\\nlines\\r"), std::string::npos) << line;
  EXPECT_NE(line.find("v=\"tab\\there\\nnext\""), std::string::npos) << line;
  EXPECT_NE(line.find("bin=\"\\x01\\x7f\""), std::string::npos) << line;
}

TEST(LogLine, TextKeepsUtf8AndEscapesBytesThatAreNot) {
  std::string value = "caf\xc3\xa9 \xff\xc3";
  std::string out;
  append_text_escaped(out, value, false);
  EXPECT_EQ(out, "caf\xc3\xa9 \\xff\\xc3");
  EXPECT_FALSE(needs_quotes("caf\xc3\xa9"));
  EXPECT_TRUE(needs_quotes("\xff"));
}

TEST(LogLine, JsonLineHasTsLevelMsgThenFields) {
  auto line = format_line(format::json, ts, level::info, "session closed",
                          {{"peer", "ipv4:127.0.0.1:5000"},
                           {"published", uint64_t{3}},
                           {"delta", int64_t{-2}},
                           {"clean", false}});
  EXPECT_EQ(line, "{\"ts\":\"2026-12-03T09:00:00.123Z\",\"level\":\"info\","
                  "\"msg\":\"session closed\",\"peer\":\"ipv4:127.0.0.1:5000\","
                  "\"published\":3,\"delta\":-2,\"clean\":false}");
}

TEST(LogLine, JsonEscapesQuotesBackslashesAndControlCharacters) {
  std::string out;
  append_json_string(out, "a\"b\\c\nd\te\x01\x1f\x7f/");
  EXPECT_EQ(out, "\"a\\\"b\\\\c\\nd\\te\\u0001\\u001f\\u007f/\"");
}

TEST(LogLine, JsonKeepsUtf8AndReplacesBytesThatAreNot) {
  std::string out;
  // é, € and an emoji are valid; a lone continuation byte, a truncated
  // sequence, an overlong '/' and an encoded surrogate are not.
  append_json_string(out, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"
                          "\x80|\xe2\x82|\xc0\xaf|\xed\xa0\x80");
  EXPECT_EQ(out, "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"
                 "\\ufffd|\\ufffd\\ufffd|\\ufffd\\ufffd|"
                 "\\ufffd\\ufffd\\ufffd\"");
}

TEST(LogLine, TimestampIsUtcWithMilliseconds) {
  using namespace std::chrono;
  // 2026-12-03T09:00:00Z is 1796288400 s after the epoch.
  auto t = system_clock::time_point{seconds{1796288400} + milliseconds{123}};
  EXPECT_EQ(format_timestamp(t), "2026-12-03T09:00:00.123Z");
  EXPECT_EQ(format_timestamp(system_clock::time_point{seconds{1796288400}}),
            "2026-12-03T09:00:00.000Z");
}

TEST(LogLevels, ParseEveryNameAndRefuseOthers) {
  for (auto name : {"trace", "debug", "info", "warn", "error", "off"}) {
    level lvl = level::info;
    ASSERT_TRUE(parse_level(name, lvl)) << name;
    EXPECT_EQ(to_string(lvl), name);
  }
  level lvl = level::info;
  EXPECT_FALSE(parse_level("WARN", lvl));
  EXPECT_FALSE(parse_level("warning", lvl));
  EXPECT_FALSE(parse_level("", lvl));
  EXPECT_EQ(lvl, level::info);
}

TEST(LogFormats, ParseTextAndJsonOnly) {
  format fmt = format::text;
  ASSERT_TRUE(parse_format("json", fmt));
  EXPECT_EQ(fmt, format::json);
  ASSERT_TRUE(parse_format("text", fmt));
  EXPECT_EQ(fmt, format::text);
  EXPECT_FALSE(parse_format("JSON", fmt));
  EXPECT_FALSE(parse_format("logfmt", fmt));
  EXPECT_EQ(to_string(format::json), "json");
}

TEST(LogWrite, LinesBelowTheLevelAreSkipped) {
  test::log_capture logs{level::warn};
  info("hidden");
  warn("shown", {{"n", 1}});
  error("also shown");
  ASSERT_EQ(logs.lines().size(), 2u);
  EXPECT_NE(logs.lines()[0].find("WARN  shown n=1"), std::string::npos);
  EXPECT_TRUE(logs.contains("also shown"));
  EXPECT_FALSE(logs.contains("hidden"));
  EXPECT_FALSE(enabled(level::info));
  EXPECT_TRUE(enabled(level::error));
}

TEST(LogWrite, OffWritesNothing) {
  test::log_capture logs{level::off};
  error("nothing");
  EXPECT_TRUE(logs.lines().empty());
}

TEST(LogWrite, JsonFormatAppliesToEveryLine) {
  test::log_capture logs{level::info, format::json};
  info("one", {{"k", "v"}});
  std::vector<field> extra{{"n", 2u}};
  warn("two", {});
  write(level::info, "three", extra);
  ASSERT_EQ(logs.lines().size(), 3u);
  for (auto& line : logs.lines()) {
    EXPECT_EQ(line.front(), '{') << line;
    EXPECT_EQ(line.back(), '}') << line;
  }
  EXPECT_NE(logs.lines()[2].find("\"msg\":\"three\",\"n\":2}"),
            std::string::npos);
}

// Returns what `fn` writes to file descriptor 2.
template <class F>
std::string stderr_of(F fn) {
  std::fflush(stderr);
  auto* file = std::tmpfile();
  auto saved = dup(2);
  dup2(fileno(file), 2);
  fn();
  dup2(saved, 2);
  close(saved);
  std::rewind(file);
  std::string out;
  for (int c = std::fgetc(file); c != EOF; c = std::fgetc(file))
    out += static_cast<char>(c);
  std::fclose(file);
  return out;
}

TEST(LogWrite, TheWatchdogsRawLineFollowsTheFormat) {
  test::log_capture logs{level::info, format::json};
  auto json = stderr_of([] { write_raw(level::warn, "exiting now"); });
  EXPECT_EQ(json.substr(0, 7), "{\"ts\":\"") << json;
  EXPECT_NE(json.find("Z\",\"level\":\"warn\",\"msg\":\"exiting now\"}\n"),
            std::string::npos)
      << json;
  set_format(format::text);
  auto text = stderr_of([] { write_raw(level::warn, "exiting now"); });
  EXPECT_NE(text.find("Z WARN  exiting now\n"), std::string::npos) << text;
  set_level(level::error);
  EXPECT_EQ(stderr_of([] { write_raw(level::warn, "hidden"); }), "");
}

} // namespace
} // namespace tb::log

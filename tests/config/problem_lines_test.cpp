// Tests of problem_lines: a config error as one log line per problem
// (issue 26: a failed SIGHUP reload logged toml11's text with literal \n).

#include "config/problem_lines.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using tb::load_config_string;
using tb::problem_lines;

// Returns the problem lines of loading `toml` as "tb.toml".
std::vector<std::string> lines_of(const std::string& toml) {
  auto loaded = load_config_string(toml, "tb.toml");
  EXPECT_FALSE(loaded.ok());
  return loaded.ok() ? std::vector<std::string>{}
                     : problem_lines(loaded.error());
}

TEST(ProblemLinesTest, ASyntaxErrorIsOneLineWithItsNote) {
  EXPECT_EQ(lines_of("listen = \"127.0.0.1:0\"\nx = \n"),
            std::vector<std::string>{
                "tb.toml:2: TOML syntax error: missing value after "
                "key-value separator '=' (expected value, but got nothing)"});
  EXPECT_EQ(lines_of("[auth\n"),
            std::vector<std::string>{"tb.toml:1: TOML syntax error: an "
                                     "invalid key appeared (is not a valid "
                                     "key)"});
}

TEST(ProblemLinesTest, EachBadValueIsALineOfItsOwn) {
  auto lines = lines_of("listen = 5\nlog_level = \"loud\"\n");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(
      lines[0].rfind("tb.toml:1:10: listen: got 5; expected HOST:PORT", 0), 0u)
      << lines[0];
  EXPECT_EQ(lines[1], "tb.toml:2:13: log_level: got \"loud\"; expected "
                      "\"trace\", \"debug\", \"info\", \"warn\", \"error\" or "
                      "\"off\"");
  for (const auto& line : lines)
    EXPECT_EQ(line.find('\n'), std::string::npos) << line;
}

TEST(ProblemLinesTest, AOneLineErrorStaysAsItIs) {
  tb::config_error err{"cannot open config file x.toml: No such file"};
  EXPECT_EQ(
      problem_lines(err),
      std::vector<std::string>{"cannot open config file x.toml: No such file"});
}

} // namespace

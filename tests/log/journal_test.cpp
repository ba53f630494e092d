// Lines for the systemd journal: when standard error is the journal, text
// lines carry the syslog priority instead of a timestamp (the journal adds
// its own), so that `journalctl` shows one timestamp and the right level.

#include <cstdio>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log/log.hpp"
#include "tests/log/log_capture.hpp"

namespace tb::log {
namespace {

/// Turns the journal prefixes on for one test.
class journal_prefixes {
public:
  journal_prefixes() {
    set_journal_prefixes(true);
  }
  ~journal_prefixes() {
    set_journal_prefixes(false);
  }
};

TEST(Journal, TextLinesStartWithThePriorityAndHaveNoTimestamp) {
  test::log_capture capture{level::info};
  journal_prefixes on;
  info("listening", {{"address", "127.0.0.1:7400"}});
  warn("slow consumer");
  error("cannot bind");
  auto lines = capture.lines();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "<6>INFO  listening address=127.0.0.1:7400");
  EXPECT_EQ(lines[1], "<4>WARN  slow consumer");
  EXPECT_EQ(lines[2], "<3>ERROR cannot bind");
}

TEST(Journal, JsonLinesKeepTheirTimestamp) {
  test::log_capture capture{level::info, format::json};
  journal_prefixes on;
  info("listening");
  auto lines = capture.lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].rfind("{\"ts\":\"", 0), 0u) << lines[0];
}

TEST(Journal, WithoutThePrefixesTextLinesStartWithATimestamp) {
  test::log_capture capture{level::info};
  info("listening");
  auto lines = capture.lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].find("<"), std::string::npos) << lines[0];
  EXPECT_EQ(lines[0].substr(23, 7), "Z INFO ") << lines[0];
}

TEST(Journal, StandardErrorIsTheJournalOnlyWhenJournalStreamNamesIt) {
  struct stat info {};
  ASSERT_EQ(fstat(STDERR_FILENO, &info), 0);
  auto device = std::to_string(info.st_dev);
  auto inode = std::to_string(info.st_ino);
  unsetenv("JOURNAL_STREAM");
  EXPECT_FALSE(stderr_is_journal());
  setenv("JOURNAL_STREAM", (device + ":" + inode).c_str(), 1);
  EXPECT_TRUE(stderr_is_journal());
  setenv("JOURNAL_STREAM", (device + ":" + inode + "1").c_str(), 1);
  EXPECT_FALSE(stderr_is_journal());
  setenv("JOURNAL_STREAM", "garbage", 1);
  EXPECT_FALSE(stderr_is_journal());
  unsetenv("JOURNAL_STREAM");
}

TEST(Journal, PrioritiesFollowSyslog) {
  EXPECT_EQ(syslog_priority(level::trace), 7);
  EXPECT_EQ(syslog_priority(level::debug), 7);
  EXPECT_EQ(syslog_priority(level::info), 6);
  EXPECT_EQ(syslog_priority(level::warn), 4);
  EXPECT_EQ(syslog_priority(level::error), 3);
}

} // namespace
} // namespace tb::log

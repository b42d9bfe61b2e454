// Child processes and the signals passed on to them (util/subprocess.h).
#include "ropelab/util/subprocess.h"

#include <gtest/gtest.h>

#include <csignal>
#include <stdexcept>

namespace ropelab {
namespace {

// A child that sends itself SIGTERM: its exit code (128 + SIGTERM if the signal ended it).
int code_of_a_child_that_sends_itself_sigterm() {
  const auto pid = spawn({"/bin/sh", "-c", "kill -TERM $$; exit 0"}, {}, "test");
  const auto child = wait_any("test");
  EXPECT_EQ(child.pid, pid);
  return child.code;
}

TEST(Subprocess, AChildStartsWithSigtermAtItsDefaultOrIgnoredAsHere) {
  {
    SignalForwarder caught;  // a handler here: the child's SIGTERM is at its default
    EXPECT_EQ(code_of_a_child_that_sends_itself_sigterm(), 128 + SIGTERM);
  }
  const auto before = std::signal(SIGTERM, SIG_IGN);  // ignored here: ignored there too
  const int ignored = code_of_a_child_that_sends_itself_sigterm();
  std::signal(SIGTERM, before);
  EXPECT_EQ(ignored, 0);
}

TEST(Subprocess, OneSignalForwarderAtATime) {
  {
    SignalForwarder first;
    EXPECT_THROW(SignalForwarder second, std::logic_error);
    EXPECT_EQ(first.received(), 0);
  }
  SignalForwarder after_it;  // the first is gone
  EXPECT_EQ(after_it.received(), 0);
}

}  // namespace
}  // namespace ropelab

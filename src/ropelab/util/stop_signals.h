#pragma once
/// SIGINT and SIGTERM turned into a flag that a loop polls, so it can finish its current
/// step, save and exit cleanly.

#include <csignal>

namespace ropelab {

/// Installs the handlers for its lifetime, restoring the previous ones after.
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  /// The signal received (SIGINT, SIGTERM), 0 while none.
  int received() const;

 private:
  void (*old_int_)(int);
  void (*old_term_)(int);
};

}  // namespace ropelab

#include "ropelab/util/stop_signals.h"

namespace ropelab {

namespace {
volatile std::sig_atomic_t g_stop_signal = 0;
extern "C" void on_stop_signal(int signal) { g_stop_signal = signal; }
}  // namespace

StopSignals::StopSignals() {
  g_stop_signal = 0;
  old_int_ = std::signal(SIGINT, on_stop_signal);
  old_term_ = std::signal(SIGTERM, on_stop_signal);
}

StopSignals::~StopSignals() {
  std::signal(SIGINT, old_int_);
  std::signal(SIGTERM, old_term_);
}

int StopSignals::received() const { return g_stop_signal; }

}  // namespace ropelab

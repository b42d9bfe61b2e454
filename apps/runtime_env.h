#pragma once
// Corrects the CPU runtime environment before LibTorch does any work (see runtime_env.cpp).

namespace ropelab::apps {

/// Re-executes the program once with corrected OpenBLAS, OpenMP and malloc settings when
/// they are needed and not set by the user; returns normally otherwise.
/// ROPELAB_NO_REEXEC=1 disables it.
void ensure_runtime_env(char** argv);

}  // namespace ropelab::apps

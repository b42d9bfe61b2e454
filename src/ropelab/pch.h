// Precompiled header: LibTorch dominates compile time (~15 s per TU without it).
#pragma once
#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

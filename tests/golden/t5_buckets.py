#!/usr/bin/env python3
"""Golden T5 relative-position buckets, computed independently of ropelab in plain Python
from the definition in Raffel et al. 2020 / HF modeling_t5 (REFERENCE.md). Prints the C++
initialiser used in tests/position/position_encoder_test.cpp."""
import math


def bucket(relative, bidirectional, num_buckets, max_distance):
    b = 0
    if bidirectional:
        num_buckets //= 2
        if relative > 0:
            b += num_buckets
        n = abs(relative)
    else:
        n = max(-relative, 0)
    max_exact = num_buckets // 2
    if n < max_exact:
        return b + n
    large = max_exact + int(math.log(max(n, 1) / max_exact) / math.log(max_distance / max_exact)
                            * (num_buckets - max_exact))
    return b + min(large, num_buckets - 1)


RELATIVE = [0, 1, -1, 3, -3, 7, -7, 8, -8, 15, -15, 16, -16, 20, -20, 40, -40, 127, -127, 128, -128, 1000, -1000]
for bidirectional in (True, False):
    values = [bucket(r, bidirectional, 32, 128) for r in RELATIVE]
    print(("bidirectional" if bidirectional else "causal"), "{" + ", ".join(map(str, values)) + "}")

"""Golden values for length-extrapolation position encodings: ALiBi, xPos, RoPE scaling.

Written directly from the papers' formulas with the Python standard library only
(math, json); it is independent of ropelab's C++/LibTorch code and shares no code
with it (no numpy, no torch).

Papers:
  * ALiBi  -- O. Press, N. A. Smith, M. Lewis, 2022, "Train Short, Test Long:
              Attention with Linear Biases Enables Input Length Extrapolation",
              arXiv:2108.12409.  Head slopes m_h = start**h, h = 1..n,
              start = 2**(-8/n) for n a power of two; otherwise the p slopes of
              the closest power of two p < n, followed by the slopes for 2p heads
              at indices 0, 2, 4, ... until n slopes in total.
  * xPos   -- Y. Sun, L. Dong, B. Patra, S. Ma, S. Huang, A. Benhaim,
              V. Chaudhary, X. Song, F. Wei, 2022, "A Length-Extrapolatable
              Transformer", arXiv:2212.10554.  zeta_i = (2i/r + gamma)/(1 + gamma),
              query at position n scaled by zeta_i**(n/B), key by zeta_i**(-n/B).
              Positions are used as given (no centring).
  * RoPE   -- J. Su et al., 2021, "RoFormer", arXiv:2104.09864:
              inv_freq_i = base**(-2i/r), i = 0..r/2-1.
  * Linear position interpolation -- S. Chen, S. Wong, L. Chen, Y. Tian, 2023,
              "Extending Context Window of Large Language Models via Positional
              Interpolation", arXiv:2306.15595: positions divided by s.
  * NTK-aware, Dynamic NTK and YaRN -- B. Peng, J. Quesnelle, H. Fan,
              E. Shippole, 2023, "YaRN: Efficient Context Window Extension of
              Large Language Models", arXiv:2309.00071:
              NTK-aware base' = base * s**(r/(r-2));
              Dynamic NTK uses s = max(1, length/original_max) (configured factor unused);
              per token, the length is the one seen at the token: its position + 1,
              so the token at n is rotated with the base of s(n) = max(1, (n+1)/L);
              YaRN (paper's continuous form): lambda_i = 2*pi/theta_i,
              r_i = original_max/lambda_i, ramp gamma(r) = 0 (r < alpha),
              1 (r > beta), (r-alpha)/(beta-alpha) otherwise, alpha=1, beta=32;
              h_i = (1-gamma(r_i))*theta_i/s + gamma(r_i)*theta_i;
              attention factor sqrt(1/t) = 0.1*ln(s) + 1 applied to q and k each.
              YaRN as the authors' reference code computes it (ramp "reference"):
              the pair index turning n times over original_max,
              d(n) = r*ln(original_max/(2*pi*n)) / (2*ln(base)); low = max(floor(d(32)), 0),
              high = min(ceil(d(1)), r-1) (high += 0.001 when equal); the mask
              m_i = 1 - clamp((i-low)/(high-low), 0, 1) keeps theta_i where 1 and
              interpolates theta_i/s where 0; the attention factor is 1 for s <= 1.

Run:  python3 tests/golden/length_golden.py
It prints nothing and writes length_golden.json next to this script.
"""

import json
import math
import os

GENERATOR = ("tests/golden/length_golden.py: ALiBi, xPos and RoPE-scaling values "
             "from the papers' formulas")


# ---------------------------------------------------------------- ALiBi
def _is_power_of_two(n):
    return n >= 1 and (n & (n - 1)) == 0


def alibi_slopes(n_heads):
    if _is_power_of_two(n_heads):
        start = 2.0 ** (-8.0 / n_heads)
        return [start ** h for h in range(1, n_heads + 1)]
    p = 1
    while p * 2 < n_heads:
        p *= 2
    first = alibi_slopes(p)
    doubled = alibi_slopes(2 * p)
    extra = [doubled[j] for j in range(0, len(doubled), 2)][: n_heads - p]
    return first + extra


# ---------------------------------------------------------------- xPos
def xpos_zeta(rotary_dim, gamma):
    half = rotary_dim // 2
    return [(2.0 * i / rotary_dim + gamma) / (1.0 + gamma) for i in range(half)]


def xpos_block(rotary_dim=16, gamma=0.4, scale_base=512,
               positions=(0, 1, 7, 100, 1000, 4095)):
    zeta = xpos_zeta(rotary_dim, gamma)
    q = [[z ** (n / scale_base) for z in zeta] for n in positions]
    k = [[z ** (-n / scale_base) for z in zeta] for n in positions]
    return {"rotary_dim": rotary_dim, "gamma": gamma, "scale_base": scale_base,
            "positions": list(positions), "zeta": zeta,
            "query_scale": q, "key_scale": k}


# ---------------------------------------------------------------- RoPE scaling
def rope_inv_freq(rotary_dim, base):
    return [base ** (-2.0 * i / rotary_dim) for i in range(rotary_dim // 2)]


def ntk_base(base, s, rotary_dim):
    return base * s ** (rotary_dim / (rotary_dim - 2.0))


def yarn_ramp(r, alpha=1.0, beta=32.0):
    if r < alpha:
        return 0.0
    if r > beta:
        return 1.0
    return (r - alpha) / (beta - alpha)


def yarn_inv_freq(rotary_dim, base, s, original_max, alpha=1.0, beta=32.0):
    out = []
    for theta in rope_inv_freq(rotary_dim, base):
        wavelength = 2.0 * math.pi / theta
        rotations = original_max / wavelength
        g = yarn_ramp(rotations, alpha, beta)
        out.append((1.0 - g) * theta / s + g * theta)
    return out


def yarn_reference_inv_freq(rotary_dim, base, s, original_max, fast=32.0, slow=1.0):
    def turning_pair(n):
        return rotary_dim * math.log(original_max / (n * 2.0 * math.pi)) / (2.0 * math.log(base))
    low = max(math.floor(turning_pair(fast)), 0)
    high = min(math.ceil(turning_pair(slow)), rotary_dim - 1)
    if low == high:
        high += 0.001
    out = []
    for i, theta in enumerate(rope_inv_freq(rotary_dim, base)):
        mask = 1.0 - min(max((i - low) / (high - low), 0.0), 1.0)
        out.append(theta / s * (1.0 - mask) + theta * mask)
    return out


ROPE_POSITIONS = [0, 1, 5, 127, 128, 1000]


def rope_case(name, kind, factor, length, rotary_dim=16, base=10000.0,
              original_max=128, ramp="reference"):
    divisor = 1.0
    attention = 1.0
    if kind == "none":
        inv_freq = rope_inv_freq(rotary_dim, base)
    elif kind == "linear":
        inv_freq = rope_inv_freq(rotary_dim, base)
        divisor = factor
    elif kind == "ntk":
        inv_freq = rope_inv_freq(rotary_dim, ntk_base(base, factor, rotary_dim))
    elif kind == "dynamic_ntk":
        s = max(1.0, length / original_max)
        inv_freq = rope_inv_freq(rotary_dim, ntk_base(base, s, rotary_dim))
    elif kind == "yarn":
        if ramp == "continuous":
            inv_freq = yarn_inv_freq(rotary_dim, base, factor, original_max)
        else:
            inv_freq = yarn_reference_inv_freq(rotary_dim, base, factor, original_max)
        attention = 0.1 * math.log(factor) + 1.0 if factor > 1.0 else 1.0
    else:
        raise ValueError(kind)
    angles = [[(n / divisor) * f for f in inv_freq] for n in ROPE_POSITIONS]
    return {"name": name, "type": kind, "factor": factor,
            "rotary_dim": rotary_dim, "base": base,
            "original_max": original_max, "length": length, "ramp": ramp,
            "inv_freq": inv_freq, "position_divisor": divisor,
            "attention_factor": attention,
            "positions": list(ROPE_POSITIONS), "angles": angles}


def rope_cases():
    om = 128
    cases = [rope_case("none", "none", 1.0, om)]
    for kind in ("linear", "ntk", "yarn"):
        for f in (4.0, 8.0):
            cases.append(rope_case("%s_%d" % (kind, int(f)), kind, f, int(om * f)))
    # Dynamic NTK: the configured factor (4) is deliberately NOT used; the scale
    # comes from the length alone: s = max(1, length / original_max).
    cases.append(rope_case("dynamic_ntk_len100", "dynamic_ntk", 4.0, 100))
    cases.append(rope_case("dynamic_ntk_len512", "dynamic_ntk", 4.0, 512))
    cases.append(rope_case("yarn_8_r64", "yarn", 8.0, om * 8, rotary_dim=64))
    # the paper's continuous ramp, and the reference ramp at a 2048 training context,
    # where the high-frequency pairs are kept whole
    for f in (4.0, 8.0):
        cases.append(rope_case("yarn_continuous_%d" % int(f), "yarn", f, int(om * f), ramp="continuous"))
    cases.append(rope_case("yarn_continuous_8_r64", "yarn", 8.0, om * 8, rotary_dim=64, ramp="continuous"))
    cases.append(rope_case("yarn_16_r128_L2048", "yarn", 16.0, 2048 * 16, rotary_dim=128, original_max=2048))
    cases.append(rope_case("yarn_16_r128_L2048_continuous", "yarn", 16.0, 2048 * 16, rotary_dim=128,
                           original_max=2048, ramp="continuous"))
    return cases


def dynamic_ntk_token_case(rotary_dim, original_max, base=10000.0):
    """Each position n rotated with the NTK base at the length seen, n + 1."""
    positions = [0, 1, 5, original_max - 2, original_max - 1, original_max,
                 2 * original_max - 1, 1000, 4095]
    angles = []
    for n in positions:
        s = max(1.0, (n + 1.0) / original_max)
        freqs = rope_inv_freq(rotary_dim, ntk_base(base, s, rotary_dim))
        angles.append([n * f for f in freqs])
    return {"rotary_dim": rotary_dim, "original_max": original_max, "base": base,
            "positions": positions, "angles": angles}


def build():
    return {
        "generator": GENERATOR,
        "alibi_slopes": {str(n): alibi_slopes(n) for n in (4, 8, 12, 16)},
        "xpos": xpos_block(),
        "rope_scaling": rope_cases(),
        "dynamic_ntk_per_token": [dynamic_ntk_token_case(16, 128), dynamic_ntk_token_case(64, 128),
                                  dynamic_ntk_token_case(32, 512, base=500000.0)],
    }


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "length_golden.json"), "w") as fh:
        json.dump(build(), fh, indent=1)
        fh.write("\n")


if __name__ == "__main__":
    main()

// Tutorial B, "Transformer": the method generate_mask(src, tgt), as a free function.
//
//   src_mask = (src != 0).unsqueeze(1).unsqueeze(2)                  (B, 1, 1, Ls)
//   tgt_mask = (tgt != 0).unsqueeze(1).unsqueeze(3) & nopeak_mask     (B, 1, Lt, Lt)
//   nopeak_mask[i, j] = j <= i                                        (1 - triu(ones, 1))
// Both bool, True = keep (B's convention; A and C use True = masked). Id 0 is PAD.
//
// Note what tgt_mask masks: `(tgt != 0)` is unsqueezed at dim 3, so it varies along the
// *query* axis: a padded position may not look at anything (its whole row is False), while
// real positions may still look at padded keys that precede them. With trailing padding
// (the only kind B's data has) no real position precedes a pad, so no real query sees a
// pad key; the padded rows get uniform weights through the finite -1e9 fill, and the loss's
// ignore_index=0 drops them. Kept exactly as written (docs/tutorial_b.md).
#pragma once

#include <xtgrad/autograd/array.hpp>

namespace xtgrad::nn::tutorial_b {

struct Masks {
    Mask src_mask;  // (B, 1, 1, Ls)
    Mask tgt_mask;  // (B, 1, Lt, Lt)
};

// src (B, Ls), tgt (B, Lt) token ids, 0 = PAD.
Masks generate_mask(const Ids& src, const Ids& tgt);

}  // namespace xtgrad::nn::tutorial_b

// The position ids C's Encoder and Decoder look up in their sinusoid tables.
//
// The tutorial hard-codes them for its one 7-word sentence pair:
//   Encoder: pos_emb(LongTensor([[1,2,3,4,5,6,0]]))   the 7th word gets position 0, the table's
//                                                      row of position 0, as if it were PAD
//   Decoder: pos_emb(LongTensor([[7,1,2,3,4,5,6]]))   the start token 'S' gets position 7
// and they only fit batch 1 and length 7. The intent is 1..len:
//   sequential: position t+1 at a real token t (t = 0 .. L-1), 0 at PAD (id 0)
// (row 0 of C's table is [0,1,0,1,...], not zeros, so a PAD position still adds it; its key
// is masked, docs/fixtures.md, section Errata and variants). `literal` reproduces the tutorial's rows generalised
// to length L, for every batch row: [1, 2, ..., L-1, 0] (encoder) and [L, 1, ..., L-1]
// (decoder), kept for docs/tutorial_c.md, which shows what they do.
#pragma once

#include <xtgrad/autograd/array.hpp>

namespace xtgrad::nn::tutorial_c {

enum class PositionScheme { sequential, literal };
enum class Side { encoder, decoder };

// seq (B, L) ids -> (B, L) positions.
Ids positions(const Ids& seq, PositionScheme scheme = PositionScheme::sequential, Side side = Side::encoder);

}  // namespace xtgrad::nn::tutorial_c

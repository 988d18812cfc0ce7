# Lesson 7 in gdb (docs/learn/07_find_the_erratum.md): the gradient at the mask of the first encoder layer, lesson vocabularies.
set breakpoint pending on
set confirm off
set environment XTGRAD_BREAK_OP=MaskedFillBackward
set environment XTGRAD_BREAK_MODULE=encoder.layers.0.enc_self_attn
break xtgrad::debug::matched_node
run --tutorial-settings --epochs 1 --d-model 64 --d-ff 128 --d-k 16 --d-v 16 --layers 2 --heads 4 --out /tmp/wg-lesson
print grad_out

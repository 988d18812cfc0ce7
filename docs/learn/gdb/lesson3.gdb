# Lesson 3 in gdb (docs/learn/03_layer_norm.md): the unbiased std's node in the reference composition.
set breakpoint pending on
set confirm off
set environment XTGRAD_BREAK_OP=StdBackward
break xtgrad::debug::matched_node
run -ts=03_layer_norm_a -tc=*dgamma*
print grad_out
xt-node

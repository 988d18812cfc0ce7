# Lesson 5 in gdb (docs/learn/05_mlp_spiral.md): fc1's node on the spiral.
set breakpoint pending on
set confirm off
set environment XTGRAD_BREAK_MODULE=fc1
break xtgrad::debug::matched_node
run --epochs 1
print grad_out
xt-node

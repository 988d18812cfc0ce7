# Lesson 1 in gdb (docs/learn/01_first_op.md): your op's node, the gradient it receives and what it saved.
set breakpoint pending on
set confirm off
set environment XTGRAD_BREAK_OP=SigmoidBackward
break xtgrad::debug::matched_node
run -ts=01_sigmoid -tc=*backward*
print grad_out
xt-node

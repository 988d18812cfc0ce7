# Lesson 4 in gdb (docs/learn/04_attention.md): the gradient arriving at the mask's node.
set breakpoint pending on
set confirm off
set environment XTGRAD_BREAK_OP=MaskedFillBackward
break xtgrad::debug::matched_node
run -ts=04_attention_backward -tc=*causal*
print grad_out

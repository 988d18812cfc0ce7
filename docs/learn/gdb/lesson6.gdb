# Lesson 6 in gdb (docs/learn/06_multi_head_attention.md): the in-projections' gradients, yours then the module's.
set breakpoint pending on
set confirm off
set environment XTGRAD_BREAK_OP=LinearBackward
break xtgrad::debug::matched_node
run -ts=06_multi_head_attention -tc=*gradients*
print grad_out
continue
continue
continue
print grad_out
continue
continue
continue
continue
print grad_out

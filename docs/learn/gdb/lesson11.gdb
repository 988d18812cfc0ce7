# Lesson 11 in gdb (docs/learn/11_build_the_engine.md): the engine's loop, one node per stop.
set breakpoint pending on
set confirm off
break 11_engine/solution.cpp:46
run -ts=11_engine -tc=*bit*
print t.grad_fn->op_
print g
xt-node t
continue
print t.grad_fn->op_
continue
print t.grad_fn->op_

# Lesson 9 in gdb (docs/learn/09_second_derivatives.md): your backward in ops, called by grad(create_graph).
set breakpoint pending on
set confirm off
break ex09::softmax_backward_in_ops
run -ts=09_softmax_double_backward -tc=*runs*
xt-node self
print g

# Lesson 0 in gdb (docs/learn/00_scalar.md): the engine's first two nodes of L = a*b + c.
# The doc checker runs it (the block of that page); type the same at the (gdb) prompt.
set breakpoint pending on
set confirm off
break xtgrad::debug::before_node
run -tc=learn*lesson*0*
print node
print grad_out
continue
print node
print grad_out

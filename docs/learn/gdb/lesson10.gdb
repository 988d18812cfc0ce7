# Lesson 10 in gdb (docs/learn/10_forward_mode.md): one dual number through one rule.
set breakpoint pending on
set confirm off
break ex10::tanh
run -ts=10_dual_numbers -tc=*rule*
print a
finish
